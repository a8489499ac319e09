/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/libreuse.c - built twice, as libreuse-alpha.so (REUSE_NAME
 * alpha) and libreuse-gamma.so (gamma): names of one length, so that the
 * two have the same layout and a call from each of their functions
 * returns to the same offset. dl-reuse loads one where the other was.
 */
#include <stdlib.h>

#define CAT(a, b) a##b
#define NAMED(n, f) CAT(n, f)
#define ALLOC NAMED(REUSE_NAME, _alloc)

void *ALLOC(size_t n);

__attribute__((noipa)) void *ALLOC(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : "+r"(p));
	return p;
}

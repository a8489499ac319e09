/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/deep-sites.c - sites that only their deep callers tell
 * apart, for the text report's stack lines (tests/test-report.sh): the
 * same malloc in deep_f6, reached through deep_f5 .. deep_f1 from
 *   deep_a   1000 blocks of 16 bytes (16000 B)
 *   deep_b   1000 blocks of 8 bytes (8000 B)
 * so that the two sites share their naming frame and five callers and
 * differ at the sixth; and main's own malloc of 4000 B, shallow. Every
 * block is kept (leaks). Built -O2 -g: chain.h keeps each frame real.
 */
#include <stdlib.h>

#include "chain.h"

static void *volatile sink;
static size_t size;

int deep_f1(int x);
int deep_f2(int x);
int deep_f3(int x);
int deep_f4(int x);
int deep_f5(int x);
int deep_f6(int x);
int deep_a(int x);
int deep_b(int x);

CHAIN_FN int deep_f6(int x)
{
	sink = malloc(size);
	return x;
}

CHAIN_F1_TO_F5(deep_)

CHAIN_FN int deep_a(int x)
{
	int r = deep_f1(x);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

CHAIN_FN int deep_b(int x)
{
	int r = deep_f1(x);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

int main(void)
{
	int i;

	for (i = 0; i < 1000; i++) {
		size = 16;
		deep_a(i);
		size = 8;
		deep_b(i);
	}
	sink = malloc(4000);
	return 0;
}

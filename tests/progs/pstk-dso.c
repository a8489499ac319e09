/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/pstk-dso.c - the library tests/progs/pstk-chain dlopens and
 * calls at once: pstk_dso_f1 -> f2 -> f3 allocates PSTK_DSO_SIZE bytes
 * PSTK_DSO_COUNT times. Built -O2 -fomit-frame-pointer: its frames must
 * come whole from the mappings sent after the dlopen.
 */
#include <stdlib.h>

#define CHAIN_FN __attribute__((noipa)) __attribute__((visibility("default")))
#define PSTK_DSO_SIZE 23456
#define PSTK_DSO_COUNT 5

static void *volatile sink;

int pstk_dso_f1(int x);
int pstk_dso_f2(int x);
int pstk_dso_f3(int x);

CHAIN_FN int pstk_dso_f3(int x)
{
	int i;

	for (i = 0; i < PSTK_DSO_COUNT; i++) {
		sink = malloc(PSTK_DSO_SIZE);
		free(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int pstk_dso_f2(int x)
{
	int r = pstk_dso_f3(x + 1);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

CHAIN_FN int pstk_dso_f1(int x)
{
	int r = pstk_dso_f2(x + 1);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

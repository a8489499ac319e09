/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/flame-shape.c - a flamegraph of known shape for the html
 * and svg reports (tests/test-report-html.sh): from main,
 *   shape_wide     16 x 64 KiB        (1 MiB, most of the graph)
 *   shape_narrow   64 KiB             (1/17 of the graph)
 *   shape_deep     a recursion SHAPE_DEPTH deep, then 1 byte: far
 *                  narrower than a pixel, so not drawn, and it must not
 *                  make the graph taller
 * each block freed at once. Exits 0.
 */
#include <stdlib.h>

#include "chain.h"

#define SHAPE_DEPTH 60

static void *volatile sink;

int shape_wide(int x);
int shape_narrow(int x);
int shape_deep(int n);

CHAIN_FN int shape_wide(int x)
{
	int i;

	for (i = 0; i < 16; i++) {
		sink = malloc(64 << 10);
		free(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int shape_narrow(int x)
{
	sink = malloc(64 << 10);
	free(sink);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int shape_deep(int n)
{
	int r;

	if (n == 0) {
		sink = malloc(1);
		free(sink);
		return 0;
	}
	r = shape_deep(n - 1); /* no tail call: every level is a frame */
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

int main(void)
{
	int r = shape_wide(0) + shape_narrow(0) + shape_deep(SHAPE_DEPTH);

	__asm__ volatile("" : "+r"(r)); /* no tail calls: main stays */
	return r == 2 + SHAPE_DEPTH ? 0 : 1;
}

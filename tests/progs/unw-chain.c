/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/unw-chain.c - main -> unw_f1 -> ... -> unw_f6 -> malloc(4242),
 * built -O2 -fomit-frame-pointer (PIE, non-PIE and static): the eBPF
 * source's stack of that allocation must name the whole chain, from
 * _start down to unw_f6 (tests/test-unwind.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "chain.h"

int unw_f1(int x);
int unw_f2(int x);
int unw_f3(int x);
int unw_f4(int x);
int unw_f5(int x);
int unw_f6(int x);

static void *volatile sink;

CHAIN_FN int unw_f6(int x)
{
	sink = malloc(4242);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(unw_)

int main(void)
{
	int r = unw_f1(0);

	free(sink);
	printf("%d\n", r);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/unw-dso.c - a library tests/progs/unw-dlopen loads with
 * dlopen and calls at once: unw_dso_f1 -> ... -> unw_dso_f6 ->
 * malloc(4244), built -O2 -fomit-frame-pointer. Its table must be there
 * before dlopen returns (tests/test-unwind.c).
 */
#include <stdlib.h>

#include "chain.h"

int unw_dso_f1(int x);
int unw_dso_f2(int x);
int unw_dso_f3(int x);
int unw_dso_f4(int x);
int unw_dso_f5(int x);
int unw_dso_f6(int x);

static void *volatile sink;

CHAIN_FN int unw_dso_f6(int x)
{
	sink = malloc(4244);
	free(sink);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(unw_dso_)

// SPDX-License-Identifier: MIT
/*
 * tests/progs/unw-chain-cxx.cc - main -> unw_f1 -> ... -> unw_f6 -> new
 * char[4243] (libstdc++'s operator new[] -> operator new -> malloc), built
 * -O2 -fomit-frame-pointer: the stack must name the whole chain, from
 * _start down to unw_f6 (tests/test-unwind.c).
 */
#include <cstdio>

#include "chain.h"

extern "C" {
int unw_f1(int x);
int unw_f2(int x);
int unw_f3(int x);
int unw_f4(int x);
int unw_f5(int x);
int unw_f6(int x);
}

static char *volatile sink;

extern "C" {
CHAIN_FN int unw_f6(int x)
{
	sink = new char[4243];
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(unw_)
}

int main()
{
	int r = unw_f1(0);

	delete[] sink;
	std::printf("%d\n", r);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * tests/progs/pstk-chain-cxx.cc - the C++ chain under the preload source
 * (tests/test-preload-stacks.c): six functions deep, the innermost calls
 * libstdc++'s ::operator new (interposed) PSTK_COUNT times. Built -O2
 * -fomit-frame-pointer.
 */
#include <new>

#include "chain.h"

#define PSTK_SIZE 12346
#define PSTK_COUNT 9

static void *volatile sink;

namespace pstk {

CHAIN_FN int f6(int x)
{
	for (int i = 0; i < PSTK_COUNT; i++) {
		sink = ::operator new(PSTK_SIZE);
		::operator delete(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5()

} // namespace pstk

int main()
{
	pstk::f1(0);
	return 0;
}

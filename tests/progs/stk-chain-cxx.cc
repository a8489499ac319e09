/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-chain-cxx.cc - the C++ chain: six functions deep, the
 * innermost calls ::operator new, i.e. libstdc++'s (Debian builds it
 * without frame pointers), which calls the interposed malloc
 * (stk-hook.h). The stack must go from operator new through the chain
 * down to main. Built -O2 -fomit-frame-pointer.
 */
#include <new>

#include "stk-hook.h"

#define CHAIN_FN __attribute__((noipa)) __attribute__((visibility("default")))

static void *volatile sink;

namespace stk {

CHAIN_FN int f6(int x)
{
	sink = ::operator new(STK_MAGIC);
	::operator delete(sink);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

#define STEP(name, next)                          \
	CHAIN_FN int name(int x)                  \
	{                                         \
		int r = next(x + 1);              \
		__asm__ volatile("" : "+r"(r));   \
		return r + 1;                     \
	}
STEP(f5, f6)
STEP(f4, f5)
STEP(f3, f4)
STEP(f2, f3)
STEP(f1, f2)

} // namespace stk

int main()
{
	stk::f1(0);
	stk_print("main");
	stk_summary();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-chain-cxx.cc - the C++ chain: six functions deep, the
 * innermost calls ::operator new, i.e. libstdc++'s (Debian builds it
 * without frame pointers), which calls the interposed malloc
 * (stk-hook.h). The stack must go from operator new through the chain
 * down to main. Built -O2 -fomit-frame-pointer.
 */
#include <new>

#include "chain.h"
#include "stk-hook.h"

static void *volatile sink;

namespace stk {

CHAIN_FN int f6(int x)
{
	sink = ::operator new(STK_MAGIC);
	::operator delete(sink);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5()

} // namespace stk

int main()
{
	stk::f1(0);
	stk_print("main");
	stk_summary();
	return 0;
}

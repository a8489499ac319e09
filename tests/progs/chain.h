/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/chain.h - the six-deep call chain of the stack tests'
 * programs (stk-chain*, pstk-chain*), built -O2 -fomit-frame-pointer so
 * that whole stacks must come from .eh_frame. The program defines
 * P##f6, the innermost, which allocates; CHAIN_F1_TO_F5(P) defines
 * P##f5 .. P##f1, each calling the next and using its result afterwards,
 * so that no call is a tail call and nothing is inlined or cloned
 * (noipa): every function is a real frame the stack must name.
 */
#ifndef MT_TEST_CHAIN_H
#define MT_TEST_CHAIN_H

#define CHAIN_FN __attribute__((noipa)) __attribute__((visibility("default")))

#define CHAIN_STEP(name, next)                    \
	CHAIN_FN int name(int x)                  \
	{                                         \
		int r = next(x + 1);              \
		__asm__ volatile("" : "+r"(r));   \
		return r + 1;                     \
	}

#define CHAIN_F1_TO_F5(P)                 \
	CHAIN_STEP(P##f5, P##f6)          \
	CHAIN_STEP(P##f4, P##f5)          \
	CHAIN_STEP(P##f3, P##f4)          \
	CHAIN_STEP(P##f2, P##f3)          \
	CHAIN_STEP(P##f1, P##f2)

#endif

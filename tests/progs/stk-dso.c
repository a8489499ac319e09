/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-dso.c - a library tests/test-inproc-stacks.c dlopens:
 * its executable mapping must appear in the MTKM records written after
 * the dlopen, and a stack captured inside it must name stk_dso_capture.
 */
#include <stddef.h>
#include <stdint.h>

typedef int (*stk_unwind_fn)(uint64_t *frames, int max, int skip,
			     int *deeper);

int stk_dso_capture(stk_unwind_fn unwind, uint64_t *frames, int max);

static __attribute__((noipa)) int inner(stk_unwind_fn unwind,
					uint64_t *frames, int max)
{
	int n = unwind(frames, max, 0, NULL);

	__asm__ volatile("" : "+r"(n));
	return n;
}

/* frames[0] is in this function: inner's return address */
__attribute__((noipa)) int stk_dso_capture(stk_unwind_fn unwind,
					   uint64_t *frames, int max)
{
	int n = inner(unwind, frames, max);

	__asm__ volatile("" : "+r"(n));
	return n;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-bench.c - what one stack capture costs in-process, for
 * a chain ten functions deep (built -O2 -fomit-frame-pointer, so every
 * frame comes from .eh_frame), with each of libunwind's two ways:
 *
 *   unw_backtrace   (what mtpl_unwind uses: libunwind's per-thread frame
 *                    cache, unw_step only for frames it cannot describe)
 *   unw_step loop   (unw_init_local, then unw_step / unw_get_reg)
 *
 * cold: the first capture of a stack whose ten chain functions were never
 * unwound before (each of the CHAINS chains is new code), i.e. the price
 * of a new stack; warm: the same stack again and again, the common case.
 * Also the first capture of the process (libunwind's set-up) and the
 * stack table's lookup of a known stack.
 *
 *   build/tests/progs/stk-bench [warm-iterations]
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stack-table.h"
#include "stack-unwind.h"

#define NOIPA __attribute__((noipa))
#define MAXF 64
#define CHAINS 63

typedef int (*capture_fn)(uint64_t *frames);

static capture_fn capture;
static uint64_t frames[MAXF];
static int nframes;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static NOIPA int cap_backtrace(uint64_t *f)
{
	return mtpl_unwind(f, MAXF, 0, NULL);
}

static NOIPA int cap_step(uint64_t *f)
{
	unw_context_t uc;
	unw_cursor_t cur;
	unw_word_t ip;
	int n = 0;

	unw_getcontext(&uc);
	if (unw_init_local(&cur, &uc) < 0) {
		return 0;
	}
	while (n < MAXF && unw_step(&cur) > 0) {
		unw_get_reg(&cur, UNW_REG_IP, &ip);
		f[n++] = ip;
	}
	return n;
}

/* a chain: f10 captures, each fN calls fN+1 and uses its result */
#define FN(k, i, next)                                   \
	static NOIPA int c##k##_##i(int x)               \
	{                                                \
		int r = next(x + i);                     \
		__asm__ volatile("" : "+r"(r));          \
		return r + 1;                            \
	}
#define CHAIN(k)                                         \
	static NOIPA int c##k##_10(int x)                \
	{                                                \
		nframes = capture(frames);               \
		__asm__ volatile("" : "+r"(x));          \
		return x + 1;                            \
	}                                                \
	FN(k, 9, c##k##_10) FN(k, 8, c##k##_9) FN(k, 7, c##k##_8)     \
	FN(k, 6, c##k##_7) FN(k, 5, c##k##_6) FN(k, 4, c##k##_5)      \
	FN(k, 3, c##k##_4) FN(k, 2, c##k##_3) FN(k, 1, c##k##_2)
#define CHAIN8(a) CHAIN(a##0) CHAIN(a##1) CHAIN(a##2) CHAIN(a##3) \
	CHAIN(a##4) CHAIN(a##5) CHAIN(a##6) CHAIN(a##7)
#define ENTRY8(a) c##a##0_1, c##a##1_1, c##a##2_1, c##a##3_1, \
	c##a##4_1, c##a##5_1, c##a##6_1, c##a##7_1,

CHAIN8(1) CHAIN8(2) CHAIN8(3) CHAIN8(4) CHAIN8(5) CHAIN8(6) CHAIN8(7)
CHAIN8(8) CHAIN8(9) CHAIN8(10) CHAIN8(11) CHAIN8(12) CHAIN8(13)
CHAIN8(14) CHAIN8(15) CHAIN8(16)

static int (*const entries[128])(int) = {
	ENTRY8(1) ENTRY8(2) ENTRY8(3) ENTRY8(4) ENTRY8(5) ENTRY8(6)
	ENTRY8(7) ENTRY8(8) ENTRY8(9) ENTRY8(10) ENTRY8(11) ENTRY8(12)
	ENTRY8(13) ENTRY8(14) ENTRY8(15) ENTRY8(16)
};

/* chains [first, first + CHAINS) are new code for this method */
static void measure(const char *name, capture_fn fn, int first, long warm)
{
	int64_t t0, cold = 0;
	int i, depth;
	long j;

	capture = fn;
	for (i = first; i < first + CHAINS; i++) {
		t0 = now_ns();
		entries[i](0);
		cold += now_ns() - t0;
	}
	depth = nframes;
	t0 = now_ns();
	for (j = 0; j < warm; j++) {
		entries[first](0);
	}
	printf("%-14s cold %6.2f us/capture (%d new stacks), warm %6.3f us/capture (%ld), %d frames\n",
	       name, cold / 1e3 / CHAINS, CHAINS,
	       (now_ns() - t0) / 1e3 / (double)warm, warm, depth);
}

int main(int argc, char **argv)
{
	long warm = argc > 1 ? atol(argv[1]) : 200000;
	struct mtpl_stack_table t;
	struct mtpl_stack_ref ref;
	uint32_t ids = 0;
	int64_t t0;
	long j;

	/* the first capture of the process: libunwind sets itself up */
	capture = cap_backtrace;
	t0 = now_ns();
	entries[127](0);
	printf("first capture of the process: %.1f us (libunwind's set-up, one chain)\n",
	       (now_ns() - t0) / 1e3);
	/* chain 127 is used now: the cold rounds use 0 .. 125 */
	measure("unw_backtrace", cap_backtrace, 0, warm);
	measure("unw_step loop", cap_step, CHAINS, warm / 10);

	if (mtpl_stack_table_init(&t, 20, 256 << 20, &ids)) {
		return 99;
	}
	capture = cap_backtrace;
	entries[0](0);
	mtpl_stack_intern(&t, frames, (uint32_t)nframes, &ref);
	mtpl_stack_publish(&t, &ref);
	t0 = now_ns();
	for (j = 0; j < warm; j++) {
		mtpl_stack_intern(&t, frames, (uint32_t)nframes, &ref);
	}
	printf("intern (known stack of %d frames): %.1f ns\n", nframes,
	       (now_ns() - t0) / (double)warm);
	mtpl_stack_table_destroy(&t);
	return 0;
}

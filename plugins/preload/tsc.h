/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/tsc.h - event timestamps as raw TSC counts, turned into
 * CLOCK_MONOTONIC nanoseconds by the consumer (source arg clock=, tsc.c).
 *
 * Reading the clock through the vDSO costs the traced thread about 30 ns
 * an event here, a third of the interposer's cost; rdtsc costs a few. The
 * kernel's CLOCK_MONOTONIC is itself the TSC scaled piecewise-linearly
 * (the scale moves a little at each tick for NTP), so the consumer keeps
 * pairs (TSC, CLOCK_MONOTONIC) sampled as it goes and interpolates
 * between the two that bracket an event: the result is the clock the
 * event would have read, to within the pairs' own sampling error (tens of
 * ns), so preload and eBPF timestamps (bpf_ktime_get_ns) still merge and
 * compare. Used only where the kernel itself trusts the TSC: clocksource
 * tsc, constant and nonstop (x86-64).
 */
#ifndef MT_PRELOAD_TSC_H
#define MT_PRELOAD_TSC_H

#include <stdint.h>

static inline uint64_t pl_rdtsc(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#else
	return 0; /* pl_tsc_usable() is 0: never called */
#endif
}

/* 2^14 pairs: at least 0.16 s of history, as the consumer samples at
 * most once per 10 us (see pl_tsc_ns) */
#define PL_TSC_POINTS 16384u

struct pl_tsc_point {
	uint64_t tsc, ns;
	uint64_t mult; /* ns per tick << 32 up to the next pair */
};

struct pl_tsc {
	struct pl_tsc_point pt[PL_TSC_POINTS]; /* a ring, in tsc order */
	uint64_t count;     /* pairs ever kept: the newest is count - 1 */
	uint64_t seg;       /* the segment last used: pairs seg, seg + 1 */
	uint64_t long_mult; /* ns per tick since the first pair, << 32 */
	uint64_t min_gap;   /* ticks in 10 us */
	uint64_t ext_tsc;   /* the furthest count past the newest pair */
	uint64_t samples;   /* pairs sampled (kept or not) */
};

/* 1 when the TSC can stand for CLOCK_MONOTONIC here; else 0, with why in
 * *why (a static string). */
int pl_tsc_usable(const char **why);

/* Two pairs a millisecond apart: the first scale. */
void pl_tsc_init(struct pl_tsc *c);

/* A TSC count taken at or before now (an event already written) as
 * CLOCK_MONOTONIC ns; monotonic in tsc while tsc is within the history. */
uint64_t pl_tsc_ns(struct pl_tsc *c, uint64_t tsc);

#endif /* MT_PRELOAD_TSC_H */

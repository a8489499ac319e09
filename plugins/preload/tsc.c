/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/tsc.c - raw TSC counts to CLOCK_MONOTONIC ns (tsc.h).
 *
 * A pair is (TSC, CLOCK_MONOTONIC) read back to back: rdtsc, the clock,
 * rdtsc, kept as the middle of the two counts when they are close (an
 * interrupt in between spoils it: read again). The pairs form a
 * piecewise-linear map, extended at its newest end only, so a count once
 * inside the history always maps to the same ns. A count past the newest
 * pair by 10 us or more (an event written since) makes a new pair; within
 * 10 us of the newest pair the count is carried on at the long-run scale,
 * and the furthest count so carried becomes a pair before the next
 * sampled one, so that no count ever changes its ns. A
 * count older than the whole history (a thread that waited very long
 * between its timestamp and its write) is carried back from the oldest
 * pair the same way (that one may move by a few ns as the history moves).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tsc.h"

/* a pair whose two counts are further apart was interrupted */
#define PAIR_MAX_TICKS 20000

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tightest of a few reads; 0 when all were interrupted. */
static int read_pair(struct pl_tsc_point *p)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 4; i++) {
		uint64_t t1 = pl_rdtsc(), ns = mono_ns(), t2 = pl_rdtsc();

		if (t2 >= t1 && t2 - t1 < best) {
			best = t2 - t1;
			p->tsc = t1 + (t2 - t1) / 2;
			p->ns = ns;
			if (best < PAIR_MAX_TICKS / 4) {
				break;
			}
		}
	}
	return best < PAIR_MAX_TICKS;
}

static struct pl_tsc_point *at(struct pl_tsc *c, uint64_t i)
{
	return &c->pt[i & (PL_TSC_POINTS - 1)];
}

/* ns per tick << 32 from a to b (b after a in both) */
static uint64_t mult_of(const struct pl_tsc_point *a,
			const struct pl_tsc_point *b)
{
	return (uint64_t)(((unsigned __int128)(b->ns - a->ns) << 32) /
			  (b->tsc - a->tsc));
}

static uint64_t scale(uint64_t ticks, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

/* p after the newest pair; mult: the scale between them, 0 to compute */
static void keep(struct pl_tsc *c, const struct pl_tsc_point *p,
		 uint64_t mult)
{
	if (c->count) {
		struct pl_tsc_point *last = at(c, c->count - 1);

		last->mult = mult ? mult : mult_of(last, p);
	}
	*at(c, c->count) = *p;
	at(c, c->count)->mult = 0;
	c->count++;
	if (c->count >= 2) {
		/* the long-run scale: from the oldest pair still kept */
		uint64_t first = c->count > PL_TSC_POINTS ?
					 c->count - PL_TSC_POINTS :
					 0;

		c->long_mult = mult_of(at(c, first), at(c, c->count - 1));
	}
}

/* A new pair, kept when it is after the newest in both counts. Counts
 * carried on past the newest pair keep their ns: the furthest of them
 * becomes a pair first. */
static void sample(struct pl_tsc *c)
{
	struct pl_tsc_point p, e, *last = at(c, c->count - 1);

	c->samples++;
	if (!read_pair(&p)) {
		return;
	}
	if (c->ext_tsc > last->tsc) {
		e.tsc = c->ext_tsc;
		e.ns = last->ns + scale(e.tsc - last->tsc, c->long_mult);
		if (p.tsc <= e.tsc || p.ns <= e.ns) {
			return; /* the line ran ahead: go on along it */
		}
		/* the very line those counts were carried on */
		keep(c, &e, c->long_mult);
		c->ext_tsc = 0;
		last = at(c, c->count - 1);
	}
	if (p.tsc > last->tsc && p.ns > last->ns) {
		keep(c, &p, 0);
	}
}

void pl_tsc_init(struct pl_tsc *c)
{
	struct pl_tsc_point p;
	struct timespec ms = { 0, 1000000 };
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < 2; i++) {
		while (!read_pair(&p) ||
		       (c->count && (p.tsc <= at(c, 0)->tsc ||
				     p.ns <= at(c, 0)->ns))) {
			nanosleep(&ms, NULL);
		}
		keep(c, &p, 0);
		if (!i) {
			nanosleep(&ms, NULL);
		}
	}
	/* ticks in 10 us, from the first scale */
	c->min_gap = (uint64_t)((10000ull << 32) / (c->long_mult ? c->long_mult : 1));
	c->seg = 0;
}

uint64_t pl_tsc_ns(struct pl_tsc *c, uint64_t t)
{
	uint64_t first = c->count > PL_TSC_POINTS ? c->count - PL_TSC_POINTS : 0;
	uint64_t lo, hi;
	struct pl_tsc_point *a, *newest = at(c, c->count - 1);

	if (t >= newest->tsc) {
		/* t itself says when a pair is due (the clock is at least
		 * that far): no rdtsc per count while the reader keeps up */
		if (t - newest->tsc >= c->min_gap) {
			sample(c);
			newest = at(c, c->count - 1);
			first = c->count > PL_TSC_POINTS ?
					c->count - PL_TSC_POINTS : 0;
		}
		if (t >= newest->tsc) {
			/* within 10 us of the newest pair (or a count from a
			 * CPU ahead of this one's): carried on */
			if (t > c->ext_tsc) {
				c->ext_tsc = t;
			}
			return newest->ns + scale(t - newest->tsc, c->long_mult);
		}
	}
	a = at(c, first);
	if (t < a->tsc) {
		uint64_t back = scale(a->tsc - t, c->long_mult);

		return back < a->ns ? a->ns - back : 0;
	}
	/* the segment [seg, seg + 1] holds t: mostly the last one used */
	if (c->seg < first || c->seg + 1 >= c->count ||
	    t < at(c, c->seg)->tsc || t >= at(c, c->seg + 1)->tsc) {
		lo = first;          /* at(lo)->tsc <= t */
		hi = c->count - 1;   /* at(hi)->tsc > t */
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;

			if (at(c, mid)->tsc <= t) {
				lo = mid;
			} else {
				hi = mid;
			}
		}
		c->seg = lo;
	}
	a = at(c, c->seg);
	return a->ns + scale(t - a->tsc, a->mult);
}

/* "tsc\n" in the file */
static int clocksource_is_tsc(void)
{
	char buf[32];
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			"re");
	int yes = 0;

	if (f) {
		yes = fgets(buf, sizeof(buf), f) && !strcmp(buf, "tsc\n");
		fclose(f);
	}
	return yes;
}

/* both words among the flags of /proc/cpuinfo's first processor */
static int cpu_flags(const char *a, const char *b)
{
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "re");
	int found = 0;

	if (!f) {
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5)) {
			size_t la = strlen(a), lb = strlen(b);
			const char *p;
			int fa = 0, fb = 0;

			for (p = strchr(line, ':'); p && *p; p++) {
				if (*p != ' ') {
					continue;
				}
				fa |= !strncmp(p + 1, a, la) &&
				      (p[1 + la] == ' ' || p[1 + la] == '\n');
				fb |= !strncmp(p + 1, b, lb) &&
				      (p[1 + lb] == ' ' || p[1 + lb] == '\n');
			}
			found = fa && fb;
			break;
		}
	}
	fclose(f);
	return found;
}

int pl_tsc_usable(const char **why)
{
#if defined(__x86_64__)
	if (!clocksource_is_tsc()) {
		*why = "the kernel's clocksource is not tsc";
		return 0;
	}
	if (!cpu_flags("constant_tsc", "nonstop_tsc")) {
		*why = "the CPU's TSC is not constant and nonstop";
		return 0;
	}
	*why = NULL;
	return 1;
#else
	*why = "TSC timestamps are for x86-64 only";
	return 0;
#endif
}

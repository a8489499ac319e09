/* SPDX-License-Identifier: MIT */
/*
 * --sample-bytes N (sample.c): which allocations the interposer records.
 *
 * Allocated bytes are a line on which sample points fall as a Poisson
 * process of mean distance N (each thread draws its distances, as Go's
 * runtime and tcmalloc do): an allocation is recorded when a point falls
 * in its bytes, so one of s bytes with probability 1 - exp(-s/N), and the
 * report (report.c) unbiases it by that (Go's scaling: it needs no weight
 * in the event, only s and N, from the file's MTKR payload). The free of
 * a recorded block is recorded; the free of any other costs one byte's
 * load from a counting filter of the recorded blocks (and, when the
 * filter cannot say no, a look-up in their table), without a lock.
 */
#ifndef MT_PRELOAD_SAMPLE_H
#define MT_PRELOAD_SAMPLE_H

#include <stdint.h>

#include "shm.h"

/* the mean distance between samples, bytes; 0: every allocation is
 * recorded (the default; nothing below is called) */
extern uint64_t pl_sample_mean;

/* At attach: the parameters from the header, the table mapped. 0, or
 * -ENOMEM (sampling asked for, no table: nothing is to be recorded). */
int pl_sample_init(struct pl_shm *shm);

/* Note a recorded block; 0 when the table has no room for it (then it
 * is not recorded: counted in the header's sample_lost). */
int pl_sample_keep(uint64_t addr);

/* 1: addr was a recorded block, and is forgotten now. */
int pl_sample_drop(uint64_t addr);

/* The hot half, inlined in the hooks (sample.c says how it works). */
#define PL_SAMPLE_SLOTS_LOG2 18 /* 256K slots, 2 MiB */
#define PL_SAMPLE_SLOTS (1ull << PL_SAMPLE_SLOTS_LOG2)
#define PL_SAMPLE_PROBES 64
#define PL_SAMPLE_FREED 1ull /* a slot freed; no block is at address 1 */

struct pl_sampler {
	int64_t left; /* bytes to this thread's next sample point */
	uint64_t rng;
	int ready;
};

extern __thread __attribute__((tls_model("initial-exec")))
struct pl_sampler pl_sampler;
extern uint64_t *pl_sample_table;
/* per slot home, how many recorded blocks have it (sample.c): 0, none;
 * PL_SAMPLE_STUCK, too many to count, for good */
extern uint8_t *pl_sample_filter;
#define PL_SAMPLE_STUCK 255

/* A thread's first draw; the next distance */
void pl_sample_thread(void);
int64_t pl_sample_draw(void);

/* 1: an allocation of size bytes by this thread takes a sample point. */
static inline int pl_sample_take(uint64_t size)
{
	if (__builtin_expect(!pl_sampler.ready, 0)) {
		pl_sample_thread();
	}
	if (__builtin_expect((uint64_t)pl_sampler.left > size, 1)) {
		pl_sampler.left -= (int64_t)size;
		return 0;
	}
	/* a point falls in these bytes: the process forgets them (it is
	 * memoryless), and the next is a fresh distance away */
	pl_sampler.left = pl_sample_draw();
	return size != 0;
}

static inline uint64_t pl_sample_home(uint64_t addr)
{
	return ((addr >> 4) * 0x9e3779b97f4a7c15ull) >>
	       (64 - PL_SAMPLE_SLOTS_LOG2);
}

/* The slot of a recorded block, or NULL. Almost always answered by the
 * filter: the table's look-up of an address it does not hold reads up to
 * PL_SAMPLE_PROBES slots once freed slots have filled it (sample.c). */
static inline uint64_t *pl_sample_find(uint64_t addr)
{
	uint64_t h = pl_sample_home(addr), i, v;

	if (!pl_sample_table || !pl_sample_filter || addr <= PL_SAMPLE_FREED ||
	    !__atomic_load_n(&pl_sample_filter[h], __ATOMIC_ACQUIRE)) {
		return NULL;
	}
	for (i = 0; i < PL_SAMPLE_PROBES; i++) {
		uint64_t *slot =
			&pl_sample_table[(h + i) & (PL_SAMPLE_SLOTS - 1)];

		v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (v == addr) {
			return slot;
		}
		if (v == 0) {
			return NULL; /* never filled: nothing after it */
		}
	}
	return NULL;
}

/* 1: addr is a recorded block. */
static inline int pl_sample_has(uint64_t addr)
{
	return pl_sample_find(addr) != NULL;
}

#endif /* MT_PRELOAD_SAMPLE_H */

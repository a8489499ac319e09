/* SPDX-License-Identifier: MIT */
/*
 * --sample-bytes (see sample.h).
 *
 * Each thread counts down the bytes to its next sample point; the
 * distance is drawn from an exponential distribution of mean N, so the
 * points form a Poisson process over the bytes the thread allocates and
 * whether an allocation is sampled does not depend on what came before
 * it. With --seed S the draws of a process's k-th thread to sample start
 * from S and k: a single-threaded program samples the same allocations in
 * every run.
 *
 * The recorded blocks are kept in one open-addressing table of addresses
 * per process (mapped at attach, MAP_NORESERVE: pages are touched as they
 * are used), with linear probing: a free looks at the slots from its home
 * on and stops at the first empty one (PL_SAMPLE_PROBES at most,
 * sample.h), which for a table far from full is the first it looks at.
 * Insertion claims an empty or a freed slot with a
 * compare-and-swap, removal marks the slot freed: no lock, and a block
 * freed by another thread than its allocator's is found (the program's own
 * synchronisation orders the allocation's insertion before the free).
 * A table that cannot take a block leaves it unrecorded, counted.
 *
 * A freed slot never turns back to empty (a slot emptied while another
 * thread probes past it for a block it is inserting would hide that
 * block), so over a long run freed slots fill the table, and the look-up
 * of an address it does not hold (every unsampled free) reads all
 * PL_SAMPLE_PROBES slots: measured 50-85 ns instead of 28 once 3M samples
 * had come and gone. In front of it is a counting filter, a byte per
 * home slot counting the recorded blocks of that home: an unsampled free
 * loads one byte, and sees 0 unless a live sample shares its home. The
 * count goes up before the block is in the table, so before the program
 * has the block (whose free the program's own synchronisation orders
 * after); a count that reaches PL_SAMPLE_STUCK stays there (the filter
 * then says "maybe" for that home: slower, never wrong).
 *
 * No libm in the traced process: the logarithm is computed in
 * common/sample-draw.h.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "sample-draw.h"
#include "sample.h"
#include "selfmap.h"

uint64_t pl_sample_mean;
uint64_t *pl_sample_table;
uint8_t *pl_sample_filter;
__thread __attribute__((tls_model("initial-exec"))) struct pl_sampler pl_sampler;
static uint64_t seed;
static int seeded;
static uint32_t threads; /* threads that drew so far */
static uint32_t *lost;

/* The distance to the next sample point (common/sample-draw.h). */
int64_t pl_sample_draw(void)
{
	return mt_sample_draw(&pl_sampler.rng, pl_sample_mean);
}

void pl_sample_thread(void)
{
	uint32_t k = __atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED);
	const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
	uint64_t s = seed ^ ((uint64_t)k * 0xd1342543de82ef95ull);

	if (!seeded) {
		uint64_t a = 0;

		if (r) {
			memcpy(&a, r, sizeof(a));
		}
		s ^= a ^ (uint64_t)(uintptr_t)&pl_sampler;
#if defined(__x86_64__)
		s ^= __builtin_ia32_rdtsc();
#endif
	}
	pl_sampler.rng = s;
	pl_sampler.left = pl_sample_draw();
	pl_sampler.ready = 1;
}

int pl_sample_init(struct pl_shm *shm)
{
	uint64_t mean = __atomic_load_n(&shm->sample_bytes, __ATOMIC_RELAXED);

	if (!mean) {
		return 0;
	}
	/* what the source set before the command ran, read once */
	seed = __atomic_load_n(&shm->sample_seed, __ATOMIC_RELAXED);
	seeded = (__atomic_load_n(&shm->sample_flags, __ATOMIC_RELAXED) &
		  PL_SAMPLE_SEEDED) != 0;
	if (mean > MT_SAMPLE_MEAN_MAX) {
		mean = MT_SAMPLE_MEAN_MAX; /* the source allows no more */
	}
	pl_sample_table = pl_self_map(PL_SAMPLE_SLOTS * sizeof(uint64_t),
				      MAP_NORESERVE);
	if (!pl_sample_table) {
		return -ENOMEM;
	}
	pl_sample_filter = pl_self_map(PL_SAMPLE_SLOTS, MAP_NORESERVE);
	if (!pl_sample_filter) {
		return -ENOMEM;
	}
	lost = &shm->sample_lost;
	__atomic_store_n(&pl_sample_mean, mean, __ATOMIC_RELEASE);
	return 0;
}

/* The filter's count of home h, by one up (d 1) or down (d -1); a
 * stuck count stays */
static void filter_add(uint64_t h, int d)
{
	uint8_t *c = &pl_sample_filter[h], v = __atomic_load_n(c, __ATOMIC_RELAXED);

	do {
		if (v == PL_SAMPLE_STUCK || (d < 0 && v == 0)) {
			return;
		}
	} while (!__atomic_compare_exchange_n(c, &v, (uint8_t)(v + d), 0,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

int pl_sample_keep(uint64_t addr)
{
	uint64_t h = pl_sample_home(addr), i, v;

	filter_add(h, 1); /* before the slot: see above */
	for (i = 0; i < PL_SAMPLE_PROBES; i++) {
		uint64_t *slot =
			&pl_sample_table[(h + i) & (PL_SAMPLE_SLOTS - 1)];

		v = __atomic_load_n(slot, __ATOMIC_RELAXED);
		while (v == 0 || v == PL_SAMPLE_FREED) {
			if (__atomic_compare_exchange_n(slot, &v, addr, 0,
							__ATOMIC_RELEASE,
							__ATOMIC_RELAXED)) {
				return 1;
			}
		}
	}
	filter_add(h, -1);
	__atomic_fetch_add(lost, 1, __ATOMIC_RELAXED);
	return 0;
}

int pl_sample_drop(uint64_t addr)
{
	uint64_t *slot = pl_sample_find(addr), v = addr;

	if (!slot || !__atomic_compare_exchange_n(slot, &v, PL_SAMPLE_FREED, 0,
						  __ATOMIC_RELAXED,
						  __ATOMIC_RELAXED)) {
		return 0;
	}
	/* after the slot: a count is never below the blocks in the table */
	filter_add(pl_sample_home(addr), -1);
	return 1;
}

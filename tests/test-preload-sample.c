/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload-sample.c - the interposer's table of sampled blocks
 * (plugins/preload/interposer/sample.c) alone, through a long run: blocks
 * come and go, 4,096 live at a time, their addresses drawn from a heap of
 * 1 GiB that the program walks over, until freed slots fill the table.
 * Then every live block is found, nothing else is, and the counting
 * filter in front of the table still answers almost every absent address
 * alone (an unsampled free): its counts are exactly the live blocks per
 * home. The same with two threads at once.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "sample.h"
#include "shm.h"

#define LIVE 4096
#define BASE 0x100000000ull
#define HEAP (1ull << 30)

static struct pl_shm shm;

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 11;
}

struct churn {
	uint64_t seed;
	long n;
	size_t nlive;
	uint64_t off; /* 0 or 16: two churns' addresses never meet */
	uint64_t live[LIVE];
	long missed; /* drops of live blocks that found nothing */
};

/* n samples kept and dropped, at most nlive live at once */
static void *churn(void *arg)
{
	struct churn *c = arg;
	long i;

	for (i = 0; i < c->n; i++) {
		size_t k = rnd(&c->seed) % c->nlive;
		uint64_t a;

		if (c->live[k] && !pl_sample_drop(c->live[k])) {
			c->missed++;
		}
		c->live[k] = 0;
		a = BASE + (rnd(&c->seed) % (HEAP / 32)) * 32 + c->off;
		if (pl_sample_has(a)) {
			continue; /* live: the allocator would not hand it out */
		}
		if (pl_sample_keep(a)) {
			c->live[k] = a;
		}
	}
	return NULL;
}

static void init_once(void)
{
	static int done;

	if (!done) {
		shm.sample_bytes = 4096;
		ck_assert_int_eq(pl_sample_init(&shm), 0);
		done = 1;
	}
}

/* live blocks found, absent ones not; filter counts = live per home */
static void check_table(struct churn **cs, int ncs)
{
	uint64_t s, freed = 0, live = 0, sum = 0, reach = 0, y = 7;
	int j;
	long i;

	for (j = 0; j < ncs; j++) {
		for (i = 0; i < (long)cs[j]->nlive; i++) {
			if (cs[j]->live[i]) {
				ck_assert(pl_sample_has(cs[j]->live[i]));
			}
		}
		ck_assert_int_eq(cs[j]->missed, 0);
	}
	for (s = 0; s < PL_SAMPLE_SLOTS; s++) {
		freed += pl_sample_table[s] == PL_SAMPLE_FREED;
		live += pl_sample_table[s] > PL_SAMPLE_FREED;
		ck_assert_uint_ne(pl_sample_filter[s], PL_SAMPLE_STUCK);
		sum += pl_sample_filter[s];
	}
	ck_assert_uint_eq(sum, live);
	/* the run did what it is for: freed slots fill the table */
	ck_assert_uint_gt(freed, PL_SAMPLE_SLOTS * 9 / 10);
	for (i = 0; i < 1000000; i++) {
		/* an address no block has: between two granules */
		uint64_t a = BASE + (rnd(&y) % (HEAP / 32)) * 32 + 8;

		ck_assert(!pl_sample_has(a));
		reach += pl_sample_filter[pl_sample_home(a)] != 0;
	}
	/* live / slots = 1.6 %: the table is asked about that many */
	ck_assert_msg(reach < 30000, "%llu of 1000000 absent addresses reach the table",
		      (unsigned long long)reach);
	ck_assert_uint_eq(__atomic_load_n(&shm.sample_lost, __ATOMIC_RELAXED),
			  0);
}

START_TEST(test_long_run)
{
	static struct churn c = { .seed = 1, .n = 3000000, .nlive = LIVE };
	struct churn *cs[] = { &c };
	uint64_t s;
	size_t k;

	init_once();
	churn(&c);
	check_table(cs, 1);
	/* and all gone: every count back to 0 */
	for (k = 0; k < LIVE; k++) {
		if (c.live[k]) {
			ck_assert(pl_sample_drop(c.live[k]));
			c.live[k] = 0;
		}
	}
	for (s = 0; s < PL_SAMPLE_SLOTS; s++) {
		ck_assert_uint_eq(pl_sample_filter[s], 0);
	}
}
END_TEST

START_TEST(test_two_threads)
{
	static struct churn a = { .seed = 2, .n = 2000000, .nlive = LIVE / 2 };
	static struct churn b = { .seed = 3, .n = 2000000, .nlive = LIVE / 2,
				  .off = 16 };
	struct churn *cs[] = { &a, &b };
	pthread_t t;

	init_once();
	ck_assert_int_eq(pthread_create(&t, NULL, churn, &b), 0);
	churn(&a);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	check_table(cs, 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preload-sample");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_long_run);
	tcase_add_test(tc, test_two_threads);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * report/sym-maps.c against the obvious model: every process keeps the
 * list of its mappings, a lookup takes the newest that holds the address,
 * exec empties the list, fork copies it. Random maps (overlapping, nested,
 * equal), forks and execs over a few processes, every lookup compared;
 * then the bounds: layers stay few and forks cost no copy.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../report/sym-maps.h"

#define PROCS 4
#define OPS 6000

struct model {
	struct mt_map *m;
	size_t n, cap;
};

static void model_add(struct model *md, const struct mt_map *m)
{
	if (md->n == md->cap) {
		md->cap = md->cap ? md->cap * 2 : 64;
		md->m = realloc(md->m, md->cap * sizeof(*md->m));
		ck_assert_ptr_nonnull(md->m);
	}
	md->m[md->n++] = *m;
}

static const struct mt_map *model_find(const struct model *md, uint64_t a)
{
	size_t i;

	for (i = md->n; i-- > 0;) {
		if (a >= md->m[i].start && a < md->m[i].end) {
			return &md->m[i];
		}
	}
	return NULL;
}

static void model_copy(struct model *dst, const struct model *src)
{
	if (dst == src) {
		return;
	}
	dst->n = 0;
	for (size_t i = 0; i < src->n; i++) {
		model_add(dst, &src->m[i]);
	}
}

/* A random address in a small space, so that mappings overlap a lot. */
static uint64_t rnd_addr(void)
{
	return 0x1000 + (uint64_t)(random() % 4096) * 16;
}

static void check_same(const struct mt_maps *t, const struct model *md,
		       uint64_t a)
{
	const struct mt_map *got = mt_maps_find(t, a);
	const struct mt_map *want = model_find(md, a);

	if (!want) {
		ck_assert_msg(!got, "0x%llx: found a mapping, want none",
			      (unsigned long long)a);
		return;
	}
	ck_assert_msg(got != NULL, "0x%llx: none found",
		      (unsigned long long)a);
	/* the same module at the same file offset */
	ck_assert_uint_eq(got->mod, want->mod);
	ck_assert_uint_eq(a - got->start + got->off,
			  a - want->start + want->off);
}

START_TEST(test_against_model)
{
	struct mt_maps t[PROCS];
	struct model md[PROCS];
	uint32_t next_mod = 1;
	int op, p;

	memset(t, 0, sizeof(t));
	memset(md, 0, sizeof(md));
	srandom(15 + (unsigned int)_i);
	for (op = 0; op < OPS; op++) {
		int r = (int)(random() % 100);

		p = (int)(random() % PROCS);
		if (r < 70) {
			uint64_t s = rnd_addr();
			uint64_t len = 16 * (1 + (uint64_t)(random() %
							   (r < 60 ? 8 : 600)));
			struct mt_map m = { s, s + len,
					    (uint64_t)(random() % 1000) * 4096,
					    next_mod++ };

			ck_assert_int_eq(mt_maps_add(&t[p], &m), 0);
			model_add(&md[p], &m);
		} else if (r < 78) {
			int from = (int)(random() % PROCS);

			ck_assert_int_eq(mt_maps_copy(&t[p], &t[from]), 0);
			model_copy(&md[p], &md[from]);
		} else if (r < 80) {
			mt_maps_clear(&t[p]);
			md[p].n = 0;
		} else {
			int k;

			for (k = 0; k < 16; k++) {
				uint64_t a = rnd_addr() + (uint64_t)(random() % 16);

				check_same(&t[p], &md[p], a);
			}
		}
	}
	/* every address of every process, at the end */
	for (p = 0; p < PROCS; p++) {
		uint64_t a;

		for (a = 0xff0; a < 0x1000 + 4096 * 16 + 600 * 16; a += 8) {
			check_same(&t[p], &md[p], a);
		}
		mt_maps_free(&t[p]);
		free(md[p].m);
	}
}
END_TEST

/* 100,000 mappings in order: few layers; a fork is a few references. */
START_TEST(test_bounds)
{
	struct mt_maps parent = { 0 }, child[1000];
	size_t i;

	memset(child, 0, sizeof(child));
	for (i = 0; i < 100000; i++) {
		struct mt_map m = { 0x10000 + i * 0x1000,
				    0x10000 + i * 0x1000 + 0x800, i, (uint32_t)i };

		ck_assert_int_eq(mt_maps_add(&parent, &m), 0);
	}
	ck_assert_uint_le(parent.n, 18); /* log2(100000) + 1 */
	for (i = 0; i < 1000; i++) {
		struct mt_map m = { 0x10000 + i * 0x1000, 0x10000 + i * 0x1000 + 8,
				    7, 7 };
		const struct mt_map *f;

		ck_assert_int_eq(mt_maps_copy(&child[i], &parent), 0);
		ck_assert_uint_eq(child[i].n, parent.n);
		ck_assert_int_eq(mt_maps_add(&child[i], &m), 0);
		/* the child's own mapping wins; the parent keeps its own */
		f = mt_maps_find(&child[i], 0x10000 + i * 0x1000 + 4);
		ck_assert_uint_eq(f->mod, 7);
		f = mt_maps_find(&parent, 0x10000 + i * 0x1000 + 4);
		ck_assert_uint_eq(f->mod, i);
		/* the rest of the parent's mapping, at the right offset */
		f = mt_maps_find(&child[i], 0x10000 + i * 0x1000 + 0x10);
		ck_assert_uint_eq(f->mod, i);
		ck_assert_uint_eq(0x10000 + i * 0x1000 + 0x10 - f->start + f->off,
				  i + 0x10);
		ck_assert_ptr_null(mt_maps_find(&child[i],
						0x10000 + i * 0x1000 + 0x900));
	}
	for (i = 0; i < 1000; i++) {
		mt_maps_free(&child[i]);
	}
	mt_maps_free(&parent);
}
END_TEST

static Suite *maps_suite(void)
{
	Suite *s = suite_create("sym-maps");
	TCase *tc = tcase_create("maps");

	tcase_add_loop_test(tc, test_against_model, 0, 8);
	tcase_add_test(tc, test_bounds);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(maps_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

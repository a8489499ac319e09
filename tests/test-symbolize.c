/* SPDX-License-Identifier: MIT */
/*
 * test-symbolize.c - the stack table (MTKT) and mappings (MTKM) parsers of
 * 'memtrack report' (report/symbolize.c) on hand-made payloads: the cases
 * the fuzz targets (fuzz/) found, kept as regressions.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

struct payload {
	uint8_t b[4096];
	size_t len;
	uint32_t records;
};

static void put(struct payload *p, const void *v, size_t n)
{
	ck_assert_uint_le(p->len + n, sizeof(p->b));
	memcpy(p->b + p->len, v, n);
	p->len += n;
}

static void put32(struct payload *p, uint32_t v)
{
	put(p, &v, 4);
}

static void put64(struct payload *p, uint64_t v)
{
	put(p, &v, 8);
}

static void begin(struct payload *p, const char *tag)
{
	memset(p, 0, sizeof(*p));
	put(p, tag, 4);
	put32(p, 1);  /* version */
	put32(p, 0);  /* records, set by seal() */
	put32(p, 0);  /* checksum, set by seal() */
}

/* The header's count and FNV-1a-32 of the body. */
static void seal(struct payload *p)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 16; i < p->len; i++) {
		h = (h ^ p->b[i]) * 16777619u;
	}
	memcpy(p->b + 8, &p->records, 4);
	memcpy(p->b + 12, &h, 4);
}

static void stack(struct payload *p, uint32_t id, uint32_t pid, uint32_t n,
		  uint64_t first)
{
	uint32_t i;

	put32(p, id);
	put32(p, pid);
	put32(p, n);
	for (i = 0; i < n; i++) {
		put64(p, first + i);
	}
	p->records++;
}

/*
 * fuzz-stack-table: an empty stack sent twice under one id leaked the
 * first one's frames and counted the stack twice. The first holds.
 */
START_TEST(empty_stack_twice)
{
	struct mt_sym *s = mt_sym_new();
	struct payload p;
	char names[4][64];

	ck_assert_ptr_nonnull(s);
	begin(&p, "MTKT");
	stack(&p, 5, 1, 0, 0);
	stack(&p, 5, 1, 0, 0);
	stack(&p, 5, 1, 2, 0x1000);
	stack(&p, 6, 1, 2, 0x1000);
	seal(&p);
	ck_assert_int_eq(mt_sym_meta(s, p.b, p.len, "test"), 0);
	ck_assert_uint_eq(mt_sym_nstacks(s), 2);
	ck_assert_uint_eq(mt_sym_frames(s, 5, &names[0][0], 64, 4), 0);
	ck_assert_uint_eq(mt_sym_frames(s, 6, &names[0][0], 64, 4), 2);
	ck_assert_str_eq(names[0], "0x1001");
	ck_assert_str_eq(names[1], "0x1000");
	mt_sym_free(s);
}
END_TEST

static Suite *symbolize_suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("meta");

	tcase_add_test(tc, empty_stack_twice);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(symbolize_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

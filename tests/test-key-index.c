/* SPDX-License-Identifier: MIT */
/*
 * tests/test-key-index.c - common/key-index: what goes in comes out,
 * through growth, with keys that differ in one half only; absent keys
 * are absent; a put replaces.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "key-index.h"

#define N 100000
#define DEV (1ull << 40) /* no pid is this large */

START_TEST(test_put_get)
{
	struct mt_key_index x = { 0 };
	uint32_t v, i, bad = 0;

	ck_assert_int_eq(mt_key_get(&x, 1, 2, &v), -1);
	/* the loops count what is wrong and assert once: each ck_assert
	 * is a malloc in Check (its mark point), 2.4M of them, which under
	 * a system-wide uprobe (test-ebpf-scope.sh's scope=system, beside)
	 * ran past the test's timeout */
	for (i = 0; i < N; i++) {
		/* (dev, inode) pairs of one device, and pids (b = 0) */
		bad += mt_key_put(&x, DEV, i, i) != 0;
		bad += mt_key_put(&x, i, 0, N + i) != 0;
	}
	ck_assert_uint_eq(bad, 0);
	ck_assert_uint_eq(x.n, 2 * N);
	for (i = 0; i < N; i++) {
		bad += mt_key_get(&x, DEV, i, &v) != 0 || v != i;
		bad += mt_key_get(&x, i, 0, &v) != 0 || v != N + i;
		bad += mt_key_get(&x, DEV + 1, i, &v) != -1;
		bad += mt_key_get(&x, i, 1, &v) != -1;
	}
	ck_assert_uint_eq(bad, 0);
	ck_assert_int_eq(mt_key_put(&x, DEV, 7, 42), 0);
	ck_assert_uint_eq(x.n, 2 * N);
	ck_assert_int_eq(mt_key_get(&x, DEV, 7, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_uint_le(x.n * 2, x.cap);
	mt_key_free(&x);
	ck_assert_int_eq(mt_key_get(&x, DEV, 7, &v), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("key-index");
	TCase *tc = tcase_create("key-index");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_put_get);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * ABI 1.1 added mt_source_ops.command_env at the end of the struct: a
 * source built for 1.0 still loads and reads it as NULL, and one built
 * for 1.1 (preload) has it.
 */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "../host/plugin.h"

static const char *builddir(void)
{
	const char *b = getenv("MT_BUILDDIR");

	ck_assert_msg(b != NULL, "MT_BUILDDIR is not set");
	return b;
}

START_TEST(test_source_1_0_loads)
{
	char path[PATH_MAX];
	struct mt_plugin *p = NULL;
	char *why = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/.libs/source-abi10.so",
		 builddir());
	ck_assert_msg(mt_plugin_open(path, &p, &why) == 0, "%s", why);
	ck_assert_uint_eq(p->desc->abi_minor, 0);
	ck_assert_ptr_nonnull(p->ops.source.read);
	ck_assert_ptr_null(p->ops.source.get_stats);
	/* past the plugin's own size: zero-filled by the host */
	ck_assert_ptr_null(p->ops.source.command_env);
	mt_plugin_close(p);
}
END_TEST

START_TEST(test_source_1_1_has_command_env)
{
	char path[PATH_MAX];
	struct mt_plugin *p = NULL;
	char *why = NULL;

	snprintf(path, sizeof(path), "%s/plugins/.libs/source-preload.so",
		 builddir());
	ck_assert_msg(mt_plugin_open(path, &p, &why) == 0, "%s", why);
	ck_assert_uint_ge(p->desc->abi_minor, 1);
	ck_assert_ptr_nonnull(p->ops.source.command_env);
	ck_assert(p->ops.source.flags & MT_SOURCE_NEEDS_COMMAND);
	/* 1.2: the host options it takes; no watermarks (its producers
	 * wait in place) */
	ck_assert_uint_ge(p->desc->abi_minor, 2);
	ck_assert(p->ops.source.flags & MT_SOURCE_TAKES_RING_SIZE);
	ck_assert(p->ops.source.flags & MT_SOURCE_TAKES_STACKS);
	ck_assert(!(p->ops.source.flags & MT_SOURCE_TAKES_WATERMARKS));
	mt_plugin_close(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plugin-abi");
	TCase *tc = tcase_create("abi-1.1");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_source_1_0_loads);
	tcase_add_test(tc, test_source_1_1_has_command_env);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * The loader refuses every kind of bad plugin file with one line that names
 * the file and the reason, and never runs code of a plugin whose ABI does
 * not match.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../host/plugin.h"

static char fixtures[PATH_MAX];
static char plugins[PATH_MAX];

static void setup(void)
{
	const char *b = getenv("MT_BUILDDIR");

	ck_assert_msg(b != NULL, "MT_BUILDDIR is not set");
	snprintf(fixtures, sizeof(fixtures), "%s/tests/fixtures/.libs", b);
	snprintf(plugins, sizeof(plugins), "%s/plugins/.libs", b);
}

/* Open PATH expecting failure; returns the reason. */
static char *refused(const char *dir, const char *file, int want_err)
{
	char path[PATH_MAX * 2];
	struct mt_plugin *p = (void *)1;
	char *why = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	err = mt_plugin_open(path, &p, &why);
	ck_assert_int_eq(err, want_err);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, path) != NULL, "reason names the file: %s",
		      why);
	ck_assert_msg(strchr(why, '\n') == NULL, "one line: %s", why);
	return why;
}

START_TEST(test_bad_major)
{
	char *why = refused(fixtures, "encoder-bad-major.so", -EPROTO);
	char want[64];

	snprintf(want, sizeof(want), "built for ABI %d.0, memtrack has ABI %d.%d",
		 MT_ABI_MAJOR + 1, MT_ABI_MAJOR, MT_ABI_MINOR);
	ck_assert_msg(strstr(why, want), "both versions in: %s", why);
	ck_assert_msg(strstr(why, "major versions differ"), "%s", why);
	free(why);
}
END_TEST

START_TEST(test_newer_minor)
{
	char *why = refused(fixtures, "encoder-newer-minor.so", -EPROTO);
	char want[64];

	snprintf(want, sizeof(want), "built for ABI %d.%d", MT_ABI_MAJOR,
		 MT_ABI_MINOR + 1);
	ck_assert_msg(strstr(why, want), "%s", why);
	ck_assert_msg(strstr(why, "needs a newer memtrack"), "%s", why);
	free(why);
}
END_TEST

START_TEST(test_no_entry)
{
	char *why = refused(fixtures, "encoder-no-entry.so", -ENOENT);

	ck_assert_msg(strstr(why, "no memtrack_plugin_v1 symbol"), "%s", why);
	free(why);
}
END_TEST

START_TEST(test_unresolved)
{
	char *why = refused(fixtures, "encoder-unresolved.so", -ENOEXEC);

	ck_assert_msg(strstr(why, "mt_fixture_symbol_that_does_not_exist"),
		      "dlerror names the symbol: %s", why);
	ck_assert_msg(strstr(why, "ldd"), "suggests ldd: %s", why);
	free(why);
}
END_TEST

START_TEST(test_not_elf)
{
	char dir[] = "/tmp/mt-loader-XXXXXX";
	char path[PATH_MAX];
	FILE *f;
	char *why;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/encoder-text.so", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#!/bin/sh\necho not a plugin\n", f);
	fclose(f);
	why = refused(dir, "encoder-text.so", -ENOEXEC);
	ck_assert_msg(strstr(why, "not an ELF shared object"), "%s", why);
	free(why);
	why = refused(dir, "missing.so", -ENOENT);
	ck_assert_msg(strstr(why, "No such file"), "%s", why);
	free(why);
	/* A directory is not a plugin either. */
	why = refused("/tmp", strrchr(dir, '/') + 1, -EINVAL);
	ck_assert_msg(strstr(why, "not a regular file"), "%s", why);
	free(why);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Copy the first len bytes of the built plugin src into dir/name. */
static void copy_prefix(const char *src, const char *dir, const char *name,
			size_t len)
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], buf[4096];
	FILE *in, *out;
	size_t n;

	snprintf(from, sizeof(from), "%s/%s", plugins, src);
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	in = fopen(from, "rb");
	out = fopen(to, "wb");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	while (len && (n = fread(buf, 1, len < sizeof(buf) ? len : sizeof(buf),
				 in)) > 0) {
		ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
		len -= n;
	}
	fclose(in);
	fclose(out);
}

/* dlopen() maps segments past the end of a truncated file and dies of
 * SIGBUS: the loader must see it first, whatever the cut. */
START_TEST(test_truncated)
{
	static const size_t cuts[] = { 1000, 64, 63, 20, 4096, 12000 };
	char dir[] = "/tmp/mt-loader-XXXXXX";
	char path[PATH_MAX];
	size_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char *why;

		copy_prefix("sink-file.so", dir, "sink-cut.so", cuts[i]);
		why = refused(dir, "sink-cut.so", -ENOEXEC);
		ck_assert_msg(strstr(why, "truncated ELF file"), "cut %zu: %s",
			      cuts[i], why);
		free(why);
	}
	snprintf(path, sizeof(path), "%s/sink-cut.so", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* ABI 1.1: a struct larger than the host's, with a field set that the
 * host does not know, is refused, naming the plugin and the byte. */
START_TEST(test_ops_tail_set)
{
	char *why = refused(fixtures, "encoder-ops-tail-set.so", -E2BIG);

	ck_assert_msg(strstr(why, "plugin 'fixture': encoder operations of 72 bytes, memtrack (ABI 1.3) knows 64: byte 64 is not zero") != NULL,
		      "%s", why);
	free(why);
}
END_TEST

START_TEST(test_desc_tail_set)
{
	char *why = refused(fixtures, "encoder-desc-tail-set.so", -E2BIG);

	ck_assert_msg(strstr(why, "plugin 'fixture': descriptor of 56 bytes, memtrack (ABI 1.3) knows 48: byte 48 is not zero") != NULL,
		      "%s", why);
	free(why);
}
END_TEST

/* Zero past the host's size: nothing is lost, the plugin loads. */
START_TEST(test_ops_tail_zero)
{
	char path[PATH_MAX * 2];
	struct mt_plugin *p = NULL;
	char *why = NULL;

	snprintf(path, sizeof(path), "%s/encoder-ops-tail-zero.so", fixtures);
	ck_assert_msg(mt_plugin_open(path, &p, &why) == 0, "%s", why);
	ck_assert_uint_eq(p->desc->ops.encoder->size,
			  sizeof(struct mt_encoder_ops) + sizeof(void *));
	ck_assert_ptr_nonnull(p->ops.encoder.encode);
	mt_plugin_close(p);
}
END_TEST

/* The header's name rule, [a-z0-9-]+, is the loader's. */
START_TEST(test_name_rule)
{
	char *why = refused(fixtures, "encoder-under-score.so", -EINVAL);
	struct mt_plugin *p = (void *)1;

	ck_assert_msg(strstr(why, "invalid plugin name 'under_score' (want [a-z0-9-]+, 1-64 characters)") != NULL,
		      "%s", why);
	free(why);
	setenv("MEMTRACK_PLUGIN_PATH", fixtures, 1);
	ck_assert_int_eq(mt_plugin_load(MT_PLUGIN_ENCODER, "under_score", &p),
			 -EINVAL);
	ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_good_plugins)
{
	static const struct {
		enum mt_plugin_kind kind;
		const char *name;
	} want[] = {
		{ MT_PLUGIN_ENCODER, "msgpack-zstd" },
		{ MT_PLUGIN_SINK, "file" },
		{ MT_PLUGIN_SOURCE, "replay" },
	};
	size_t i;

	setenv("MEMTRACK_PLUGIN_PATH", plugins, 1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mt_plugin *p = NULL;

		ck_assert_int_eq(mt_plugin_load(want[i].kind, want[i].name, &p),
				 0);
		ck_assert_str_eq(p->desc->name, want[i].name);
		ck_assert_uint_eq(p->desc->kind, want[i].kind);
		ck_assert_uint_eq(p->desc->abi_major, MT_ABI_MAJOR);
		mt_plugin_close(p);
	}
}
END_TEST

START_TEST(test_load_by_name)
{
	struct mt_plugin *p = (void *)1;

	/* The search path is honoured, and the refusal reaches the caller. */
	setenv("MEMTRACK_PLUGIN_PATH", fixtures, 1);
	ck_assert_int_eq(mt_plugin_load(MT_PLUGIN_ENCODER, "bad-major", &p),
			 -EPROTO);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(mt_plugin_load(MT_PLUGIN_SINK, "nonexistent", &p),
			 -ENOENT);
	ck_assert_int_eq(mt_plugin_load(MT_PLUGIN_SINK, "../etc", &p),
			 -EINVAL);
}
END_TEST

static Suite *loader_suite(void)
{
	Suite *s = suite_create("plugin-loader");
	TCase *tc = tcase_create("loader");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_bad_major);
	tcase_add_test(tc, test_newer_minor);
	tcase_add_test(tc, test_no_entry);
	tcase_add_test(tc, test_unresolved);
	tcase_add_test(tc, test_not_elf);
	tcase_add_test(tc, test_truncated);

	tcase_add_test(tc, test_ops_tail_set);
	tcase_add_test(tc, test_desc_tail_set);
	tcase_add_test(tc, test_ops_tail_zero);
	tcase_add_test(tc, test_name_rule);
	tcase_add_test(tc, test_good_plugins);
	tcase_add_test(tc, test_load_by_name);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(loader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

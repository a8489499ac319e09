/* SPDX-License-Identifier: MIT */
/*
 * tests/test-ebpf.c - the eBPF source end to end: memtrack records each
 * program of tests/progs/ and the recording must hold exactly the events
 * the program reports (see tests/progs/report.h).
 *
 * Needs root and BPF: exits 77 (skip) otherwise, or fails when
 * MEMTRACK_REQUIRE_BPF=1.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ebpf-testlib.h"

/* Run argv under memtrack (with opts) and check the recording. */
static void trace_and_check(const char *const *opts, const char *const *argv,
			    size_t min_expect)
{
	struct ebpf_trace t;
	int bad;

	ck_assert_int_eq(ebpf_trace_run(opts, argv, &t), 0);
	ck_assert_msg(t.status == 0, "memtrack exited %d: %s", t.status,
		      t.err);
	ck_assert_msg(t.nexp >= min_expect,
		      "the program reported %zu calls, expected %zu:\n%s",
		      t.nexp, min_expect, t.out);
	bad = ebpf_trace_check(&t);
	ck_assert_msg(bad == 0, "%d mismatches in %zu events (see above)",
		      bad, t.nev);
	ebpf_trace_free(&t);
}

static void run_prog(const char *name, size_t min_expect)
{
	const char *argv[] = { ebpf_prog(name), NULL };

	trace_and_check(NULL, argv, min_expect);
}

/* Optional programs are built only when their library is installed. */
/* Programs for allocators that may not be installed are built only when
 * they link. Where BPF tests are required (CI, which installs them all),
 * a missing one is a failure, not a silent pass. */
static int have_prog(const char *name)
{
	const char *req = getenv("MEMTRACK_REQUIRE_BPF");

	if (access(ebpf_prog(name), X_OK)) {
		ck_assert_msg(!req || strcmp(req, "1") != 0,
			      "%s was not built (its library is missing?)",
			      name);
		fprintf(stderr, "%s not built: case skipped\n", name);
		return 0;
	}
	return 1;
}

START_TEST(test_glibc)
{
	run_prog("alloc-basic", 23);
}
END_TEST

START_TEST(test_glibc_static)
{
	run_prog("alloc-static", 23);
}
END_TEST

START_TEST(test_syscalls)
{
	run_prog("alloc-mmap", 6);
}
END_TEST

START_TEST(test_constructor)
{
	run_prog("alloc-ctor", 2);
}
END_TEST

START_TEST(test_lib_constructor)
{
	if (have_prog("alloc-libctor")) {
		run_prog("alloc-libctor", 2);
	}
}
END_TEST

START_TEST(test_cxx)
{
	run_prog("alloc-cxx", 27);
}
END_TEST

START_TEST(test_fork_tree)
{
	/* 9 levels (0..8) x 2 lines + 4 threads x 2 lines */
	run_prog("alloc-forktree", 26);
}
END_TEST

START_TEST(test_bash_exec)
{
	char cmd[8192];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	if (access("/bin/bash", X_OK) == 0) {
		argv[0] = "/bin/bash";
	}
	/* the shell forks, the child execs; the second runs in place */
	/* ebpf_prog() returns static storage: one call per statement */
	snprintf(cmd, sizeof(cmd), "%s; ", ebpf_prog("alloc-basic"));
	strncat(cmd, ebpf_prog("alloc-ctor"), sizeof(cmd) - strlen(cmd) - 1);
	trace_and_check(NULL, argv, 25);
}
END_TEST

START_TEST(test_dlopen)
{
	char prog[4096], lib[4096];
	const char *argv[] = { prog, lib, NULL };

	snprintf(prog, sizeof(prog), "%s", ebpf_prog("alloc-dlopen"));
	snprintf(lib, sizeof(lib), "%s", ebpf_prog(".libs/libdlalloc.so"));
	trace_and_check(NULL, argv, 2);
}
END_TEST

START_TEST(test_jemalloc)
{
	if (have_prog("alloc-jemalloc")) {
		run_prog("alloc-jemalloc", 16);
	}
}
END_TEST

START_TEST(test_jemalloc_static)
{
	if (have_prog("alloc-jemalloc-static")) {
		run_prog("alloc-jemalloc-static", 16);
	}
}
END_TEST

START_TEST(test_mimalloc_static)
{
	if (have_prog("alloc-mimalloc-static")) {
		run_prog("alloc-mimalloc-static", 13);
	}
}
END_TEST

START_TEST(test_tcmalloc)
{
	if (have_prog("alloc-tcmalloc")) {
		run_prog("alloc-tcmalloc", 11);
	}
}
END_TEST

START_TEST(test_mimalloc)
{
	if (have_prog("alloc-mimalloc")) {
		run_prog("alloc-mimalloc", 13);
	}
}
END_TEST

START_TEST(test_toggle)
{
	char sock[64];
	const char *opts[] = { "--start-disabled", "--control", sock, NULL };
	const char *argv[] = { ebpf_prog("alloc-toggle"), sock, NULL };

	snprintf(sock, sizeof(sock), "/tmp/mt-ebpf-ctl-%d", (int)getpid());
	trace_and_check(opts, argv, 4);
	unlink(sock);
}
END_TEST

/* A ring far too small for the burst and producers paused at 2k unread:
 * they wait for the reader, nothing is lost. */
START_TEST(test_no_loss)
{
	const char *argv[] = { ebpf_prog("alloc-stress"), "20000", NULL };
	struct ebpf_trace t;
	int i;

	ck_assert_int_eq(ebpf_trace_run_source("ebpf:ring-size=256k,throttle=2k",
					       NULL, argv, &t), 0);
	ck_assert_msg(t.status == 0, "memtrack exited %d: %s", t.status,
		      t.err);
	ck_assert_msg(!strstr(t.err, "lost"), "%s", t.err);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(ebpf_count_size(&t, 90000 + i), 20000);
	}
	ebpf_trace_free(&t);
}
END_TEST

START_TEST(test_bad_option)
{
	/* an unknown option is refused before anything runs */
	ck_assert(ebpf_memtrack_refuses("--source ebpf:bogus=1",
					"unknown option 'bogus=1'"));
}
END_TEST

static Suite *ebpf_suite(void)
{
	Suite *s = suite_create("ebpf");
	TCase *tc = tcase_create("trace");

	/* a run attaches uprobes and starts several processes */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_glibc);
	tcase_add_test(tc, test_glibc_static);
	tcase_add_test(tc, test_syscalls);
	tcase_add_test(tc, test_constructor);
	tcase_add_test(tc, test_lib_constructor);
	tcase_add_test(tc, test_cxx);
	tcase_add_test(tc, test_fork_tree);
	tcase_add_test(tc, test_bash_exec);
	tcase_add_test(tc, test_dlopen);
	tcase_add_test(tc, test_jemalloc);
	tcase_add_test(tc, test_jemalloc_static);
	tcase_add_test(tc, test_tcmalloc);
	tcase_add_test(tc, test_mimalloc_static);
	tcase_add_test(tc, test_mimalloc);
	tcase_add_test(tc, test_toggle);
	tcase_add_test(tc, test_no_loss);
	tcase_add_test(tc, test_bad_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	ebpf_require_bpf();
	sr = srunner_create(ebpf_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

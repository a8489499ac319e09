/* SPDX-License-Identifier: MIT */
/*
 * tests/test-ebpf.c - the eBPF source end to end: memtrack records each
 * program of the scenario table (tests/scenarios.c, shared with the other
 * sources) and the recording must hold exactly the events the program
 * reports (see tests/progs/report.h).
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
#include "scenarios.h"

/* Every program of the shared table (tests/scenarios.c), each recorded
 * exactly as it reports. */
START_TEST(test_scenario)
{
	scenario_run(&scenarios[_i], "ebpf", scenarios[_i].ebpf);
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

/*
 * A set-user-ID program, as the command and from a shell: the kernel
 * takes the perf events a non-dumpable image inherited (they made the
 * uprobes trap in the tree, plugins/ebpf/scope.c), so the exec gate gives
 * it its own. Before, its mallocs were not recorded at all.
 */
START_TEST(test_setuid)
{
	char dir[4000], path[4096], cmd[4200];
	const char *argv[] = { path, NULL };
	const char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	struct ebpf_trace t;

	ck_assert_msg(ebpf_setuid_copy(dir, sizeof(dir), path, sizeof(path)),
		      "cannot make a set-uid copy of alloc-basic");
	ck_assert_int_eq(ebpf_trace_run(NULL, argv, &t), 0);
	ck_assert_msg(t.status == 0, "%s", t.err);
	ck_assert_int_ge(t.nexp, 20);
	ck_assert_int_eq(ebpf_trace_check(&t), 0);
	ebpf_trace_free(&t);
	snprintf(cmd, sizeof(cmd), "%s; true", path);
	ck_assert_int_eq(ebpf_trace_run(NULL, sh, &t), 0);
	ck_assert_msg(t.status == 0, "%s", t.err);
	ck_assert_int_ge(t.nexp, 20);
	ck_assert_int_eq(ebpf_trace_check(&t), 0);
	ebpf_trace_free(&t);
	unlink(path);
	rmdir(dir);
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
	tcase_add_loop_test(tc, test_scenario, 0, (int)nscenarios);
	tcase_add_test(tc, test_no_loss);
	tcase_add_test(tc, test_setuid);
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

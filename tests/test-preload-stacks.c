/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload-stacks.c - call stacks under the preload source
 * (--source preload --stacks): unwound in-process through .eh_frame, so
 * programs built -O2 -fomit-frame-pointer (tests/progs/pstk-*) get whole
 * stacks. `memtrack report --format collapsed --weight count` must name
 * each chain whole, in order, down to main, with the exact number of its
 * allocations: in C (PIE and not) and in C++ through libstdc++'s
 * operator new, in a thread, in a fork child, in a library dlopen'd and
 * called at once, through a ring of 64 slots; --stack-depth 3 cuts at 3
 * frames, and a stack cut at the depth ends in [truncated] as under the
 * eBPF source. With stacks, the
 * events are those recorded without (scenario table), every allocation
 * carries a stack id and nothing else does.
 *
 * Needs neither root nor BPF.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <memtrack/event.h>

#include "ebpf-testlib.h"
#include "scenarios.h"

#define CHAIN "pstk_f1;pstk_f2;pstk_f3;pstk_f4;pstk_f5;pstk_f6"
#define CHAIN_COUNT 7     /* tests/progs/pstk-chain.c: PSTK_COUNT */
#define CXX_COUNT 9       /* tests/progs/pstk-chain-cxx.cc */
#define DSO_COUNT 5       /* tests/progs/pstk-dso.c */

/* Record `prog args` with opts (e.g. "--stacks"), return the collapsed
 * report, counts as weights. */
static char *record_collapsed(const char *opts, const char *prog,
			      const char *args)
{
	char file[] = "/tmp/mt-pstk-XXXXXX";
	char *cmd = NULL, *out, *err;
	int fd = mkstemp(file), rc;

	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack %s --source preload --sink file:%s -- %s %s",
				  ebpf_builddir(), opts, file, ebpf_prog(prog),
				  args),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	free(cmd);
	free(out);
	free(err);
	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack report --format collapsed --weight count %s",
				  ebpf_builddir(), file),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "report exited %d: %s", rc, err);
	ck_assert_msg(!strstr(err, "warning"), "report: %s", err);
	free(cmd);
	free(err);
	unlink(file);
	return out;
}

/* The weight of collapsed lines whose stack ends with tail (after a ';'
 * or the line's start); -1 when none. */
static long weight_of(const char *collapsed, const char *tail)
{
	const char *line = collapsed;
	size_t tl = strlen(tail);
	long w = -1;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *sp = memrchr(line, ' ', len);

		if (sp && (size_t)(sp - line) >= tl &&
		    !memcmp(sp - tl, tail, tl) &&
		    (sp - line == (long)tl || sp[-(long)tl - 1] == ';')) {
			w = (w < 0 ? 0 : w) + strtol(sp + 1, NULL, 10);
		}
		line = nl ? nl + 1 : NULL;
	}
	return w;
}

static void expect(const char *collapsed, const char *tail, long count)
{
	char *names = strdup(collapsed);
	long w;

	ck_assert_ptr_nonnull(names);
	ebpf_strip_lines(names);
	w = weight_of(names, tail);
	free(names);

	ck_assert_msg(w == count, "%ld allocations end with %s, expected %ld, in:\n%s",
		      w, tail, count, collapsed);
}

START_TEST(test_chain_pie)
{
	char *out = record_collapsed("--stacks", "pstk-chain", "main");

	expect(out, "main;" CHAIN, CHAIN_COUNT);
	free(out);
}
END_TEST

START_TEST(test_chain_nopie)
{
	char *out = record_collapsed("--stacks", "pstk-chain-nopie", "main");

	expect(out, "main;" CHAIN, CHAIN_COUNT);
	free(out);
}
END_TEST

START_TEST(test_chain_cxx)
{
	char *out = record_collapsed("--stacks", "pstk-chain-cxx", "");

	expect(out,
	       "main;pstk::f1(int);pstk::f2(int);pstk::f3(int);pstk::f4(int);pstk::f5(int);pstk::f6(int)",
	       CXX_COUNT);
	free(out);
}
END_TEST

START_TEST(test_thread)
{
	char *out = record_collapsed("--stacks", "pstk-chain", "thread");

	expect(out, "pstk_thread_main;" CHAIN, CHAIN_COUNT);
	free(out);
}
END_TEST

START_TEST(test_fork_child)
{
	char *out = record_collapsed("--stacks", "pstk-chain", "fork");

	expect(out, "main;pstk_run_fork;" CHAIN, CHAIN_COUNT);
	free(out);
}
END_TEST

START_TEST(test_dlopen)
{
	char arg[4200];
	char *out;

	snprintf(arg, sizeof(arg), "dlopen %s",
		 ebpf_prog(".libs/pstk-dso.so"));
	out = record_collapsed("--stacks", "pstk-chain", arg);
	expect(out, "main;pstk_run_dlopen;pstk_dso_f1;pstk_dso_f2;pstk_dso_f3",
	       DSO_COUNT);
	/* a library's frames have their source lines too */
	ck_assert_msg(strstr(out, ";pstk_dso_f3 (pstk-dso.c:"),
		      "no line for pstk_dso_f3 in:\n%s", out);
	free(out);
}
END_TEST

START_TEST(test_depth3)
{
	char *out = record_collapsed("--stack-depth 3", "pstk-chain", "main");

	expect(out, "pstk_f4;pstk_f5;pstk_f6", CHAIN_COUNT);
	ck_assert_msg(!strstr(out, "pstk_f3"), "deeper than 3 frames:\n%s",
		      out);
	free(out);
}
END_TEST

/*
 * tests/progs/flame-shape: shape_wide and shape_narrow are called from
 * main (5 frames down to _start), shape_deep recurses 60 deep. A stack
 * cut at --stack-depth ends in [truncated] at its root end, as under the
 * eBPF source (tests/test-stacks.c, test_truncated): else the flame graph
 * gets a false root (shape_deep instead of main). A stack that fits is
 * whole, even when it fills the depth exactly (5).
 */
START_TEST(test_truncated)
{
	char *out = record_collapsed("--stacks --stack-depth 8",
				     "flame-shape", "");

	ck_assert_msg(ebpf_root_marked(out, "shape_deep") == 1,
		      "cut stack without its mark:\n%s", out);
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 0,
		      "whole stack marked:\n%s", out);
	ck_assert_msg(ebpf_root_marked(out, "main;shape_narrow") == 0,
		      "whole stack marked:\n%s", out);
	free(out);

	out = record_collapsed("--stacks --stack-depth 5", "flame-shape", "");
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 0,
		      "a stack of exactly the depth marked:\n%s", out);
	ck_assert_msg(ebpf_root_marked(out, "shape_deep") == 1,
		      "cut stack without its mark:\n%s", out);
	free(out);

	out = record_collapsed("--stacks --stack-depth 4", "flame-shape", "");
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 1,
		      "cut stack without its mark:\n%s", out);
	free(out);

	/* deeper than the recursion: nothing is cut */
	out = record_collapsed("--stacks --stack-depth 127", "flame-shape",
			       "");
	ck_assert_msg(ebpf_root_marked(out, "shape_deep") == 0,
		      "whole stack marked:\n%s", out);
	free(out);
}
END_TEST

/* A ring of 64 slots: the mappings' record (libstdc++, libm, libgcc_s,
 * libunwind...: about a third of the ring) and the stacks' records wait
 * for room, chunks of other threads come between them; still whole, in
 * order, nothing lost. (Records longer than the ring: test-preload-meta.) */
START_TEST(test_small_ring)
{
	char *out = record_collapsed("--stacks --ring-size 4k",
				     "pstk-chain-cxx", "");

	expect(out,
	       "main;pstk::f1(int);pstk::f2(int);pstk::f3(int);pstk::f4(int);pstk::f5(int);pstk::f6(int)",
	       CXX_COUNT);
	free(out);
	out = record_collapsed("--stacks --ring-size 4k", "pstk-chain",
			       "thread");
	expect(out, "pstk_thread_main;" CHAIN, CHAIN_COUNT);
	free(out);
}
END_TEST

/* Without --stacks no event has a stack. */
START_TEST(test_no_stacks)
{
	const char *argv[] = { ebpf_prog("alloc-basic"), NULL };
	struct ebpf_trace t;
	size_t i;

	ck_assert_int_eq(ebpf_trace_run_source("preload", NULL, argv, &t), 0);
	ck_assert_int_eq(t.status, 0);
	for (i = 0; i < t.nev; i++) {
		ck_assert(!(t.ev[i].flags & MT_EVF_STACK));
	}
	ebpf_trace_free(&t);
}
END_TEST

/* Every allocation event has a stack, no free/mmap/munmap/brk does,
 * and the events are those expected without stacks. */
START_TEST(test_event_flags)
{
	const char *argv[] = { ebpf_prog("alloc-basic"), NULL };
	struct ebpf_trace t;
	size_t i, with = 0;

	ck_assert_int_eq(ebpf_trace_run_source("preload:stacks", NULL, argv,
					       &t),
			 0);
	ck_assert_msg(t.status == 0, "memtrack exited %d: %s", t.status,
		      t.err);
	ck_assert_int_eq(ebpf_trace_check(&t), 0);
	for (i = 0; i < t.nev; i++) {
		const struct mt_event *e = &t.ev[i];
		int alloc = e->kind == MT_EV_MALLOC || e->kind == MT_EV_CALLOC ||
			    e->kind == MT_EV_REALLOC ||
			    e->kind == MT_EV_ALIGNED_ALLOC;

		ck_assert_msg(e->kind < MT_EV_KIND_COUNT, "kind %u leaked",
			      e->kind);
		if (alloc) {
			ck_assert_msg((e->flags & MT_EVF_STACK) && e->stack_id,
				      "allocation event %zu without a stack", i);
			with++;
		} else {
			ck_assert_msg(!(e->flags & MT_EVF_STACK),
				      "event %zu (kind %u) has a stack", i,
				      e->kind);
		}
	}
	ck_assert(with > 0);
	ebpf_trace_free(&t);
}
END_TEST

/* A few scenarios of the table, with stacks: the same events. */
static const char *const with_stacks[] = { "glibc", "cxx", "fork-tree",
					   "dlopen", "shell-exec" };

START_TEST(test_scenario_stacks)
{
	size_t i;

	for (i = 0; i < nscenarios; i++) {
		if (!strcmp(scenarios[i].name, with_stacks[_i])) {
			scenario_run(&scenarios[i], "preload:stacks",
				     scenarios[i].preload);
			return;
		}
	}
	ck_abort_msg("no scenario %s", with_stacks[_i]);
}
END_TEST

static Suite *preload_stacks_suite(void)
{
	Suite *s = suite_create("preload-stacks");
	TCase *tc = tcase_create("preload-stacks");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_chain_pie);
	tcase_add_test(tc, test_chain_nopie);
	tcase_add_test(tc, test_chain_cxx);
	tcase_add_test(tc, test_thread);
	tcase_add_test(tc, test_fork_child);
	tcase_add_test(tc, test_dlopen);
	tcase_add_test(tc, test_depth3);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_small_ring);
	tcase_add_test(tc, test_no_stacks);
	tcase_add_test(tc, test_event_flags);
	tcase_add_loop_test(tc, test_scenario_stacks, 0,
			    (int)(sizeof(with_stacks) / sizeof(with_stacks[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(preload_stacks_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

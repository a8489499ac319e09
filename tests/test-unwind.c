/* SPDX-License-Identifier: MIT */
/*
 * tests/test-unwind.c - the eBPF source's call stacks on code built
 * without frame pointers (issue 12): `memtrack --source ebpf:stacks`, then
 * `memtrack report --format collapsed`, whose lines are
 * "pid N;root;...;innermost WEIGHT".
 *
 * - unw-badfp allocates with garbage in rbp: each stack is exactly the
 *   frames that can be trusted, then the [truncated] mark at its root
 *   end; never an address outside a mapping (shown "0x..."), never a
 *   frame repeated by a walk going round.
 * - jq (Debian's, no frame pointers): no frame outside a mapping.
 * - unw-chain (PIE, non-PIE, static), unw-chain-cxx (libstdc++'s operator
 *   new[]), unw-dlopen + unw-dso.so (dlopen, then an allocation at once),
 *   unw-chain-dbgframe (its CFI in .debug_frame only),
 *   all -O2 -fomit-frame-pointer: the stack of the allocation in the
 *   six-deep chain is whole, from _start down to the innermost function,
 *   in order (DWARF unwind tables in BPF); with "signal", the allocation
 *   of a signal handler the chain raised: through the signal frame.
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

/* Frames as bare function names: the report adds " (file.c:LINE)" and
 * " [inlined]" where it knows them; these tests are about the walk. */
static void strip_locations(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == ' ' && s[1] == '(') {
			char *close = strchr(s, ')');

			if (close) {
				s = close + 1;
				continue;
			}
		}
		if (!strncmp(s, " [inlined]", 10)) {
			s += 10;
			continue;
		}
		*w++ = *s++;
	}
	*w = '\0';
}

/* Record cmd (a shell command line) with stacks; returns the collapsed
 * report (malloc'd), frames by their function names. */
static char *record_collapsed(const char *cmd, const char *source_args)
{
	char file[] = "/tmp/mt-unwind-XXXXXX";
	char *line = NULL, *out, *err;
	int fd = mkstemp(file), rc;

	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_ge(asprintf(&line, "%s/memtrack --source ebpf:stacks%s --sink file:%s -- %s > /dev/null",
				  ebpf_builddir(), source_args, file, cmd),
			 0);
	rc = ebpf_run_shell(line, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	ck_assert_msg(!strstr(err, "lost"), "%s", err);
	free(line);
	free(out);
	free(err);
	ck_assert_int_ge(asprintf(&line, "%s/memtrack report --format collapsed %s",
				  ebpf_builddir(), file),
			 0);
	rc = ebpf_run_shell(line, &out, &err);
	ck_assert_msg(rc == 0, "report exited %d: %s", rc, err);
	free(line);
	free(err);
	unlink(file);
	strip_locations(out);
	return out;
}

/* The frames of a collapsed line: past "pid N;", up to the weight. */
static const char *frames_of(const char *line, size_t len, size_t *flen)
{
	const char *semi = memchr(line, ';', len);
	const char *sp = memrchr(line, ' ', len);

	if (!semi || !sp || sp < semi) {
		*flen = 0;
		return line;
	}
	*flen = (size_t)(sp - semi - 1);
	return semi + 1;
}

/* Whether a line has exactly these frames and weight w. */
static int has_stack(const char *collapsed, const char *frames,
		     unsigned long w)
{
	const char *line = collapsed;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), flen;
		const char *f = frames_of(line, len, &flen);

		if (flen == strlen(frames) && !memcmp(f, frames, flen) &&
		    strtoul(f + flen + 1, NULL, 10) == w) {
			return 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* Lines with a frame outside every mapping (the report shows its
 * address, "0x..."); prints the first. */
static unsigned count_unmapped(const char *collapsed)
{
	const char *line = collapsed;
	unsigned bad = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), flen, i;
		const char *f = frames_of(line, len, &flen);

		for (i = 0; i + 2 < flen; i++) {
			if ((i == 0 || f[i - 1] == ';') && f[i] == '0' &&
			    f[i + 1] == 'x') {
				if (!bad++) {
					fprintf(stderr, "outside every mapping: %.*s\n",
						(int)len, line);
				}
				break;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return bad;
}

/* Whether needle is on the line that p is in, after p. */
static int strstr_n(const char *p, const char *needle)
{
	const char *nl = strchr(p, '\n'), *at = strstr(p, needle);

	return at && (!nl || at < nl);
}

START_TEST(test_badfp)
{
	char *out = record_collapsed(ebpf_prog("unw-badfp"), "");

	/* rbp unmapped (1001 B) and rbp to data (1002 B): both stacks name
	 * the same frames, so they are one site of 2003 B */
	ck_assert_msg(has_stack(out, "[truncated];unw_alloc_badfp", 2003),
		      "rbp unmapped, rbp to data: no [truncated];unw_alloc_badfp 2003 in:\n%s",
		      out);
	ck_assert_msg(has_stack(out, "[truncated];unw_marker;unw_alloc_badfp",
				1003),
		      "rbp loop: no [truncated];unw_marker;unw_alloc_badfp 1003 in:\n%s",
		      out);
	ck_assert_uint_eq(count_unmapped(out), 0);
	free(out);
}
END_TEST

/* The line of weight w: whole (from _start, never [truncated]) and ending
 * with main and the six-deep chain. */
static void check_chain_args(const char *cmd, const char *args,
			     const char *chain, unsigned long w)
{
	char *out = record_collapsed(cmd, args);
	const char *line = out;
	int found = 0;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), flen;
		const char *f = frames_of(line, len, &flen);

		if (strtoul(f + flen + 1, NULL, 10) == w) {
			found = 1;
			ck_assert_msg(flen > strlen(chain) &&
					      !memcmp(f + flen - strlen(chain),
						      chain, strlen(chain)) &&
					      f[flen - strlen(chain) - 1] == ';',
				      "%s: the stack of %lu does not end with %s:\n%.*s",
				      cmd, w, chain, (int)len, line);
			ck_assert_msg(!strncmp(f, "_start;", 7),
				      "%s: the stack of %lu is not whole:\n%.*s",
				      cmd, w, (int)len, line);
		}
		line = nl ? nl + 1 : NULL;
	}
	ck_assert_msg(found, "%s: no allocation of %lu in:\n%s", cmd, w, out);
	ck_assert_uint_eq(count_unmapped(out), 0);
	free(out);
}

static void check_chain(const char *cmd, const char *chain, unsigned long w)
{
	check_chain_args(cmd, "", chain, w);
}

#define CHAIN "main;unw_f1;unw_f2;unw_f3;unw_f4;unw_f5;unw_f6"

START_TEST(test_chain_pie)
{
	check_chain(ebpf_prog("unw-chain"), CHAIN, 4242);
}
END_TEST

START_TEST(test_chain_nopie)
{
	check_chain(ebpf_prog("unw-chain-nopie"), CHAIN, 4242);
}
END_TEST

START_TEST(test_chain_static)
{
	check_chain(ebpf_prog("unw-chain-static"), CHAIN, 4242);
}
END_TEST

START_TEST(test_chain_debug_frame)
{
	check_chain(ebpf_prog("unw-chain-dbgframe"), CHAIN, 4242);
}
END_TEST

START_TEST(test_chain_cxx)
{
	check_chain(ebpf_prog("unw-chain-cxx"), CHAIN, 4243);
}
END_TEST

START_TEST(test_chain_dlopen)
{
	char *cmd = NULL;

	ck_assert_int_ge(asprintf(&cmd, "%s %s/tests/progs/.libs/unw-dso.so",
				  ebpf_prog("unw-dlopen"), ebpf_builddir()),
			 0);
	check_chain(cmd,
		    "main;unw_dso_f1;unw_dso_f2;unw_dso_f3;unw_dso_f4;unw_dso_f5;unw_dso_f6",
		    4244);
	free(cmd);
}
END_TEST

/* stack-depth=N: the innermost N frames, then the mark; a stack of
 * exactly N frames ending at the root (_start, __libc_start_main,
 * __libc_start_call_main, main, unw_f1..unw_f6: 10) is whole. */
START_TEST(test_depth)
{
	char *out = record_collapsed(ebpf_prog("unw-chain"),
				     ",stack-depth=5");

	ck_assert_msg(has_stack(out, "[truncated];unw_f2;unw_f3;unw_f4;unw_f5;unw_f6",
				4242),
		      "stack-depth=5: no [truncated];unw_f2;...;unw_f6 4242 in:\n%s",
		      out);
	free(out);
	check_chain_args(ebpf_prog("unw-chain"), ",stack-depth=10", CHAIN,
			 4242);
}
END_TEST

/* A signal handler's allocation: the walk goes through the signal frame
 * (__restore_rt, the interrupted registers in its ucontext) and on down
 * to the chain that raised the signal and to _start. */
static void check_signal(const char *prog)
{
	char *cmd = NULL, *out, *line;
	const char *l;

	ck_assert_int_ge(asprintf(&cmd, "%s signal", ebpf_prog(prog)), 0);
	out = record_collapsed(cmd, "");
	l = strstr(out, ";_start;");
	ck_assert_msg(l, "%s: no whole stack in:\n%s", cmd, out);
	line = NULL;
	for (l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l), flen;
		const char *f = frames_of(l, len, &flen);

		if (strtoul(f + flen + 1, NULL, 10) == 4245) {
			line = strndup(f, flen);
		}
	}
	ck_assert_msg(line, "%s: no allocation of 4245 in:\n%s", cmd, out);
	ck_assert_msg(!strncmp(line, "_start;", 7) &&
			      strstr(line, ";" CHAIN ";") &&
			      strlen(line) > 12 &&
			      !strcmp(line + strlen(line) - 12, ";unw_handler"),
		      "%s: the handler's stack is not whole: %s", cmd, line);
	ck_assert_uint_eq(count_unmapped(out), 0);
	free(line);
	free(out);
	free(cmd);
}

START_TEST(test_signal)
{
	check_signal("unw-chain");
	check_signal("unw-chain-static");
}
END_TEST

/* stack-table-size= bounds the tables: a file that does not fit is said
 * once and unwound by frame pointers; --stats shows the bound. */
START_TEST(test_table_bound)
{
	char *cmd = NULL, *out, *err;
	int rc;

	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack --stats --source ebpf:stacks,stack-table-size=4k --sink file:/dev/null -- %s",
				  ebpf_builddir(), ebpf_prog("unw-chain")),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	ck_assert_msg(strstr(err, "unwind tables full (stack-table-size=4096 bytes)"),
		      "no warning: %s", err);
	ck_assert_msg(strstr(err, "(bound 4096)"), "no bound in --stats: %s",
		      err);
	free(cmd);
	free(out);
	free(err);
}
END_TEST

/* The tables of the libraries a program needs are built before libc's
 * uprobes are attached, even those the loader maps after libc (ls on
 * Debian: libselinux's libpcre2): once memtrack's own libc traps, a table
 * built costs three traps a row (plugins/ebpf/unwind.c, prefetch). */
START_TEST(test_tables_before_attach)
{
	char *cmd = NULL, *out, *err, *attach, *line, *last = NULL;
	int rc, tables = 0;

	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack -vv --source ebpf:stacks --sink file:/dev/null -- /bin/ls /",
				  ebpf_builddir()),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	attach = strstr(err, "libc.so.6: ");
	while (attach && !strstr_n(attach, "allocator entry points")) {
		attach = strstr(attach + 1, "libc.so.6: ");
	}
	ck_assert_msg(attach, "libc's uprobes were not attached:\n%s", err);
	for (line = strstr(err, " unwind rows"); line;
	     line = strstr(line + 1, " unwind rows")) {
		tables++;
		last = line;
	}
	ck_assert_msg(tables >= 4, "%d tables built:\n%s", tables, err);
	ck_assert_msg(last < attach,
		      "a table was built after libc's uprobes were attached:\n%s",
		      err);
	free(cmd);
	free(out);
	free(err);
}
END_TEST

START_TEST(test_jq_no_unmapped_frame)
{
	char *out;

	if (access("/usr/bin/jq", X_OK)) {
		fprintf(stderr, "no /usr/bin/jq (quickstart installs it): case skipped\n");
		return;
	}
	out = record_collapsed("/usr/bin/jq -n '[range(0;2000)] | map(tostring) | join(\",\") | length'",
			       "");
	ck_assert_msg(strlen(out) > 0, "no stacks");
	ck_assert_uint_eq(count_unmapped(out), 0);
	free(out);
}
END_TEST

static Suite *unwind_suite(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("unwind");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_badfp);
	tcase_add_test(tc, test_tables_before_attach);
	tcase_add_test(tc, test_jq_no_unmapped_frame);
	tcase_add_test(tc, test_chain_pie);
	tcase_add_test(tc, test_chain_nopie);
	tcase_add_test(tc, test_chain_static);
	tcase_add_test(tc, test_chain_debug_frame);
	tcase_add_test(tc, test_chain_cxx);
	tcase_add_test(tc, test_chain_dlopen);
	tcase_add_test(tc, test_depth);
	tcase_add_test(tc, test_signal);
	tcase_add_test(tc, test_table_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	ebpf_require_bpf();
	sr = srunner_create(unwind_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/test-stacks.c - call stacks end to end: `memtrack --source
 * ebpf:stacks` records programs whose allocations happen in known
 * functions (tests/progs/stack-*), `memtrack report --format collapsed`
 * must show those functions root first, weighted by the exact bytes. The
 * recording's stack table holds each stack once and every event's id; a
 * damaged stack table still gives a report, with a warning; a stack cut
 * at --stack-depth ends in [truncated].
 *
 * Needs root and BPF: exits 77 (skip) otherwise, or fails when
 * MEMTRACK_REQUIRE_BPF=1.
 */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <memtrack/plugin.h>

#include "ebpf-testlib.h"
#include "stack-ids.h"

/* Record prog with stacks into file (a mkstemp template). */
static void record(const char *prog, char *file)
{
	char *cmd = NULL, *out, *err;
	int fd = mkstemp(file), rc;

	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack --source ebpf:stacks --sink file:%s -- %s",
				  ebpf_builddir(), file, ebpf_prog(prog)),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	ck_assert_msg(!strstr(err, "lost"), "%s", err);
	free(cmd);
	free(out);
	free(err);
}

static char *report(const char *file, const char *format, char **err)
{
	char *cmd = NULL, *out;
	int rc;

	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack report --format %s %s",
				  ebpf_builddir(), format, file),
			 0);
	rc = ebpf_run_shell(cmd, &out, err);
	ck_assert_msg(rc == 0, "report exited %d: %s", rc, *err);
	free(cmd);
	ebpf_strip_lines(out);
	return out;
}

/* A collapsed line whose stack ends with tail and whose weight is w. */
static int has_line(const char *collapsed, const char *tail, unsigned long w)
{
	const char *line = collapsed;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *sp = memrchr(line, ' ', len);

		if (sp && (size_t)(sp - line) >= strlen(tail) &&
		    !memcmp(sp - strlen(tail), tail, strlen(tail)) &&
		    (sp - line == (long)strlen(tail) ||
		     sp[-(long)strlen(tail) - 1] == ';') &&
		    strtoul(sp + 1, NULL, 10) == w) {
			return 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

static void check_c(const char *prog)
{
	char file[] = "/tmp/mt-stacks-XXXXXX";
	char *out, *err;

	record(prog, file);
	out = report(file, "collapsed", &err);
	ck_assert_msg(has_line(out, "main;alpha;beta", 12345),
		      "no main;alpha;beta 12345 in:\n%s", out);
	/* two calls from one place: one stack, both allocations */
	ck_assert_msg(has_line(out, "main;gamma_", 6000),
		      "no main;gamma_ 6000 in:\n%s", out);
	free(out);
	free(err);
	unlink(file);
}

START_TEST(test_pie)
{
	check_c("stack-c");
}
END_TEST

START_TEST(test_static)
{
	if (access(ebpf_prog("stack-c-static"), X_OK)) {
		fprintf(stderr, "stack-c-static not built (no static libc): case skipped\n");
		return;
	}
	check_c("stack-c-static");
}
END_TEST

START_TEST(test_cxx)
{
	char file[] = "/tmp/mt-stacks-XXXXXX";
	char *out, *err;

	record("stack-cxx", file);
	out = report(file, "collapsed", &err);
	ck_assert_msg(has_line(out, "main;ns::Widget::make(int)", 4321),
		      "no main;ns::Widget::make(int) 4321 in:\n%s", out);
	free(out);
	free(err);
	unlink(file);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The stack table itself, read with the encoder plugin's decoder       */
/* ------------------------------------------------------------------ */

#define MAX_IDS 65536

struct table {
	unsigned char defined[MAX_IDS];
	unsigned char used[MAX_IDS];
	unsigned int dup, bad, events_with_stack, missing, out_of_range;
};

static void quiet_log(const struct mt_host *host, enum mt_log_level level,
		      const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct mt_host host = {
	MT_OPS_HEADER(mt_host),
	.log = quiet_log,
	.log_level = MT_LOG_WARN,
};

/* Each record of an MTKT payload to fn (id, pid); the payload's damage
 * in records: 1 when one runs past its end or the last ends short of it. */
static unsigned int stack_records(const void *data, size_t len,
				  void (*fn)(void *ctx, uint32_t id,
					     uint32_t pid),
				  void *ctx)
{
	const unsigned char *p = data;
	uint32_t count, i, id, pid, n;
	size_t at = 16;

	if (len < 16 || memcmp(p, "MTKT", 4)) {
		return 0;
	}
	memcpy(&count, p + 8, 4);
	for (i = 0; i < count; i++) {
		if (at + 12 > len) {
			return 1;
		}
		memcpy(&id, p + at, 4);
		memcpy(&pid, p + at + 4, 4);
		memcpy(&n, p + at + 8, 4);
		at += 12 + (size_t)n * 8;
		fn(ctx, id, pid);
	}
	return at != len;
}

static void table_record(void *ctx, uint32_t id, uint32_t pid)
{
	struct table *t = ctx;

	(void)pid;
	if (!id || id >= MAX_IDS) {
		t->bad++;
	} else if (t->defined[id]++) {
		t->dup++;
	}
}

static int on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len)
{
	struct table *t = ctx;

	(void)variant;
	t->bad += stack_records(data, len, table_record, t);
	return 0;
}

static int on_events(void *ctx, const struct mt_event *ev, size_t n)
{
	struct table *t = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!(ev[i].flags & MT_EVF_STACK)) {
			continue;
		}
		t->events_with_stack++;
		if (ev[i].stack_id >= MAX_IDS) {
			t->out_of_range++;
		} else {
			t->used[ev[i].stack_id] = 1;
		}
	}
	return 0;
}

/* Decode file with the real encoder plugin, events and metadata to the
 * callbacks. */
static void decode_file(const char *file, mt_event_cb events,
			mt_meta_cb meta, void *ctx)
{
	const char *dir = getenv("MEMTRACK_PLUGIN_PATH");
	const struct mt_plugin_desc *desc;
	const struct mt_encoder_ops *enc;
	mt_plugin_entry_fn entry;
	void *lib, *state = NULL;
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/encoder-msgpack-zstd.so",
		 dir ? dir : "plugins/.libs");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib, "cannot load %s", path);
	entry = (mt_plugin_entry_fn)dlsym(lib, MT_PLUGIN_ENTRY_SYMBOL);
	desc = entry ? entry() : NULL;
	enc = desc ? desc->ops.encoder : NULL;
	ck_assert(enc && enc->decode && !enc->create(&host, NULL, &state));
	fd = open(file, O_RDONLY | O_CLOEXEC);
	ck_assert(fd >= 0);
	ck_assert_int_eq(enc->decode(state, fd, file, events, meta, ctx), 0);
	close(fd);
	enc->destroy(state);
	dlclose(lib);
}

static void read_table(const char *file, struct table *t)
{
	decode_file(file, on_events, on_meta, t);
}

START_TEST(test_table)
{
	char file[] = "/tmp/mt-stacks-XXXXXX";
	struct table *t = calloc(1, sizeof(*t));
	unsigned int i, defined = 0;

	record("stack-c", file);
	read_table(file, t);
	/* Every stack an event names is in the file. Usually before the
	 * event; a stack captured while its ring was being read can land in
	 * the next table frame (the report resolves stacks at the end). */
	for (i = 0; i < MAX_IDS; i++) {
		defined += t->defined[i] != 0;
		t->missing += t->used[i] && !t->defined[i];
	}
	ck_assert_msg(t->out_of_range == 0, "%u stack ids out of range",
		      t->out_of_range);
	ck_assert_msg(defined > 0, "no stack table");
	ck_assert_msg(t->bad == 0, "%u malformed stack records", t->bad);
	ck_assert_msg(t->dup == 0, "%u stacks sent twice", t->dup);
	ck_assert_msg(t->events_with_stack >= 3, "%u events with a stack",
		      t->events_with_stack);
	ck_assert_msg(t->missing == 0, "%u events use a stack not sent",
		      t->missing);
	free(t);
	unlink(file);
}
END_TEST

/* Corrupt a byte inside every stack table: the events are still
 * reported, the stacks are not trusted, and the report says so. */
START_TEST(test_damaged_table)
{
	char file[] = "/tmp/mt-stacks-XXXXXX";
	char *buf, *out, *err;
	struct stat sb;
	size_t i, hits = 0;
	int fd;

	record("stack-c", file);
	fd = open(file, O_RDWR);
	ck_assert(fd >= 0);
	fstat(fd, &sb);
	buf = malloc(sb.st_size);
	ck_assert_int_eq(read(fd, buf, sb.st_size), sb.st_size);
	for (i = 0; i + 32 < (size_t)sb.st_size; i++) {
		if (!memcmp(buf + i, "MTKT", 4)) {
			buf[i + 16 + 4] ^= 0x5a; /* the first record's pid */
			hits++;
		}
	}
	ck_assert_msg(hits > 0, "no stack table in the file");
	ck_assert_int_eq(pwrite(fd, buf, sb.st_size, 0), sb.st_size);
	close(fd);
	free(buf);

	out = report(file, "text", &err);
	ck_assert_msg(strstr(err, "damaged"), "no warning: %s", err);
	ck_assert_msg(strstr(out, "12345") || strstr(out, "12.1 KiB") ||
			      strstr(out, "top sites"),
		      "no report of the events:\n%s", out);
	free(out);
	free(err);
	out = report(file, "collapsed", &err);
	ck_assert_msg(strstr(out, " 12345\n"), "allocation lost:\n%s", out);
	free(out);
	free(err);
	unlink(file);
}
END_TEST

/*
 * A stack cut at the depth ends in [truncated] at its root end; one that
 * fits, even exactly, does not. The preload source must give the same
 * (tests/test-preload-stacks.c, test_truncated, on the same program).
 */
static char *record_depth(const char *depth)
{
	char file[] = "/tmp/mt-stk-XXXXXX";
	char *cmd = NULL, *out, *err;
	int fd = mkstemp(file), rc;

	ck_assert(fd >= 0);
	close(fd);
	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack --source ebpf --stacks --stack-depth %s --sink file:%s -- %s",
				  ebpf_builddir(), depth, file,
				  ebpf_prog("flame-shape")),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	free(cmd);
	free(out);
	free(err);
	out = report(file, "collapsed --weight count", &err);
	free(err);
	unlink(file);
	return out;
}

START_TEST(test_truncated)
{
	char *out = record_depth("8");

	ck_assert_msg(ebpf_root_marked(out, "shape_deep") == 1,
		      "cut stack without its mark:\n%s", out);
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 0,
		      "whole stack marked:\n%s", out);
	free(out);
	out = record_depth("5");
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 0,
		      "a stack of exactly the depth marked:\n%s", out);
	ck_assert_msg(ebpf_root_marked(out, "shape_deep") == 1,
		      "cut stack without its mark:\n%s", out);
	free(out);
	out = record_depth("4");
	ck_assert_msg(ebpf_root_marked(out, "main;shape_wide") == 1,
		      "cut stack without its mark:\n%s", out);
	free(out);
}
END_TEST

/*
 * --source auto with --stacks: one recording, two sources of stacks. A
 * shell runs stack-c (the interposer's once it says hello) and
 * stack-c-static (uprobes' to its end): each process's allocations carry
 * the stacks of the source that recorded them, the interposer's ids below
 * MT_STACK_ID_UPROBES and the uprobes' from it (common/stack-ids.h),
 * every id defined once in the file, and the report names main -> alpha
 * -> beta and main -> gamma_ in both.
 */
#define AUTO_IDS 256

struct auto_table {
	uint32_t id[AUTO_IDS];
	unsigned int n, dup, bad, over, wrong_table;
	int32_t pid[2];       /* of the 12345-byte mallocs, in order */
	uint32_t beta_id[2];  /* their stacks */
	unsigned int npid;
	unsigned int events_with_stack, missing;
	uint32_t used[4096];
	unsigned int nused;
};

static void auto_record(void *ctx, uint32_t id, uint32_t pid)
{
	struct auto_table *t = ctx;

	/* each source's stacks are named through its own mappings */
	t->wrong_table += (id >= MT_STACK_ID_UPROBES) !=
			  !!(pid & MT_STACK_PID_UPROBES);
	for (uint32_t j = 0; j < t->n; j++) {
		t->dup += t->id[j] == id;
	}
	if (t->n < AUTO_IDS) {
		t->id[t->n++] = id;
	} else {
		t->over++;
	}
}

static int auto_meta(void *ctx, unsigned int variant, const void *data,
		     size_t len)
{
	struct auto_table *t = ctx;

	(void)variant;
	t->bad += stack_records(data, len, auto_record, t);
	return 0;
}

static int auto_events(void *ctx, const struct mt_event *ev, size_t n)
{
	struct auto_table *t = ctx;

	for (size_t i = 0; i < n; i++) {
		if (!(ev[i].flags & MT_EVF_STACK)) {
			continue;
		}
		t->events_with_stack++;
		if (t->nused < 4096) {
			t->used[t->nused++] = ev[i].stack_id;
		}
		if (ev[i].kind == MT_EV_MALLOC && ev[i].size == 12345 &&
		    t->npid < 2) {
			t->pid[t->npid] = ev[i].pid;
			t->beta_id[t->npid++] = ev[i].stack_id;
		}
	}
	return 0;
}

START_TEST(test_auto)
{
	char file[] = "/tmp/mt-stacks-XXXXXX";
	struct auto_table *t = calloc(1, sizeof(*t));
	char *cmd = NULL, *out, *err, dyn[4096];
	int fd = mkstemp(file), rc;
	unsigned int i, j;

	if (access(ebpf_prog("stack-c-static"), X_OK)) {
		fprintf(stderr, "stack-c-static not built (no static libc): case skipped\n");
		return;
	}
	ck_assert(fd >= 0 && t);
	close(fd);
	/* ebpf_prog() returns static storage: one at a time */
	snprintf(dyn, sizeof(dyn), "%s", ebpf_prog("stack-c"));
	ck_assert_int_ge(asprintf(&cmd, "%s/memtrack -v --stacks --sink file:%s -- sh -c '%s; %s'",
				  ebpf_builddir(), file, dyn,
				  ebpf_prog("stack-c-static")),
			 0);
	rc = ebpf_run_shell(cmd, &out, &err);
	ck_assert_msg(rc == 0, "memtrack exited %d: %s", rc, err);
	/* auto is the default with --stacks too: the shell and stack-c
	 * are the interposer's, the static one the uprobes' */
	ck_assert_msg(strstr(err, "processes recorded: 2 by the interposer, 1 by uprobes"),
		      "%s", err);
	free(cmd);
	free(out);
	free(err);

	decode_file(file, auto_events, auto_meta, t);
	ck_assert_msg(t->bad == 0 && t->over == 0,
		      "%u malformed stack records, %u over the test's room",
		      t->bad, t->over);
	ck_assert_msg(t->dup == 0, "%u stack ids defined twice", t->dup);
	ck_assert_msg(t->wrong_table == 0,
		      "%u stacks named through the other source's mappings",
		      t->wrong_table);
	for (i = 0; i < t->nused; i++) {
		for (j = 0; j < t->n && t->id[j] != t->used[i]; j++) {
		}
		t->missing += j == t->n;
	}
	ck_assert_msg(t->missing == 0, "%u events use a stack not sent",
		      t->missing);
	ck_assert_uint_eq(t->npid, 2);
	ck_assert_msg(t->beta_id[0] > 0 && t->beta_id[0] < MT_STACK_ID_UPROBES,
		      "stack-c's stack id %u is not the interposer's",
		      t->beta_id[0]);
	ck_assert_msg(t->beta_id[1] >= MT_STACK_ID_UPROBES &&
			      t->beta_id[1] <= MT_STACK_ID_MAX,
		      "stack-c-static's stack id %u is not the uprobes'",
		      t->beta_id[1]);
	for (i = 0; i < 2; i++) {
		char q[64];

		snprintf(q, sizeof(q), "collapsed --pid %d", t->pid[i]);
		out = report(file, q, &err);
		ck_assert_msg(has_line(out, "main;alpha;beta", 12345),
			      "process %d: no main;alpha;beta 12345 in:\n%s",
			      t->pid[i], out);
		ck_assert_msg(has_line(out, "main;gamma_", 6000),
			      "process %d: no main;gamma_ 6000 in:\n%s",
			      t->pid[i], out);
		free(out);
		free(err);
	}
	free(t);
	unlink(file);
}
END_TEST

START_TEST(test_bad_depth)
{
	ck_assert(ebpf_memtrack_refuses("--source ebpf:stack-depth=128",
					"stack-depth=128"));
}
END_TEST

static Suite *stacks_suite(void)
{
	Suite *s = suite_create("stacks");
	TCase *tc = tcase_create("stacks");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_pie);
	tcase_add_test(tc, test_static);
	tcase_add_test(tc, test_cxx);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_damaged_table);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_bad_depth);
	tcase_add_test(tc, test_auto);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	ebpf_require_bpf();
	sr = srunner_create(stacks_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

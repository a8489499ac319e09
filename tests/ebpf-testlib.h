/* SPDX-License-Identifier: MIT */
/*
 * tests/ebpf-testlib.h - run a program under `memtrack --source ebpf`,
 * decode the recording and compare it with what the program says it did
 * (tests/progs/report.h).
 */
#ifndef MT_TEST_EBPF_TESTLIB_H
#define MT_TEST_EBPF_TESTLIB_H

#include <stddef.h>
#include <stdint.h>

#include <memtrack/event.h>

/* One line of a test program: the event one of its calls must produce. */
struct ebpf_expect {
	int kind; /* enum mt_event_kind, or -1: "Nothing" */
	int32_t pid;
	int32_t tid;
	uint64_t addr;
	uint64_t size;
	uint64_t old_addr;
	/* the ids in the program's own pid namespace, when it is not
	 * memtrack's (report.h's NSPID NSTID); else pid and tid */
	int32_t ns_pid;
	int32_t ns_tid;
};

struct ebpf_trace {
	struct mt_event *ev;
	size_t nev;
	struct ebpf_expect *exp;
	size_t nexp;
	/* auto's "MTKW" records: who recorded each process's last image
	 * (ebpf_trace_recorder) */
	struct ebpf_recorder {
		int32_t pid;
		uint32_t who; /* 1: uprobes, 2: the interposer */
	} *rec;
	size_t nrec;
	char *out;   /* the program's stdout */
	char *err;   /* memtrack's stderr */
	int status;  /* memtrack's exit status (wait status decoded) */
	/* a run in progress (ebpf_trace_start) */
	int pid;     /* memtrack's */
	int ofd, efd;
	char file[32];
};

/* As root: a copy of alloc-basic owned by nobody with u+s, in a new
 * directory dir under the build tree, at path: root running it changes
 * user, so the new image is not dumpable and the loader ignores
 * LD_PRELOAD (AT_SECURE). Returns 0 when that cannot be (a nosuid
 * mount), else 1; the caller removes path and dir. */
int ebpf_setuid_copy(char *dir, size_t dsize, char *path, size_t psize);

/* Exit 77 (skip) without root or BPF; fail instead when
 * MEMTRACK_REQUIRE_BPF=1. Call first in main(). */
void ebpf_require_bpf(void);

/* $MT_BUILDDIR, or "." when it is not set. */
const char *ebpf_builddir(void);

/* $MT_BUILDDIR/tests/progs/NAME, static storage. */
const char *ebpf_prog(const char *name);

/* Whether "memtrack OPTS --sink file:/dev/null -- /bin/true" exits non-zero
 * and says message; prints the command and its output when not. */
int ebpf_memtrack_refuses(const char *opts, const char *message);

/* Run memtrack [opts...] --source ebpf --sink file:TMP -- argv...; both
 * lists NULL-terminated (opts may be NULL). Returns 0 or -1 (with a
 * message on stderr). */
int ebpf_trace_run(const char *const *opts, const char *const *argv,
		   struct ebpf_trace *t);
/* The same with another --source argument (e.g. "ebpf:ring-size=256k"). */
int ebpf_trace_run_source(const char *source, const char *const *opts,
			  const char *const *argv, struct ebpf_trace *t);
void ebpf_trace_free(struct ebpf_trace *t);

/* The same in two steps: start memtrack (t->pid), ... , wait for it and
 * decode. Between them ebpf_trace_peek() returns what the program wrote
 * on stdout so far (malloc'd). */
int ebpf_trace_start(const char *source, const char *const *opts,
		     const char *const *argv, struct ebpf_trace *t);
int ebpf_trace_finish(struct ebpf_trace *t);
char *ebpf_trace_peek(const struct ebpf_trace *t);

/* Check every expectation against the events; returns the number of
 * mismatches, each explained on stderr. */
int ebpf_trace_check(const struct ebpf_trace *t);

/* Events with this size (any kind, any process). */
/* Who recorded process pid's last image by its MTKW record
 * (EBPF_BY_UPROBES, EBPF_BY_INTERPOSER), 0 when it has none. */
#define EBPF_BY_UPROBES 1u
#define EBPF_BY_INTERPOSER 2u
uint32_t ebpf_trace_recorder(const struct ebpf_trace *t, int32_t pid);

size_t ebpf_count_size(const struct ebpf_trace *t, uint64_t size);

/* Run a shell command; its stdout (malloc'd) in *out, its stderr
 * (malloc'd) in *err. Returns its exit status, 128 when a signal ended it. */
int ebpf_run_shell(const char *cmd, char **out, char **err);

/* The frames of report output s without their " (file:line)" and
 * " [inlined]", in place: the function names alone, for the tests that
 * compare names (tests/test-symbols.sh checks the lines). */
void ebpf_strip_lines(char *s);

/*
 * The root end of the collapsed report out: of its lines whose stack
 * holds fn (names compared with lines stripped), 1 if every one begins
 * with the [truncated] frame (after the "pid N;" prefix), 0 if none
 * does, -1 if mixed or no line holds fn. A [truncated] frame anywhere
 * but at the root end fails the test.
 */
int ebpf_root_marked(const char *out, const char *fn);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * tests/test-auto.c - `--source auto` (host/source-auto.c): each process
 * recorded once, by the interposer where it reaches the process's
 * allocator calls, else by uprobes, with the events the eBPF source gives.
 *
 * - The scenario table (tests/scenarios.c) with the eBPF source's outcome
 *   for every case: what the interposer cannot see (static, own malloc)
 *   is seen all the same.
 * - A shell running a dynamic C program, a C++ program, a static one, one
 *   with its own malloc, a set-user-ID copy, an `env -i` child: each
 *   program's lines exactly once, and per program the counts of every
 *   allocator kind that the eBPF source records for it (the C++ one: all
 *   but the exception its failing operator new(nothrow) allocates inside
 *   the call, which the interposer does not see).
 * - The processes the interposer records do not trap: the hand-over is
 *   told by -v (hellos and releases), and an interposed storm's calls are
 *   all the interposer's.
 *
 * Needs root and BPF: skipped (77) without, failed with
 * MEMTRACK_REQUIRE_BPF=1.
 */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ebpf-testlib.h"
#include "scenarios.h"

START_TEST(test_scenario)
{
	scenario_run(&scenarios[_i], "auto", scenarios[_i].ebpf);
}
END_TEST

/* The end of a -vv stderr: Check refuses a message past 4 KiB */
static const char *err_tail(const char *s)
{
	size_t n = strlen(s);

	return n > 3000 ? s + n - 3000 : s;
}

static void trace_v(const char *source, const char *v,
		    const char *const *argv, struct ebpf_trace *t)
{
	const char *opts[] = { v, NULL };

	ck_assert_int_eq(ebpf_trace_run_source(source, opts, argv, t), 0);
	ck_assert_msg(t->status == 0, "under %s: memtrack exited %d: %s",
		      source, t->status, err_tail(t->err));
}

static void trace(const char *source, const char *const *argv,
		  struct ebpf_trace *t)
{
	const char *opts[] = { "-v", NULL };

	ck_assert_int_eq(ebpf_trace_run_source(source, opts, argv, t), 0);
	ck_assert_msg(t->status == 0, "under %s: memtrack exited %d: %s",
		      source, t->status, err_tail(t->err));
}

#define MAX_PROCS 16
#define NKINDS (MT_EV_ALIGNED_ALLOC + 1)

/* Per process that reported lines, in the order of its first line: the
 * allocator events of each kind the recording has of it. */
struct per_proc {
	size_t n;
	int32_t pid[MAX_PROCS];
	size_t count[MAX_PROCS][NKINDS];
};

static void per_proc(const struct ebpf_trace *t, struct per_proc *p)
{
	size_t i, k;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < t->nexp; i++) {
		for (k = 0; k < p->n && p->pid[k] != t->exp[i].pid; k++) {
		}
		if (k == p->n && p->n < MAX_PROCS) {
			p->pid[p->n++] = t->exp[i].pid;
		}
	}
	for (i = 0; i < t->nev; i++) {
		unsigned int kind = t->ev[i].kind;

		if ((int)kind < (int)MT_EV_MALLOC || kind > MT_EV_ALIGNED_ALLOC) {
			continue;
		}
		for (k = 0; k < p->n; k++) {
			if (p->pid[k] == t->ev[i].pid) {
				p->count[k][kind]++;
			}
		}
	}
}

/* Each line a program of the tree reported is one event of its process,
 * exactly: same kind, address, size and thread. Returns the lines that
 * are not (said on stderr). */
static int check_lines(const struct ebpf_trace *t, const char *source)
{
	int bad = 0;

	for (size_t i = 0; i < t->nexp; i++) {
		const struct ebpf_expect *x = &t->exp[i];
		size_t n = 0;

		if (x->kind < 0) {
			/* "nothing of this size": none in its process */
			for (size_t j = 0; j < t->nev; j++) {
				n += t->ev[j].pid == x->pid &&
				     t->ev[j].size == x->size &&
				     t->ev[j].kind != MT_EV_FREE;
			}
			if (!n) {
				continue;
			}
			fprintf(stderr, "%s: line %zu: %zu events of size %llu\n",
				source, i, n, (unsigned long long)x->size);
			bad++;
			continue;
		}
		for (size_t j = 0; j < t->nev; j++) {
			const struct mt_event *e = &t->ev[j];

			n += e->kind == (unsigned int)x->kind &&
			     e->pid == x->pid && e->tid == x->tid &&
			     e->addr == x->addr &&
			     (x->kind == MT_EV_FREE || e->size == x->size);
		}
		/* a Free's address comes back: an event per line of it at
		 * least (the block may be reused by a call the program does
		 * not report, as the exception of alloc-cxx's new) */
		if (x->kind == MT_EV_FREE) {
			size_t lines = 0;

			for (size_t k = 0; k < t->nexp; k++) {
				lines += t->exp[k].kind == MT_EV_FREE &&
					 t->exp[k].pid == x->pid &&
					 t->exp[k].addr == x->addr;
			}
			if (n >= lines) {
				continue;
			}
		} else if (n == 1) {
			continue;
		}
		fprintf(stderr, "%s: line %zu (kind %d addr %#llx size %llu pid %d): %zu events\n",
			source, i, x->kind, (unsigned long long)x->addr,
			(unsigned long long)x->size, x->pid, n);
		bad++;
	}
	return bad;
}

START_TEST(test_mixed_tree)
{
	static const char *const progs[] = {
		"alloc-basic", "alloc-cxx", "alloc-static", "alloc-own-malloc",
	};
	char dir[PATH_MAX - 64], suid[PATH_MAX], cmd[8 * PATH_MAX];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	const char *env = access("/usr/bin/env", X_OK) ? "/bin/env" :
							 "/usr/bin/env";
	struct ebpf_trace ta, te;
	struct per_proc pa, pe;
	size_t i, len = 0;

	ck_assert_msg(ebpf_setuid_copy(dir, sizeof(dir), suid, sizeof(suid)),
		      "cannot make a set-uid copy of alloc-basic");
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "%s; ",
					ebpf_prog(progs[i]));
	}
	snprintf(cmd + len, sizeof(cmd) - len, "%s; %s -i %s; true", suid,
		 env, ebpf_prog("alloc-basic"));

	trace("ebpf", argv, &te);
	ck_assert_msg(check_lines(&te, "ebpf") == 0, "ebpf:\n%s", te.err);
	per_proc(&te, &pe);
	/* alloc-basic, alloc-cxx, alloc-static, alloc-own-malloc, the
	 * set-uid copy, env -i's alloc-basic */
	ck_assert_uint_eq(pe.n, 6);
	/* with the interposer's processes recorded from their exec (the
	 * default, plugins/ebpf/early.c), and from their hello */
	for (int early = 1; early >= 0; early--) {
		const char *src = early ? "auto" : "auto:early=0";

		trace_v(src, "-vv", argv, &ta);
		ck_assert_msg(check_lines(&ta, src) == 0,
			      "%s: a line of a program is not one event:\n%s",
			      src, err_tail(ta.err));
		per_proc(&ta, &pa);
		ck_assert_uint_eq(pa.n, 6);
		for (i = 0; i < pa.n; i++) {
			for (unsigned int k = MT_EV_MALLOC; k < NKINDS; k++) {
				/* alloc-cxx, the interposer's: its failing
				 * operator new(nothrow) allocates the
				 * exception it throws and catches inside the
				 * call, which uprobes see and the interposer
				 * does not (README) */
				size_t more = i == 1 && (k == MT_EV_MALLOC ||
							 k == MT_EV_FREE);
				/* the block dash's child may take for the
				 * command's environment before the exec, the
				 * same pid: auto's environment is longer by
				 * two variables and by memtrack's pid's
				 * digits (README, "Which source": +1 malloc) */
				size_t dash = k == MT_EV_MALLOC &&
					      pa.count[i][k] + more ==
						      pe.count[i][k] + 1;

				ck_assert_msg(pa.count[i][k] + more ==
						      pe.count[i][k] + dash,
					      "program %zu of \"%s\": %zu events of kind %u under %s, %zu under ebpf",
					      i, cmd, pa.count[i][k], k, src,
					      pe.count[i][k]);
			}
		}
		/* the shell, the first alloc-basic and alloc-cxx are the
		 * interposer's; the others never say hello (env -i does,
		 * then execs alloc-basic without LD_PRELOAD: its process
		 * ends the uprobes') */
		ck_assert_msg(strstr(ta.err, "processes recorded: 3 by the interposer, 4 by uprobes"),
			      "%s", err_tail(ta.err));
		/* from their exec: the shell, alloc-basic, alloc-cxx and
		 * env (static, own malloc, set-uid and without LD_PRELOAD
		 * are not guessed); none says hello */
		ck_assert_msg(strstr(ta.err, early ? "early: 4 execs guessed the interposer's, 4 seen so, 4 of them asked; 0 handed over at their hello after all" :
						     "early: 0 execs guessed"),
			      "%s: %s", src, err_tail(ta.err));
		ck_assert_msg(strstr(ta.err, early ? " 0 hellos" : " 4 hellos"),
			      "%s: %s", src, err_tail(ta.err));
		ebpf_trace_free(&ta);
	}
	ebpf_trace_free(&te);
	unlink(suid);
	rmdir(dir);
}
END_TEST

/*
 * A guess the gate must take back (plugins/ebpf/early.c): a shell puts
 * a library of its own before the interposer in LD_PRELOAD, so the first
 * file alloc-basic's loader maps is not the interposer. That process gets
 * its uprobes at that mapping and is handed over at its hello; the
 * library's constructor allocates before it (its line), and every line
 * is recorded once, with the eBPF source's counts. The shell is guessed
 * right.
 */
START_TEST(test_early_wrong)
{
	char cmd[4 * PATH_MAX];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct ebpf_trace ta, te;
	struct per_proc pa, pe;

	snprintf(cmd, sizeof(cmd), "LD_PRELOAD=%s/tests/progs/libctor.so:$LD_PRELOAD %s; true",
		 ebpf_builddir(), ebpf_prog("alloc-basic"));
	trace_v("auto", "-vv", argv, &ta);
	ck_assert_msg(check_lines(&ta, "auto") == 0, "auto:\n%s",
		      err_tail(ta.err));
	ck_assert_msg(strstr(ta.err, "early: 2 execs guessed the interposer's, 1 seen so, 1 of them asked; 1 handed over at their hello after all") &&
			      strstr(ta.err, "another file was mapped first") &&
			      strstr(ta.err, " 1 hellos"),
		      "%s", err_tail(ta.err));
	ck_assert_msg(ebpf_count_size(&ta, 10202) == 1, "%s",
		      err_tail(ta.err));
	ck_assert_msg(strstr(ta.err, "processes recorded: 2 by the interposer, 0 by uprobes"),
		      "%s", err_tail(ta.err));
	/* the same counts as uprobes alone give, but for the block dash's
	 * child may take for the command's environment before its exec,
	 * longer under auto (README, "Which source": +1 malloc; 1 CI run,
	 * and here with 25 more variables) */
	trace("ebpf", argv, &te);
	per_proc(&ta, &pa);
	per_proc(&te, &pe);
	ck_assert_uint_eq(pa.n, 1);
	ck_assert_uint_eq(pe.n, 1);
	for (unsigned int k = MT_EV_MALLOC; k < NKINDS; k++) {
		size_t dash = k == MT_EV_MALLOC &&
			      pa.count[0][k] == pe.count[0][k] + 1;

		ck_assert_msg(pa.count[0][k] == pe.count[0][k] + dash,
			      "kind %u: %zu under auto, %zu under ebpf", k,
			      pa.count[0][k], pe.count[0][k]);
	}
	ebpf_trace_free(&ta);
	ebpf_trace_free(&te);
}
END_TEST

/*
 * A hello read late (MEMTRACK_TEST_HELLO_LATE_MS=100: the host busy):
 * env, handed over at its hello (early=0), execs phases without
 * LD_PRELOAD before the host has read that hello. The new image's events,
 * opened at its exec, must stay open when the hello's are closed: phases
 * allocates 1 MiB at once, then 2 x 1 MiB 150 ms later, all recorded by
 * uprobes. They were taken for env's and closed with them, and the two
 * later ones were lost (every run here; 1 run in ~50 of the mixed tree).
 */
START_TEST(test_hello_late)
{
	const char *env = access("/usr/bin/env", X_OK) ? "/bin/env" :
							 "/usr/bin/env";
	const char *argv[] = { env, "-i", ebpf_prog("phases"), NULL };
	struct ebpf_trace t;
	size_t mib = 0;

	setenv("MEMTRACK_TEST_HELLO_LATE_MS", "100", 1);
	trace_v("auto:early=0", "-v", argv, &t);
	unsetenv("MEMTRACK_TEST_HELLO_LATE_MS");
	for (size_t i = 0; i < t.nev; i++) {
		mib += t.ev[i].kind == MT_EV_MALLOC &&
		       t.ev[i].size == 1u << 20;
	}
	ck_assert_msg(mib == 3, "%zu mallocs of 1 MiB: %s", mib,
		      err_tail(t.err));
	ck_assert_msg(strstr(t.err, "processes recorded: 0 by the interposer, 1 by uprobes"),
		      "%s", err_tail(t.err));
	ebpf_trace_free(&t);
}
END_TEST

/*
 * An exec by a process recorded by uprobes keeps the uprobes' filter
 * events its thread carries (plugins/ebpf/scope.c: exec_carried()), as
 * under the eBPF source, instead of opening a set of its own beside them:
 * `env -i` runs a shell without LD_PRELOAD, whose children alloc-basic and
 * alloc-cxx (which maps libstdc++: new events, added to the set the
 * process carries) run on the shell's set. Each line once, the counts of
 * the eBPF source, with the interposer's processes recorded from their
 * exec and from their hello.
 */
START_TEST(test_carried)
{
	const char *env = access("/usr/bin/env", X_OK) ? "/bin/env" :
							 "/usr/bin/env";
	char cmd[4 * PATH_MAX];
	const char *argv[] = { env, "-i", "/bin/sh", "-c", cmd, NULL };
	struct ebpf_trace ta, te;
	struct per_proc pa, pe;
	char basic[PATH_MAX];

	/* ebpf_prog(): static storage */
	snprintf(basic, sizeof(basic), "%s", ebpf_prog("alloc-basic"));
	snprintf(cmd, sizeof(cmd), "%s; %s; true", basic,
		 ebpf_prog("alloc-cxx"));
	trace("ebpf", argv, &te);
	per_proc(&te, &pe);
	ck_assert_uint_eq(pe.n, 2);
	for (int early = 1; early >= 0; early--) {
		const char *src = early ? "auto" : "auto:early=0";

		trace_v(src, "-vv", argv, &ta);
		ck_assert_msg(check_lines(&ta, src) == 0, "%s:\n%s", src,
			      err_tail(ta.err));
		per_proc(&ta, &pa);
		ck_assert_uint_eq(pa.n, 2);
		for (size_t i = 0; i < pa.n; i++) {
			for (unsigned int k = MT_EV_MALLOC; k < NKINDS; k++) {
				ck_assert_msg(pa.count[i][k] == pe.count[i][k],
					      "%s: program %zu: %zu events of kind %u, %zu under ebpf",
					      src, i, pa.count[i][k], k,
					      pe.count[i][k]);
			}
		}
		/* the shell's exec opens a set (env is the interposer's),
		 * its children's keep it */
		ck_assert_msg(strstr(ta.err, "scope: 4 execs covered (2 by the events they carried)"),
			      "%s: %s", src, err_tail(ta.err));
		ebpf_trace_free(&ta);
	}
	ebpf_trace_free(&te);
}
END_TEST

/*
 * A process recorded by uprobes forks a child, then execs a program its
 * interposer records (fork-exec: LD_PRELOAD empty, then set again). The
 * child has copies of the parent's uprobe filter events; the hello of the
 * parent's new image closed them (auto:early=0, and a wrong guess), and
 * the child's malloc, 300 ms later, was lost. A hello now leaves the
 * events a child has copies of (BPF's `forked`).
 */
START_TEST(test_fork_hello)
{
	char cmd[4 * PATH_MAX];
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct ebpf_trace t;
	char fe[PATH_MAX];

	snprintf(fe, sizeof(fe), "%s", ebpf_prog("fork-exec"));
	snprintf(cmd, sizeof(cmd),
		 "MT_TEST_LD_PRELOAD=$LD_PRELOAD LD_PRELOAD= exec %s 300 %s",
		 fe, ebpf_prog("alloc-basic"));
	for (int early = 1; early >= 0; early--) {
		const char *src = early ? "auto" : "auto:early=0";

		trace_v(src, "-vv", argv, &t);
		ck_assert_msg(check_lines(&t, src) == 0, "%s:\n%s", src,
			      err_tail(t.err));
		ck_assert_msg(ebpf_count_size(&t, 10601) == 1,
			      "%s: the child's malloc: %zu events: %s", src,
			      ebpf_count_size(&t, 10601), err_tail(t.err));
		ck_assert_msg(strstr(t.err, "processes recorded: 1 by the interposer, 1 by uprobes"),
			      "%s: %s", src, err_tail(t.err));
		ebpf_trace_free(&t);
	}
}
END_TEST

/* The N of -vv's "scope: N uprobe events" (-1: none) */
static long scope_events(const char *err)
{
	const char *p;

	for (p = err; (p = strstr(p, "scope: ")); p += 7) {
		char *end;
		long n = strtol(p + 7, &end, 10);

		if (end != p + 7 && !strncmp(end, " uprobe events", 14)) {
			return n;
		}
	}
	return -1;
}

/*
 * A program with a malloc of its own is never the interposer's (the
 * interposer's test, and early.c's): its probes join the libraries'
 * uprobe events, as under the eBPF source, and auto makes one more event
 * only, the interposer's hello. Its probes had events of their own
 * (MT_CK_PROG, kept for a process its interposer records): 15 events, and
 * Chromium's threads carried 19 filter events each instead of 10, which
 * each of their context switches and clones goes through.
 */
START_TEST(test_own_events)
{
	const char *argv[] = { ebpf_prog("alloc-own-malloc"), NULL };
	struct ebpf_trace ta, te;
	long na, ne;

	trace_v("ebpf", "-vv", argv, &te);
	trace_v("auto", "-vv", argv, &ta);
	ck_assert_msg(check_lines(&ta, "auto") == 0, "%s", err_tail(ta.err));
	na = scope_events(ta.err);
	ne = scope_events(te.err);
	ck_assert_msg(ne > 0 && na == ne + 1,
		      "%ld uprobe events under auto, %ld under ebpf", na, ne);
	ebpf_trace_free(&ta);
	ebpf_trace_free(&te);
}
END_TEST

/*
 * A program that runs itself again through /proc/self/exe (Chromium's
 * zygote): the exec gate read memtrack's own executable for it, guessed
 * from that, and took the guess back when the interposer asked. Now both
 * execs are guessed right and the second image's malloc is recorded once.
 */
START_TEST(test_exec_self)
{
	const char *argv[] = { ebpf_prog("exec-self"), NULL };
	struct ebpf_trace t;

	trace_v("auto", "-vv", argv, &t);
	ck_assert_msg(check_lines(&t, "auto") == 0, "%s", err_tail(t.err));
	ck_assert_msg(ebpf_count_size(&t, 10501) == 1, "%s", err_tail(t.err));
	ck_assert_msg(strstr(t.err, "early: 2 execs guessed the interposer's, 2 seen so, 2 of them asked; 0 handed over at their hello after all"),
		      "%s", err_tail(t.err));
	ebpf_trace_free(&t);
}
END_TEST

/*
 * The hand-over in numbers: 4 processes of alloc-storm (forked, not
 * exec'd: the interposer's from their parent's hello on) make 2000
 * malloc/free pairs each, every one recorded once; 5 processes ended, all
 * the interposer's (-v).
 */
START_TEST(test_handover)
{
	const char *argv[] = { ebpf_prog("alloc-storm"), "4", "1", "2000",
			       NULL };
	struct ebpf_trace t;
	size_t frees = 0;

	trace("auto", argv, &t);
	for (unsigned int p = 0; p < 4; p++) {
		ck_assert_uint_eq(ebpf_count_size(&t, 70000 + p * 16), 2000);
	}
	for (size_t i = 0; i < t.nev; i++) {
		frees += t.ev[i].kind == MT_EV_FREE;
	}
	ck_assert_uint_ge(frees, 4 * 2000);
	ck_assert_msg(strstr(t.err, "processes recorded: 5 by the interposer, 0 by uprobes"),
		      "%s", t.err);
	ebpf_trace_free(&t);
}
END_TEST

/*
 * The files every tree maps first, the interposer and libc, are attached
 * while the BPF object loads (plugins/ebpf/attach.c: the first uprobe
 * registration's wait off the command's path): at the exec the gate
 * attaches only what is new, the program and ld.so, and alloc-basic is
 * recorded exactly (the scenario table's check, here with -vv).
 */
START_TEST(test_ahead)
{
	char cmd[8192], *out = NULL, *err = NULL;
	const char *mt = getenv("MT_BUILDDIR");

	snprintf(cmd, sizeof(cmd),
		 "%s/memtrack -vv --source auto --sink file:/dev/null -- %s",
		 mt ? mt : ".", ebpf_prog("alloc-basic"));
	ck_assert_int_eq(ebpf_run_shell(cmd, &out, &err), 0);
	ck_assert_msg(strstr(err, "libmemtrack-preload.so: attached beside the load") &&
			      strstr(err, "/libc.so.6: attached beside the load") &&
			      strstr(err, "2 files attached beside the load"),
		      "%s", err);
	/* the exec, the interposer's and libc's mappings, its question */
	ck_assert_msg(strstr(err, "exec gate: 4 calls, 2 files attached ahead"),
		      "%s", err);
	free(out);
	free(err);
}
END_TEST

/* Without --source: auto as root, with --stacks and --sample-bytes too;
 * preload for a user without the privileges, which says why. */
START_TEST(test_default)
{
	static const struct {
		const char *pre, *opts, *want;
	} runs[] = {
		{ "", "", "processes recorded: 1 by the interposer, 0 by uprobes" },
		{ "setpriv --reuid 65534 --regid 65534 --clear-groups ", "",
		  "source preload: eBPF cannot trace here (needs root" },
		{ "", "--stacks ",
		  "processes recorded: 1 by the interposer, 0 by uprobes" },
		{ "", "--sample-bytes 64K ",
		  "processes recorded: 1 by the interposer, 0 by uprobes" },
	};
	const char *mt = getenv("MT_BUILDDIR");

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char cmd[8192], *out = NULL, *err = NULL;

		snprintf(cmd, sizeof(cmd),
			 "%s%s/memtrack -v %s--sink file:/dev/null -- %s",
			 runs[i].pre, mt ? mt : ".", runs[i].opts,
			 ebpf_prog("alloc-basic"));
		ck_assert_int_eq(ebpf_run_shell(cmd, &out, &err), 0);
		ck_assert_msg(strstr(err, runs[i].want), "%s: %s", cmd, err);
		free(out);
		free(err);
	}
}
END_TEST

/* How many times s holds what. */
static int occurrences(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

START_TEST(test_bad_option)
{
	/* an arg both halves take: refused once, by auto, before either
	 * half is made */
	static const struct {
		const char *arg, *said;
	} shared[] = {
		{ "stack-depth=999", "option stack-depth=999: a number of frames from 1 to 127 expected" },
		{ "sample-bytes=0", "option --sample-bytes 0: a size from 1 to 1T expected" },
		{ "seed=-1", "option --seed -1: a number from 0 to 2^64 - 1 expected" },
	};
	const char *mt = getenv("MT_BUILDDIR");

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		char cmd[4096], *out = NULL, *err = NULL;

		snprintf(cmd, sizeof(cmd),
			 "%s/memtrack --source auto:%s --sink file:/dev/null -- /bin/true",
			 mt ? mt : ".", shared[i].arg);
		ck_assert_int_ne(ebpf_run_shell(cmd, &out, &err), 0);
		ck_assert_msg(occurrences(err, shared[i].said) == 1,
			      "%s: said %d times: %s", cmd,
			      occurrences(err, shared[i].said), err);
		free(out);
		free(err);
	}
	ck_assert(ebpf_memtrack_refuses("--source auto:bogus=1",
					"unknown option 'bogus=1'"));
	/* the eBPF source alone: every call traps, sampled or not */
	ck_assert(ebpf_memtrack_refuses("--source ebpf:sample-bytes=1M",
					"sample-bytes= and seed= are for --source auto"));
}
END_TEST

static Suite *auto_suite(void)
{
	Suite *s = suite_create("auto");
	TCase *tc = tcase_create("trace");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_scenario, 0, (int)nscenarios);
	tcase_add_test(tc, test_mixed_tree);
	tcase_add_test(tc, test_handover);
	tcase_add_test(tc, test_early_wrong);
	tcase_add_test(tc, test_hello_late);
	tcase_add_test(tc, test_carried);
	tcase_add_test(tc, test_fork_hello);
	tcase_add_test(tc, test_exec_self);
	tcase_add_test(tc, test_own_events);
	tcase_add_test(tc, test_ahead);
	tcase_add_test(tc, test_default);
	tcase_add_test(tc, test_bad_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	ebpf_require_bpf();
	sr = srunner_create(auto_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/scenarios.c - see scenarios.h.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ebpf-testlib.h"
#include "scenarios.h"

/*
 * What an interposer cannot see: allocators linked into the executable
 * (static glibc, static jemalloc or mimalloc) bind to the executable's own
 * definitions, not to the preloaded ones. A static executable is refused
 * by name, and so is an executable that exports its own malloc; one whose
 * allocator is linked in but not exported (the -static allocator
 * programs) goes unnamed: nothing cheap at exec tells it apart.
 */
const struct scenario scenarios[] = {
	{ "glibc", "alloc-basic", SC_PLAIN, 23, 0, SC_SEEN, SC_SEEN },
	{ "glibc-static", "alloc-static", SC_PLAIN, 23, 0, SC_SEEN,
	  SC_REFUSED },
	/* the program's own mmap/mremap/munmap/sbrk go through libc */
	{ "syscalls", "alloc-mmap", SC_PLAIN, 6, 0, SC_SEEN, SC_SEEN },
	{ "constructor", "alloc-ctor", SC_PLAIN, 2, 0, SC_SEEN, SC_SEEN },
	/* exit(): an atexit handler and a destructor */
	{ "exit", "alloc-exit", SC_PLAIN, 4, 0, SC_SEEN, SC_SEEN },
	{ "lib-constructor", "alloc-libctor", SC_PLAIN, 2, 1, SC_SEEN,
	  SC_SEEN },
	{ "cxx", "alloc-cxx", SC_PLAIN, 27, 0, SC_SEEN, SC_SEEN },
	/* 9 levels (0..8) x 2 lines + 4 threads x 2 lines */
	{ "fork-tree", "alloc-forktree", SC_PLAIN, 26, 0, SC_SEEN, SC_SEEN },
	{ "shell-exec", NULL, SC_SHELL, 25, 0, SC_SEEN, SC_SEEN },
	{ "dlopen", "alloc-dlopen", SC_DLOPEN, 2, 0, SC_SEEN, SC_SEEN },
	{ "jemalloc", "alloc-jemalloc", SC_PLAIN, 16, 1, SC_SEEN, SC_SEEN },
	{ "jemalloc-static", "alloc-jemalloc-static", SC_PLAIN, 16, 1,
	  SC_SEEN, SC_NOT_SEEN },
	{ "tcmalloc", "alloc-tcmalloc", SC_PLAIN, 11, 1, SC_SEEN, SC_SEEN },
	{ "mimalloc", "alloc-mimalloc", SC_PLAIN, 13, 1, SC_SEEN, SC_SEEN },
	/* mi_* only: its malloc is glibc's (tests/progs/alloc-mimalloc.c) */
	{ "mimalloc-static", "alloc-mimalloc-static", SC_PLAIN, 11, 1,
	  SC_SEEN, SC_NOT_SEEN },
	{ "toggle", "alloc-toggle", SC_CONTROL, 4, 0, SC_SEEN, SC_SEEN },
	/* an allocator of the executable's own, exported: named */
	{ "own-malloc", "alloc-own-malloc", SC_PLAIN, 2, 0, SC_SEEN,
	  SC_REFUSED },
};

const size_t nscenarios = sizeof(scenarios) / sizeof(scenarios[0]);

/* Programs for allocators that may not be installed are built only when
 * they link. Where every test is required (MEMTRACK_REQUIRE_BPF=1: CI,
 * which installs them all), a missing one is a failure. */
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

static void check_not_seen(const struct ebpf_trace *t, const char *file,
			   int refused)
{
	size_t i;

	for (i = 0; i < t->nexp; i++) {
		ck_assert_msg(ebpf_count_size(t, t->exp[i].size) == 0,
			      "%s: an event of size %llu was recorded", file,
			      (unsigned long long)t->exp[i].size);
	}
	if (refused) {
		ck_assert_msg(strstr(t->err, file) &&
				      strstr(t->err, "--source ebpf"),
			      "memtrack did not name %s:\n%s", file, t->err);
	}
}

void scenario_run(const struct scenario *sc, const char *source,
		  enum scenario_outcome outcome)
{
	char prog[4096], arg[8192], sock[64];
	const char *argv[4] = { prog, NULL, NULL, NULL };
	const char *opts[4] = { NULL };
	struct ebpf_trace t;
	int bad;

	if (sc->optional && !have_prog(sc->prog)) {
		return;
	}
	if (sc->prog) {
		snprintf(prog, sizeof(prog), "%s", ebpf_prog(sc->prog));
	}
	switch (sc->how) {
	case SC_PLAIN:
		break;
	case SC_SHELL:
		/* the shell forks, the child execs; the second runs in
		 * place (ebpf_prog() returns static storage) */
		snprintf(prog, sizeof(prog), "%s",
			 access("/bin/bash", X_OK) == 0 ? "/bin/bash" :
							  "/bin/sh");
		snprintf(arg, sizeof(arg), "%s; ", ebpf_prog("alloc-basic"));
		strncat(arg, ebpf_prog("alloc-ctor"),
			sizeof(arg) - strlen(arg) - 1);
		argv[1] = "-c";
		argv[2] = arg;
		break;
	case SC_DLOPEN:
		snprintf(arg, sizeof(arg), "%s",
			 ebpf_prog(".libs/libdlalloc.so"));
		argv[1] = arg;
		break;
	case SC_CONTROL:
		snprintf(sock, sizeof(sock), "/tmp/mt-sc-ctl-%d",
			 (int)getpid());
		opts[0] = "--start-disabled";
		opts[1] = "--control";
		opts[2] = sock;
		argv[1] = sock;
		break;
	}
	ck_assert_int_eq(ebpf_trace_run_source(source, opts, argv, &t), 0);
	if (sc->how == SC_CONTROL) {
		unlink(sock);
	}
	ck_assert_msg(t.status == 0, "%s: memtrack exited %d: %s", sc->name,
		      t.status, t.err);
	ck_assert_msg(t.nexp >= sc->min_expect,
		      "%s: the program reported %zu calls, expected %zu:\n%s",
		      sc->name, t.nexp, sc->min_expect, t.out);
	if (outcome == SC_SEEN) {
		bad = ebpf_trace_check(&t);
		ck_assert_msg(bad == 0, "%s: %d mismatches in %zu events (see above)",
			      sc->name, bad, t.nev);
	} else {
		check_not_seen(&t, sc->prog, outcome == SC_REFUSED);
	}
	ebpf_trace_free(&t);
}

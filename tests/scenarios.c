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
 * by name, and so is an executable that defines malloc: alloc-own-malloc,
 * and alloc-jemalloc-static (Debian's libjemalloc.a defines malloc, and
 * the linker exports it because libc.so.6 defines it too, so every malloc
 * of the process, libc's own included, binds to jemalloc's). The static
 * mimalloc (tests/build-mimalloc-static.sh: src/static.c, no
 * MI_MALLOC_OVERRIDE) defines only mi_* (`nm`: no malloc): the program's
 * mi_* calls are neither seen nor named (nothing cheap at exec tells them
 * apart), while its plain malloc(60008)/free go through the PLT to libc's
 * and are seen like any other.
 */
static const unsigned long long mimalloc_static_seen[] = { 60008, 0 };

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
	/* a C program opens a C++ library with RTLD_LOCAL, as python opens
	 * its extension modules: libstdc++ is in that library's scope only
	 * (the preload hooks crashed on it); one new throws through them */
	{ "dlopen-cxx-local", "alloc-dlopen-cxx", SC_DLOPEN_CXX, 9, 0,
	  SC_SEEN, SC_SEEN },
	{ "jemalloc", "alloc-jemalloc", SC_PLAIN, 16, 1, SC_SEEN, SC_SEEN },
	{ "jemalloc-static", "alloc-jemalloc-static", SC_PLAIN, 16, 1,
	  SC_SEEN, SC_REFUSED },
	{ "tcmalloc", "alloc-tcmalloc", SC_PLAIN, 11, 1, SC_SEEN, SC_SEEN },
	{ "mimalloc", "alloc-mimalloc", SC_PLAIN, 13, 1, SC_SEEN, SC_SEEN },
	{ "mimalloc-static", "alloc-mimalloc-static", SC_PLAIN, 13, 1,
	  SC_SEEN, SC_PARTIAL, mimalloc_static_seen },
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

static void check_refused(const struct ebpf_trace *t, const char *file)
{
	size_t i;

	for (i = 0; i < t->nexp; i++) {
		ck_assert_msg(ebpf_count_size(t, t->exp[i].size) == 0,
			      "%s: an event of size %llu was recorded", file,
			      (unsigned long long)t->exp[i].size);
	}
	ck_assert_msg(strstr(t->err, file) && strstr(t->err, "--source ebpf"),
		      "memtrack did not name %s:\n%s", file, t->err);
}

static int is_allocator_kind(int kind)
{
	return kind >= MT_EV_MALLOC && kind <= MT_EV_ALIGNED_ALLOC;
}

/* Is line i of the program one that sc->seen_sizes says is seen? A Free
 * is seen when the allocation it frees (the last line before it at its
 * address) is. */
static int line_seen(const struct scenario *sc, const struct ebpf_trace *t,
		     size_t i)
{
	const struct ebpf_expect *x = &t->exp[i];
	uint64_t size = x->size;
	size_t j;

	if (x->kind == MT_EV_FREE) {
		size = 0;
		for (j = i; j-- > 0;) {
			if (t->exp[j].kind != MT_EV_FREE &&
			    t->exp[j].addr == x->addr) {
				size = t->exp[j].size;
				break;
			}
		}
	}
	for (j = 0; size && sc->seen_sizes[j]; j++) {
		if (sc->seen_sizes[j] == size) {
			return 1;
		}
	}
	return 0;
}

/* Events of an allocator kind (Malloc..Free, not mmap and brk) at addr. */
static size_t count_addr(const struct ebpf_trace *t, uint64_t addr)
{
	size_t i, n = 0;

	for (i = 0; i < t->nev; i++) {
		if (is_allocator_kind(t->ev[i].kind) && t->ev[i].addr == addr) {
			n++;
		}
	}
	return n;
}

/* SC_PARTIAL (see scenarios.h). */
static void check_partial(const struct scenario *sc,
			  const struct ebpf_trace *t)
{
	struct ebpf_trace seen = *t;
	size_t i, n = 0, nalloc = 0;
	int bad;

	seen.exp = calloc(t->nexp ? t->nexp : 1, sizeof(*seen.exp));
	ck_assert_ptr_nonnull(seen.exp);
	for (i = 0; i < t->nexp; i++) {
		const struct ebpf_expect *x = &t->exp[i];

		if (line_seen(sc, t, i)) {
			seen.exp[n++] = *x;
			continue;
		}
		ck_assert_msg(x->kind == MT_EV_FREE ||
				      ebpf_count_size(t, x->size) == 0,
			      "%s: an event of size %llu was recorded", sc->prog,
			      (unsigned long long)x->size);
		ck_assert_msg(count_addr(t, x->addr) == 0,
			      "%s: an event at %#llx (a %s the source cannot see) was recorded",
			      sc->prog, (unsigned long long)x->addr,
			      mt_event_kind_name((unsigned)x->kind));
	}
	seen.nexp = n;
	ck_assert_msg(n > 0, "%s: none of the seen sizes was reported:\n%s",
		      sc->prog, t->out);
	bad = ebpf_trace_check(&seen);
	ck_assert_msg(bad == 0, "%s: %d mismatches in %zu events (see above)",
		      sc->name, bad, t->nev);
	for (i = 0; i < t->nev; i++) {
		nalloc += is_allocator_kind(t->ev[i].kind);
	}
	ck_assert_msg(nalloc == n,
		      "%s: %zu allocator events recorded, expected only the %zu seen lines",
		      sc->name, nalloc, n);
	ck_assert_msg(!strstr(t->err, sc->prog), "%s named:\n%s", sc->prog,
		      t->err);
	free(seen.exp);
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
	case SC_DLOPEN_CXX:
		snprintf(arg, sizeof(arg), "%s",
			 ebpf_prog(".libs/libcxxlocal.so"));
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
	} else if (outcome == SC_PARTIAL) {
		check_partial(sc, &t);
	} else {
		check_refused(&t, sc->prog);
	}
	ebpf_trace_free(&t);
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/scenarios.c - see scenarios.h.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

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
	{ "glibc", "alloc-basic", SC_PLAIN, 23, 0, SC_SEEN, SC_SEEN, NULL },
	{ "glibc-static", "alloc-static", SC_PLAIN, 23, 0, SC_SEEN,
	  SC_REFUSED, NULL },
	/* the program's own mmap/mremap/munmap/sbrk go through libc */
	{ "syscalls", "alloc-mmap", SC_PLAIN, 6, 0, SC_SEEN, SC_SEEN, NULL },
	{ "constructor", "alloc-ctor", SC_PLAIN, 2, 0, SC_SEEN, SC_SEEN, NULL },
	/* exit(): an atexit handler and a destructor */
	{ "exit", "alloc-exit", SC_PLAIN, 4, 0, SC_SEEN, SC_SEEN, NULL },
	{ "lib-constructor", "alloc-libctor", SC_PLAIN, 2, 1, SC_SEEN,
	  SC_SEEN, NULL },
	{ "cxx", "alloc-cxx", SC_PLAIN, 27, 0, SC_SEEN, SC_SEEN, NULL },
	/* 9 levels (0..8) x 2 lines + 4 threads x 2 lines */
	{ "fork-tree", "alloc-forktree", SC_PLAIN, 26, 0, SC_SEEN, SC_SEEN,
	  NULL },
	{ "shell-exec", NULL, SC_SHELL, 25, 0, SC_SEEN, SC_SEEN, NULL },
	{ "dlopen", "alloc-dlopen", SC_DLOPEN, 2, 0, SC_SEEN, SC_SEEN, NULL },
	/* a C program opens a C++ library with RTLD_LOCAL, as python opens
	 * its extension modules: libstdc++ is in that library's scope only
	 * (the preload hooks crashed on it); one new throws through them */
	{ "dlopen-cxx-local", "alloc-dlopen-cxx", SC_DLOPEN_CXX, 9, 0,
	  SC_SEEN, SC_SEEN, NULL },
	{ "jemalloc", "alloc-jemalloc", SC_PLAIN, 16, 1, SC_SEEN, SC_SEEN,
	  NULL },
	{ "jemalloc-static", "alloc-jemalloc-static", SC_PLAIN, 16, 1,
	  SC_SEEN, SC_REFUSED, NULL },
	{ "tcmalloc", "alloc-tcmalloc", SC_PLAIN, 11, 1, SC_SEEN, SC_SEEN,
	  NULL },
	{ "mimalloc", "alloc-mimalloc", SC_PLAIN, 13, 1, SC_SEEN, SC_SEEN,
	  NULL },
	{ "mimalloc-static", "alloc-mimalloc-static", SC_PLAIN, 13, 1,
	  SC_SEEN, SC_PARTIAL, mimalloc_static_seen },
	{ "toggle", "alloc-toggle", SC_CONTROL, 4, 0, SC_SEEN, SC_SEEN, NULL },
	/* an allocator of the executable's own, exported: named */
	{ "own-malloc", "alloc-own-malloc", SC_PLAIN, 2, 0, SC_SEEN,
	  SC_REFUSED, NULL },
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

/* SC_PARTIAL (see scenarios.h). With others, the command's process had
 * events of its own before it became the program (unshare's, between
 * its fork and its exec, under the pid the program reports): the
 * allocator events are not counted then. */
static void check_partial(const struct scenario *sc,
			  const struct ebpf_trace *t, int others)
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
	ck_assert_msg(others || nalloc == n,
		      "%s: %zu allocator events recorded, expected only the %zu seen lines",
		      sc->name, nalloc, n);
	ck_assert_msg(!strstr(t->err, sc->prog), "%s named:\n%s", sc->prog,
		      t->err);
	free(seen.exp);
}

/* The command of a scenario, as the program is run without memtrack. */
struct command {
	char prog[4096], arg[8192], sock[64];
	const char *argv[4];
	const char *opts[4];
};

static void command_init(const struct scenario *sc, struct command *c)
{
	memset(c, 0, sizeof(*c));
	c->argv[0] = c->prog;
	if (sc->prog) {
		snprintf(c->prog, sizeof(c->prog), "%s", ebpf_prog(sc->prog));
	}
	switch (sc->how) {
	case SC_PLAIN:
		break;
	case SC_SHELL:
		/* the shell forks, the child execs; the second runs in
		 * place (ebpf_prog() returns static storage) */
		snprintf(c->prog, sizeof(c->prog), "%s",
			 access("/bin/bash", X_OK) == 0 ? "/bin/bash" :
							  "/bin/sh");
		snprintf(c->arg, sizeof(c->arg), "%s; ",
			 ebpf_prog("alloc-basic"));
		strncat(c->arg, ebpf_prog("alloc-ctor"),
			sizeof(c->arg) - strlen(c->arg) - 1);
		c->argv[1] = "-c";
		c->argv[2] = c->arg;
		break;
	case SC_DLOPEN:
		snprintf(c->arg, sizeof(c->arg), "%s",
			 ebpf_prog(".libs/libdlalloc.so"));
		c->argv[1] = c->arg;
		break;
	case SC_DLOPEN_CXX:
		snprintf(c->arg, sizeof(c->arg), "%s",
			 ebpf_prog(".libs/libcxxlocal.so"));
		c->argv[1] = c->arg;
		break;
	case SC_CONTROL:
		snprintf(c->sock, sizeof(c->sock), "/tmp/mt-sc-ctl-%d",
			 (int)getpid());
		c->opts[0] = "--start-disabled";
		c->opts[1] = "--control";
		c->opts[2] = c->sock;
		c->argv[1] = c->sock;
		break;
	}
}

/* name in $PATH (static storage), or NULL */
static const char *find_tool(const char *name)
{
	static char path[4096];
	const char *dirs = getenv("PATH"), *end;

	for (dirs = dirs ? dirs : "/usr/bin:/bin"; *dirs; dirs = end + !!*end) {
		end = strchrnul(dirs, ':');
		snprintf(path, sizeof(path), "%.*s/%s", (int)(end - dirs), dirs,
			 name);
		if (end > dirs && access(path, X_OK) == 0) {
			return path;
		}
	}
	return NULL;
}

/*
 * A stand-in for memtrack's control socket at path, for the runs without
 * memtrack (alloc-toggle connects first and wants "ok" to each command):
 * a child that answers every line with "ok". Returns its pid.
 */
static pid_t control_standin(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[256];
	ssize_t n, i;
	int lfd, fd;
	pid_t pid;

	unlink(path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fd = accept(lfd, NULL, NULL);
		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0) {
			for (i = 0; i < n; i++) {
				if (buf[i] == '\n' && write(fd, "ok\n", 3) != 3) {
					_exit(1);
				}
			}
		}
		_exit(0);
	}
	close(lfd);
	return pid;
}

static void control_standin_end(pid_t pid, const char *path)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

/* Run argv without memtrack, stdout to /dev/null; its wait status. */
static int run_alone(const char *const *argv)
{
	int status, fd;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		ck_assert_int_eq(errno, EINTR);
	}
	return status;
}

/* pre..., then c's command, run without memtrack (with a stand-in for
 * its control socket); the wait status. */
static int run_command(const struct command *c, const char *const *pre)
{
	const char *argv[16];
	pid_t standin = 0;
	size_t n = 0, i;
	int status;

	for (i = 0; pre[i]; i++) {
		argv[n++] = pre[i];
	}
	for (i = 0; c->argv[i]; i++) {
		argv[n++] = c->argv[i];
	}
	argv[n] = NULL;
	if (c->sock[0]) {
		standin = control_standin(c->sock);
	}
	status = run_alone(argv);
	if (standin) {
		control_standin_end(standin, c->sock);
	}
	return status;
}

#define MAX_NR 1024

/* The numbers of the calls in strace -n's output trace, one a line into
 * list; returns how many. */
static size_t write_calls(const char *trace, const char *list)
{
	static unsigned char seen[MAX_NR];
	char line[4096];
	size_t i, ncalls = 0;
	FILE *f;

	memset(seen, 0, sizeof(seen));
	f = fopen(trace, "r");
	ck_assert_ptr_nonnull(f);
	/* "PID [ NR] name(...": every call, resumed ones too */
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, "0123456789 ");
		unsigned long nr;

		if (*p == '[') {
			nr = strtoul(p + 1, NULL, 10);
			ck_assert_uint_lt(nr, MAX_NR);
			seen[nr] = 1;
		}
	}
	fclose(f);
#if defined(__x86_64__)
	/* uretprobe: the kernel's return-probe trampoline makes it in any
	 * program while BPF probes libc (another test beside this one);
	 * older kernels filter it as if the program had made it */
	seen[335] = 1;
#endif
	f = fopen(list, "w");
	ck_assert_ptr_nonnull(f);
	for (i = 0; i < MAX_NR; i++) {
		if (seen[i]) {
			fprintf(f, "%zu\n", i);
			ncalls++;
		}
	}
	ck_assert_int_eq(fclose(f), 0);
	return ncalls;
}

/*
 * The allow-list of c's command into list: every call strace -f sees it
 * make without memtrack, of all its processes and threads. The command
 * must then run under the list alone, so that a SIGSYS under memtrack is
 * what memtrack added.
 */
static void record_calls(const struct command *c, const char *list)
{
	char trace[] = "/tmp/mt-sc-strace-XXXXXX", sr[4096];
	const char *strace = find_tool("strace");
	const char *pre[8];
	size_t ncalls;
	int status, fd;

	ck_assert_msg(strace, "strace is missing (the quickstart installs it)");
	fd = mkstemp(trace);
	ck_assert_int_ge(fd, 0);
	close(fd);
	pre[0] = strace;
	pre[1] = "-f";
	pre[2] = "-qq";
	pre[3] = "-n";
	pre[4] = "-o";
	pre[5] = trace;
	pre[6] = NULL;
	status = run_command(c, pre);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "strace -f %s: wait status %#x", c->argv[0], status);
	ncalls = write_calls(trace, list);
	unlink(trace);
	ck_assert_msg(ncalls > 5, "strace saw %zu calls of %s", ncalls,
		      c->argv[0]);

	snprintf(sr, sizeof(sr), "%s", ebpf_prog("seccomp-run"));
	pre[0] = sr;
	pre[1] = list;
	pre[2] = "--";
	pre[3] = NULL;
	status = run_command(c, pre);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s does not run under the %zu calls strace saw it make (wait status %#x)",
		      c->argv[0], ncalls, status);
}

/* Can unshare with flags (argv, NULL-terminated, room for one more) run
 * here? A kernel or a security module may refuse user namespaces
 * (kernel.unprivileged_userns_clone, AppArmor's
 * restrict_unprivileged_userns): the case is skipped then, or fails
 * where every test is required (MEMTRACK_REQUIRE_BPF=1). */
static int may_unshare(const char **argv)
{
	const char *req = getenv("MEMTRACK_REQUIRE_BPF");
	size_t n;
	int status;

	for (n = 0; argv[n]; n++) {
	}
	argv[n] = "/bin/true";
	argv[n + 1] = NULL;
	status = run_alone(argv);
	argv[n] = NULL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		return 1;
	}
	ck_assert_msg(!req || strcmp(req, "1") != 0,
		      "%s %s... cannot run here (wait status %#x)", argv[0],
		      argv[1], status);
	fprintf(stderr, "%s %s... cannot run here: case skipped\n", argv[0],
		argv[1]);
	return 0;
}

/* A descriptor of this process's /proc, kept across exec, when it is of
 * our pid namespace (memtrack's: it runs in ours); else -1. */
static int our_proc(void)
{
	char link[32], want[32];
	ssize_t n;
	int fd = open("/proc", O_PATH | O_DIRECTORY);

	if (fd < 0) {
		return -1;
	}
	n = readlinkat(fd, "self", link, sizeof(link) - 1);
	snprintf(want, sizeof(want), "%d", (int)getpid());
	if (n <= 0 || (link[n] = '\0', strcmp(link, want))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* "memtrack: warning: ...: N events of processes in other pid namespaces
 * keep their namespace's ids": N, or 0 */
static unsigned long long ids_kept_said(const char *err)
{
	const char *at = strstr(err, " events of processes in other pid "
				     "namespaces keep their namespace's ids");

	while (at && at > err && at[-1] >= '0' && at[-1] <= '9') {
		at--;
	}
	return at ? strtoull(at, NULL, 10) : 0;
}

/*
 * The ids in the recording against those the program reported (SC_PIDNS,
 * SC_USERNS). Each line has the ids memtrack's namespace sees and the
 * namespace's own, which differ. An event that carries a line's
 * namespace ids instead of memtrack's is rewritten to memtrack's, so that
 * the event-for-event check that follows looks at everything else; how
 * many there were is checked against ids.
 */
static void check_ns_ids(const struct scenario *sc, struct ebpf_trace *t,
			 enum scenario_ids ids)
{
	unsigned long long said = ids_kept_said(t->err);
	size_t i, j, kept = 0;

	for (i = 0; i < t->nexp; i++) {
		const struct ebpf_expect *x = &t->exp[i];

		ck_assert_msg(x->pid > 0 && x->tid > 0,
			      "%s: line %zu has no ids of memtrack's namespace:\n%s",
			      sc->name, i + 1, t->out);
		ck_assert_msg(x->ns_pid != x->pid,
			      "%s: line %zu is of memtrack's pid namespace:\n%s",
			      sc->name, i + 1, t->out);
	}
	for (i = 0; i < t->nev; i++) {
		struct mt_event *e = &t->ev[i];
		const struct ebpf_expect *inner = NULL;

		for (j = 0; j < t->nexp; j++) {
			const struct ebpf_expect *x = &t->exp[j];

			if (x->pid == e->pid && x->tid == e->tid) {
				inner = NULL;
				break;
			}
			if (x->ns_pid == e->pid && x->ns_tid == e->tid) {
				inner = x;
			}
		}
		if (inner) {
			e->pid = inner->pid;
			e->tid = inner->tid;
			kept++;
		}
	}
	if (ids == SC_IDS_OURS) {
		ck_assert_msg(kept == 0,
			      "%s: %zu events carry the ids of the program's pid namespace, not memtrack's:\n%s",
			      sc->name, kept, t->err);
		return;
	}
	ck_assert_msg(kept <= said,
		      "%s: %zu events carry the ids of the program's pid namespace, memtrack said %llu:\n%s",
		      sc->name, kept, said, t->err);
	if (kept) {
		fprintf(stderr,
			"%s: %zu events kept the namespace's ids (memtrack said %llu)\n",
			sc->name, kept, said);
	}
}

void scenario_run_confined(const struct scenario *sc, const char *source,
			   enum scenario_outcome outcome,
			   enum scenario_confine how, enum scenario_ids ids)
{
	static const char *const pidns[] = { "--pid", "--fork",
					     "--mount-proc", NULL };
	static const char *const userns[] = { "--user", "--map-root-user",
					      "--pid", "--fork",
					      "--mount-proc", NULL };
	char list[] = "/tmp/mt-sc-calls-XXXXXX", fdnum[16], sr[4096];
	const char *argv[24];
	struct command c;
	struct ebpf_trace t;
	size_t n = 0, i;
	int bad, proc = -1, fd;

	if (sc->optional && !have_prog(sc->prog)) {
		return;
	}
	command_init(sc, &c);
	if (how == SC_PIDNS || how == SC_USERNS) {
		const char *const *flags = how == SC_PIDNS ? pidns : userns;

		argv[n] = find_tool("unshare");
		ck_assert_msg(argv[n], "unshare (util-linux) is missing");
		n++;
		for (i = 0; flags[i]; i++) {
			argv[n++] = flags[i];
		}
		argv[n] = NULL;
		if (!may_unshare(argv)) {
			return;
		}
	}
	if (how != SC_UNCONFINED) {
		proc = our_proc();
		ck_assert_msg(proc >= 0,
			      "/proc is not of this process's pid namespace");
		snprintf(fdnum, sizeof(fdnum), "%d", proc);
		setenv("MT_REPORT_PROC", fdnum, 1);
	}
	if (how == SC_SECCOMP) {
		fd = mkstemp(list);
		ck_assert_int_ge(fd, 0);
		close(fd);
		record_calls(&c, list);
		snprintf(sr, sizeof(sr), "%s", ebpf_prog("seccomp-run"));
		argv[n++] = sr;
		argv[n++] = list;
		argv[n++] = "--";
	}
	for (i = 0; c.argv[i]; i++) {
		argv[n++] = c.argv[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(ebpf_trace_run_source(source, c.opts, argv, &t), 0);
	if (how == SC_SECCOMP) {
		unlink(list);
	}
	if (proc >= 0) {
		unsetenv("MT_REPORT_PROC");
		close(proc);
	}
	if (c.sock[0]) {
		unlink(c.sock);
	}
	if (outcome == SC_SIGSYS) {
		ck_assert_msg(t.status == 128 + SIGSYS,
			      "%s: memtrack exited %d, not %d (SIGSYS): fixed? then the scenario's outcome is to change",
			      sc->name, t.status, 128 + SIGSYS);
		ebpf_trace_free(&t);
		return;
	}
	ck_assert_msg(t.status == 0, "%s: memtrack exited %d%s: %s", sc->name,
		      t.status,
		      t.status == 128 + SIGSYS ?
			      " (SIGSYS: a call outside the allow-list)" :
			      "",
		      t.err);
	ck_assert_msg(t.nexp >= sc->min_expect,
		      "%s: the program reported %zu calls, expected %zu:\n%s",
		      sc->name, t.nexp, sc->min_expect, t.out);
	if (how == SC_PIDNS || how == SC_USERNS) {
		check_ns_ids(sc, &t, ids);
	}
	if (outcome == SC_SEEN) {
		bad = ebpf_trace_check(&t);
		ck_assert_msg(bad == 0, "%s: %d mismatches in %zu events (see above)",
			      sc->name, bad, t.nev);
	} else if (outcome == SC_PARTIAL) {
		check_partial(sc, &t, how == SC_PIDNS || how == SC_USERNS);
	} else {
		check_refused(&t, sc->prog);
	}
	ebpf_trace_free(&t);
}

void scenario_run(const struct scenario *sc, const char *source,
		  enum scenario_outcome outcome)
{
	scenario_run_confined(sc, source, outcome, SC_UNCONFINED,
			      SC_IDS_OURS);
}

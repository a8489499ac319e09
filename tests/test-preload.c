/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload.c - the preload source end to end. Every scenario of
 * tests/scenarios.c under --source preload, as it is, in a pid namespace
 * of its own and under a seccomp allow-list of its own calls; then what
 * only an interposer has: files it cannot reach named on memtrack's
 * stderr (static, set-uid, a cleared environment), signal handlers that
 * allocate, an exception thrown through the hook of operator new, fork
 * from a threaded process, vfork children that allocate, the traced
 * process killed, memtrack killed while producers wait for room.
 *
 * Needs neither root nor BPF: libc mode (syscalls=libc), which root would
 * not get by default; tests/test-preload-syscalls.c has the BPF mode.
 * The allow-lists come from strace, which must be installed.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "ebpf-testlib.h"
#include "scenarios.h"

#define SOURCE "preload:syscalls=libc"

START_TEST(test_scenario)
{
	scenario_run(&scenarios[_i], SOURCE, scenarios[_i].preload);
}
END_TEST

/*
 * The scenario table in a pid namespace of its own (unshare --pid --fork
 * --mount-proc as root; --user --map-root-user, as without root, always),
 * the same event for event, with the ids memtrack's namespace sees: in
 * libc mode each thread waits for memtrack to have read its hello and
 * found it in /proc (shm.h, PL_HELLO_TAG), so even a program that ends
 * within a millisecond has them.
 */
START_TEST(test_scenario_pidns)
{
	const struct scenario *sc = &scenarios[_i];

	if (geteuid() == 0) {
		scenario_run_confined(sc, SOURCE, sc->preload, SC_PIDNS,
				      SC_IDS_OURS);
	}
	scenario_run_confined(sc, SOURCE, sc->preload, SC_USERNS,
			      SC_IDS_OURS);
}
END_TEST

/* The scenario table under an allow-list of the calls each command makes
 * without memtrack: the same, event for event. */
START_TEST(test_scenario_seccomp)
{
	const struct scenario *sc = &scenarios[_i];

	scenario_run_confined(sc, SOURCE, sc->preload, SC_SECCOMP,
			      SC_IDS_OURS);
}
END_TEST

/* Run argv under the preload source; returns the trace (checked: memtrack
 * ran and exited 0). */
static void run(const char *const *opts, const char *const *argv,
		struct ebpf_trace *t)
{
	ck_assert_int_eq(ebpf_trace_run_source(SOURCE, opts, argv, t), 0);
	ck_assert_msg(t->status == 0, "memtrack exited %d: %s", t->status,
		      t->err);
}

static void check_exact(const char *const *argv, size_t min_expect)
{
	struct ebpf_trace t;
	int bad;

	run(NULL, argv, &t);
	ck_assert_msg(t.nexp >= min_expect,
		      "the program reported %zu calls, expected %zu:\n%s",
		      t.nexp, min_expect, t.out);
	bad = ebpf_trace_check(&t);
	ck_assert_msg(bad == 0, "%d mismatches in %zu events (see above)",
		      bad, t.nev);
	ebpf_trace_free(&t);
}

/* Nothing of what the program reported was recorded, and memtrack named
 * file (once) with why and the advice. */
static void check_refused(const struct ebpf_trace *t, const char *file,
			  const char *why)
{
	const char *at;
	size_t i;

	ck_assert_msg(t->nexp > 0, "the program reported nothing:\n%s",
		      t->out);
	for (i = 0; i < t->nexp; i++) {
		ck_assert_msg(ebpf_count_size(t, t->exp[i].size) == 0,
			      "an event of size %llu was recorded",
			      (unsigned long long)t->exp[i].size);
	}
	at = strstr(t->err, file);
	ck_assert_msg(at && strstr(at, why) && strstr(at, "--source ebpf"),
		      "memtrack did not say '%s: ... %s ... --source ebpf':\n%s",
		      file, why, t->err);
	ck_assert_msg(!strstr(at + strlen(file), file),
		      "%s named more than once:\n%s", file, t->err);
}

static const char *shell(void)
{
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/* The command's child execs a static executable: the exec wrapper says
 * so (the command itself is the glibc-static scenario). */
START_TEST(test_static_child)
{
	char cmd[4200];
	const char *argv[] = { shell(), "-c", cmd, NULL };
	const char *prog = ebpf_prog("alloc-static");
	struct ebpf_trace t;

	snprintf(cmd, sizeof(cmd), "%s; true", prog);
	run(NULL, argv, &t);
	check_refused(&t, prog, "static executable");
	ebpf_trace_free(&t);
}
END_TEST

/* The loader ignores LD_PRELOAD for a set-user-ID program that changes
 * the user: as root, a copy of alloc-basic owned by nobody with u+s
 * (ebpf_setuid_copy()); otherwise a set-uid program of the system. */
START_TEST(test_setuid)
{
	static const char *const system_ones[] = {
		"/usr/bin/su", "/bin/su", "/usr/bin/mount", "/bin/mount",
		"/usr/bin/newgrp", "/usr/bin/chfn",
	};
	char dir[PATH_MAX - 64], path[PATH_MAX], cmd[PATH_MAX + 16];
	const char *argv[] = { shell(), "-c", cmd, NULL };
	struct ebpf_trace t;
	struct stat st;
	size_t i;

	if (geteuid() == 0) {
		ck_assert_msg(ebpf_setuid_copy(dir, sizeof(dir), path, sizeof(path)),
			      "cannot make a set-uid copy of alloc-basic");
		/* as the command, and as a child of it */
		argv[0] = path;
		argv[1] = NULL;
		run(NULL, argv, &t);
		check_refused(&t, path, "set-user-ID");
		ebpf_trace_free(&t);

		argv[0] = shell();
		argv[1] = "-c";
		snprintf(cmd, sizeof(cmd), "%s; true", path);
		run(NULL, argv, &t);
		check_refused(&t, path, "set-user-ID");
		ebpf_trace_free(&t);
		unlink(path);
		rmdir(dir);
		return;
	}
	for (i = 0; i < sizeof(system_ones) / sizeof(system_ones[0]); i++) {
		if (stat(system_ones[i], &st) == 0 && (st.st_mode & S_ISUID) &&
		    st.st_uid != geteuid()) {
			break;
		}
	}
	if (i == sizeof(system_ones) / sizeof(system_ones[0])) {
		fprintf(stderr, "no set-uid program to run: case skipped\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s --version >/dev/null; true",
		 system_ones[i]);
	run(NULL, argv, &t);
	ck_assert_msg(strstr(t.err, system_ones[i]) &&
			      strstr(t.err, "set-user-ID") &&
			      strstr(t.err, "--source ebpf"),
		      "memtrack did not name %s:\n%s", system_ones[i], t.err);
	ebpf_trace_free(&t);
}
END_TEST

/* env -i drops LD_PRELOAD and the memory's variable before exec. */
START_TEST(test_env_cleared)
{
	char prog[4096];
	const char *argv[] = { "/usr/bin/env", "-i", prog, NULL };
	struct ebpf_trace t;

	if (access(argv[0], X_OK)) {
		argv[0] = "/bin/env";
	}
	snprintf(prog, sizeof(prog), "%s", ebpf_prog("alloc-basic"));
	run(NULL, argv, &t);
	check_refused(&t, prog, "without LD_PRELOAD");
	ebpf_trace_free(&t);
}
END_TEST

/* The descriptors of the shared memory closed, or another file at their
 * numbers: the process reaches the memory through /proc/PID/fd/N. */
START_TEST(test_fds_closed)
{
	char prog[4096];
	const char *closed[] = { ebpf_prog("closefds-exec"), prog, NULL };
	const char *replaced[] = { ebpf_prog("closefds-exec"), "-n", prog,
				   NULL };

	snprintf(prog, sizeof(prog), "%s", ebpf_prog("alloc-basic"));
	check_exact(closed, 23);
	closed[0] = replaced[0] = ebpf_prog("closefds-exec");
	check_exact(replaced, 23);
}
END_TEST

START_TEST(test_signal_handler)
{
	const char *argv[] = { ebpf_prog("alloc-signal"), NULL };

	check_exact(argv, 400);
}
END_TEST

/* std::bad_alloc thrown by the real operator new unwinds through the
 * hook; the thread's later allocations are recorded as before. */
START_TEST(test_throw)
{
	const char *argv[] = { ebpf_prog("alloc-throw"), NULL };

	check_exact(argv, 18);
}
END_TEST

START_TEST(test_fork_threads)
{
	const char *argv[] = { ebpf_prog("alloc-forkthreads"), NULL };

	check_exact(argv, 40);
}
END_TEST

START_TEST(test_vfork)
{
	const char *argv[] = { ebpf_prog("alloc-vfork"), NULL };

	check_exact(argv, 10);
}
END_TEST

/* The exec wrappers look at a file before exec: a FIFO must not hold
 * them in open(2) waiting for a writer (issue 27). exec-fifo execs one,
 * gets EACCES as without memtrack, and goes on (its alarm ends a hang). */
START_TEST(test_exec_fifo)
{
	const char *argv[] = { ebpf_prog("exec-fifo"), NULL };

	check_exact(argv, 2);
}
END_TEST

/* A FIFO as the command: memtrack's own look at it (the source's, before
 * it spawns) must not wait either; the exit status is a shell's, 126. */
START_TEST(test_command_fifo)
{
	char dir[] = "/tmp/mt-fifo-XXXXXX", path[64], *cmd, *out, *err;
	int status;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0700), 0);
	ck_assert_int_eq(chmod(path, 0755), 0);
	/* KILL: memtrack blocks SIGTERM while it waits in open(2) */
	ck_assert_int_ge(asprintf(&cmd, "timeout -s KILL 10 %s/memtrack --source %s --sink file:/dev/null -- %s",
				  ebpf_builddir(), SOURCE, path), 0);
	status = ebpf_run_shell(cmd, &out, &err);
	unlink(path);
	rmdir(dir);
	ck_assert_msg(status == 126, "%s: exit %d, want 126 (a hang is 137):\n%s",
		      cmd, status, err);
	ck_assert_msg(strstr(err, path) && strstr(err, "Permission denied"),
		      "memtrack did not say why:\n%s", err);
	free(cmd);
	free(out);
	free(err);
}
END_TEST

/* A non-PIE executable that takes malloc's address has a canonical PLT
 * entry for it, which the loader's lookup returns: not a malloc of its
 * own, so no warning, and every allocation recorded (issue 27). */
static void check_no_own_malloc_warning(const char *const *argv,
					size_t min_expect)
{
	struct ebpf_trace t;

	run(NULL, argv, &t);
	ck_assert_msg(!strstr(t.err, "defines malloc itself"),
		      "%s: a false warning:\n%s", argv[0], t.err);
	ck_assert_msg(t.nexp >= min_expect,
		      "the program reported %zu calls, expected %zu:\n%s",
		      t.nexp, min_expect, t.out);
	ck_assert_int_eq(ebpf_trace_check(&t), 0);
	ebpf_trace_free(&t);
}

START_TEST(test_malloc_address)
{
	const char *argv[] = { ebpf_prog("alloc-malloc-address"), NULL };

	check_no_own_malloc_warning(argv, 2);
}
END_TEST

/* Debian's python3.11 is such an executable (no events to compare) */
START_TEST(test_python_malloc_address)
{
	const char *argv[] = { "/usr/bin/python3.11", "-c", "pass", NULL };

	if (access(argv[0], X_OK)) {
		fprintf(stderr, "%s not installed: case skipped\n", argv[0]);
		return;
	}
	check_no_own_malloc_warning(argv, 0);
}
END_TEST

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The traced process killed while its threads write: what it reported
 * before is all there, and the slots its threads held do not hold up the
 * end of the recording. */
START_TEST(test_kill_traced)
{
	const char *argv[] = { ebpf_prog("alloc-killme"), NULL };
	struct ebpf_trace t;
	uint64_t t0 = now_ms();
	char *out = NULL;
	int pid = 0, bad;

	ck_assert_int_eq(ebpf_trace_start(SOURCE, NULL, argv, &t), 0);
	while (now_ms() - t0 < 10000) {
		free(out);
		out = ebpf_trace_peek(&t);
		if (out && strstr(out, "ready\n")) {
			break;
		}
		usleep(10000);
	}
	ck_assert_msg(out && strstr(out, "ready\n"), "alloc-killme: %s", out);
	ck_assert_int_eq(sscanf(out, "Malloc %d", &pid), 1);
	free(out);
	usleep(200000); /* the threads write all the time */
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	t0 = now_ms();
	ck_assert_int_eq(ebpf_trace_finish(&t), 0);
	ck_assert_msg(now_ms() - t0 < 5000, "memtrack took %llu ms to end",
		      (unsigned long long)(now_ms() - t0));
	ck_assert_msg(t.status == 128 + SIGKILL, "memtrack exited %d: %s",
		      t.status, t.err);
	ck_assert_msg(!strstr(t.err, "left unread"), "%s", t.err);
	ck_assert_uint_eq(t.nexp, 50);
	bad = ebpf_trace_check(&t);
	ck_assert_msg(bad == 0, "%d mismatches in %zu events", bad, t.nev);
	ebpf_trace_free(&t);
}
END_TEST

/* A ring of 64 events and a reader that sleeps after each chunk:
 * producers wait, nothing is lost, and --stats says how they waited. */
START_TEST(test_no_loss)
{
	const char *opts[] = { "--ring-size", "4k", "--throttle-us", "2000",
			       "--stats", NULL };
	const char *argv[] = { ebpf_prog("alloc-stress"), "3000", NULL };
	struct ebpf_trace t;
	int i;

	run(opts, argv, &t);
	ck_assert_msg(!strstr(t.err, "lost"), "%s", t.err);
	ck_assert_msg(strstr(t.err, "producers waited for room"), "%s", t.err);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(ebpf_count_size(&t, 90000 + i), 3000);
	}
	ebpf_trace_free(&t);
}
END_TEST

/* The child of process pid named comm (memtrack's command: memtrack has
 * helper processes of its own among its children). */
static int child_of(int pid, const char *comm)
{
	char path[64], buf[1024], name[64], *p, *end;
	int fd, child = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	for (p = buf; !child; p = end) {
		long c = strtol(p, &end, 10);

		if (end == p) {
			break;
		}
		snprintf(path, sizeof(path), "/proc/%ld/comm", c);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			continue;
		}
		n = read(fd, name, sizeof(name) - 1);
		close(fd);
		if (n > 0) {
			name[n] = '\0';
			name[strcspn(name, "\n")] = '\0';
			if (!strcmp(name, comm)) {
				child = (int)c;
			}
		}
	}
	return child;
}

/* Is a thread of pid other than its main one asleep on a futex? Its
 * workers only sleep there when they wait for room in the ring. */
static int worker_waits(int pid)
{
	char path[384], buf[64];
	struct dirent *de;
	int fd, found = 0;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d) {
		return 0;
	}
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.' || atoi(de->d_name) == pid) {
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", pid,
			 de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			found = strstr(buf, "futex") != NULL;
		}
	}
	closedir(d);
	return found;
}

/* memtrack killed (SIGKILL) while the producers wait for room: they notice
 * and the program ends normally, soon. */
START_TEST(test_kill_memtrack)
{
	const char *opts[] = { "--ring-size", "4k", "--throttle-us", "200000",
			       NULL };
	const char *argv[] = { ebpf_prog("alloc-stress"), "20000", NULL };
	struct ebpf_trace t;
	uint64_t t0;
	int prog = 0, status, waited = 0;
	pid_t pid;

	/* the program comes back to us when memtrack dies */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(ebpf_trace_start(SOURCE, opts, argv, &t), 0);
	t0 = now_ms();
	while (now_ms() - t0 < 10000 && !waited) {
		if (!prog) {
			prog = child_of(t.pid, "alloc-stress");
		}
		waited = prog && worker_waits(prog);
		usleep(20000);
	}
	ck_assert_msg(waited, "no producer of %d waited for room", prog);
	ck_assert_int_eq(kill(t.pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(t.pid, &status, 0), t.pid);
	t0 = now_ms();
	for (;;) {
		pid = waitpid(prog, &status, WNOHANG);
		if (pid == prog || now_ms() - t0 > 10000) {
			break;
		}
		usleep(10000);
	}
	ck_assert_msg(pid == prog, "the program did not finish in 10 s");
	ck_assert_msg(now_ms() - t0 < 3000, "the program took %llu ms to end",
		      (unsigned long long)(now_ms() - t0));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the program ended with status %#x", status);
	close(t.ofd);
	close(t.efd);
	unlink(t.file);
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The fork-and-threads program under source: its exact events, and each
 * thread's timestamps in its own order and inside the run's window of
 * CLOCK_MONOTONIC. 0, or 1 when memtrack refused the source. */
static int check_clock(const char *source)
{
	const char *argv[] = { ebpf_prog("alloc-forkthreads"), NULL };
	struct { int32_t tid; uint64_t ts; } last[256];
	size_t nlast = 0, i, j;
	struct ebpf_trace t;
	uint64_t t0, t1;
	int bad;

	t0 = mono_ns();
	ck_assert_int_eq(ebpf_trace_run_source(source, NULL, argv, &t), 0);
	t1 = mono_ns();
	if (t.status != 0 && strstr(t.err, "option clock=tsc:")) {
		ebpf_trace_free(&t);
		return 1;
	}
	ck_assert_msg(t.status == 0, "%s: memtrack exited %d: %s", source,
		      t.status, t.err);
	ck_assert_uint_ge(t.nexp, 40);
	bad = ebpf_trace_check(&t);
	ck_assert_msg(bad == 0, "%s: %d mismatches in %zu events", source, bad,
		      t.nev);
	for (i = 0; i < t.nev; i++) {
		const struct mt_event *e = &t.ev[i];

		ck_assert_msg(e->timestamp >= t0 && e->timestamp <= t1,
			      "%s: event %zu at %llu, the run was %llu..%llu",
			      source, i, (unsigned long long)e->timestamp,
			      (unsigned long long)t0, (unsigned long long)t1);
		for (j = 0; j < nlast && last[j].tid != e->tid; j++) {
		}
		if (j == nlast) {
			ck_assert_uint_lt(nlast, 256);
			last[nlast].tid = e->tid;
			last[nlast++].ts = 0;
		}
		ck_assert_msg(e->timestamp >= last[j].ts,
			      "%s: thread %d's event %zu at %llu, after %llu",
			      source, (int)e->tid, i,
			      (unsigned long long)e->timestamp,
			      (unsigned long long)last[j].ts);
		last[j].ts = e->timestamp;
	}
	ebpf_trace_free(&t);
	return 0;
}

/* Both clocks (source arg clock=): the same events, in time. clock=tsc is
 * refused, by name, only where the kernel does not use the TSC. */
START_TEST(test_clocks)
{
	ck_assert_int_eq(check_clock("preload:syscalls=libc,clock=monotonic"),
			 0);
	if (check_clock("preload:syscalls=libc,clock=tsc")) {
		fprintf(stderr, "test_clocks: clock=tsc refused here\n");
	}
}
END_TEST

START_TEST(test_bad_options)
{
	ck_assert(ebpf_memtrack_refuses("--source preload:clock=rdtsc",
					"unknown option 'clock=rdtsc'"));
	ck_assert(ebpf_memtrack_refuses("--source preload:bogus=1",
					"unknown option 'bogus=1'"));
	/* the host knows it takes none (ABI 1.2 flags): a usage error */
	ck_assert(ebpf_memtrack_refuses("--source preload --high-watermark 50%",
					"--high-watermark does not apply to source 'preload'"));
	ck_assert(ebpf_memtrack_refuses("--source preload:high-watermark=50%",
					"no watermarks"));
	ck_assert(ebpf_memtrack_refuses("--source preload:stack-depth=0",
					"from 1 to 127"));
	ck_assert(ebpf_memtrack_refuses("--source preload --ring-size 3000",
					"a power of two"));
}
END_TEST

static Suite *preload_suite(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("trace");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_scenario, 0, (int)nscenarios);
	tcase_add_loop_test(tc, test_scenario_pidns, 0, (int)nscenarios);
	tcase_add_loop_test(tc, test_scenario_seccomp, 0, (int)nscenarios);
	tcase_add_test(tc, test_static_child);
	tcase_add_test(tc, test_setuid);
	tcase_add_test(tc, test_env_cleared);
	tcase_add_test(tc, test_fds_closed);
	tcase_add_test(tc, test_signal_handler);
	tcase_add_test(tc, test_throw);
	tcase_add_test(tc, test_fork_threads);
	tcase_add_test(tc, test_vfork);
	tcase_add_test(tc, test_exec_fifo);
	tcase_add_test(tc, test_command_fifo);
	tcase_add_test(tc, test_malloc_address);
	tcase_add_test(tc, test_python_malloc_address);
	tcase_add_test(tc, test_kill_traced);
	tcase_add_test(tc, test_no_loss);
	tcase_add_test(tc, test_kill_memtrack);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_clocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(preload_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

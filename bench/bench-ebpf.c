/* SPDX-License-Identifier: MIT */
/*
 * bench-ebpf [-n PAIRS] [-r ROUNDS]: what memtrack's eBPF source costs the
 * traced program beyond the traps themselves.
 *
 * The workload (bench-ebpf-work) times N malloc/free pairs on one thread.
 * It runs alternately
 *   - under do-nothing BPF programs on the same probes as memtrack's (a
 *     uprobe and a uretprobe on malloc, a uprobe on free): the floor, what
 *     any uprobe-based tracer pays;
 *   - under `memtrack --source ebpf` writing a real recording.
 * Alternating spreads machine noise over both; medians are compared.
 * memtrack's watchdog closes its probes after memtrack has exited, which
 * takes a while (one RCU grace period per probe): each floor round waits
 * for it, or its workload would pay memtrack's traps too.
 * Goal: memtrack <= 1.15 x the floor.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <bpf/libbpf.h>

#include "null.skel.h"

static const char *builddir;

/* Run argv, return the number the workload printed (ns), or 0. */
static unsigned long long run(char *const argv[])
{
	unsigned long long ns = 0;
	int pfd[2], status;
	char buf[64];
	ssize_t n;
	pid_t pid;

	if (pipe(pfd)) {
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		ns = strtoull(buf, NULL, 10);
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s failed (status %#x)\n", argv[0], status);
		return 0;
	}
	return ns;
}

/* bench/wait-watchdogs.sh: until no memtrack watchdog is alive (it prints
 * nothing on stdout, so run() returns 0). */
static void wait_watchdogs(void)
{
	char sh[] = "/bin/sh", script[] = MT_WAIT_WATCHDOGS;
	char *argv[] = { sh, script, NULL };

	run(argv);
}

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a;
	unsigned long long y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static struct bpf_link *attach(struct bpf_program *prog, const char *func,
			       int ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func,
		    .retprobe = ret);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, -1, "libc.so.6", 0,
					       &opts);
	if (!link) {
		fprintf(stderr, "cannot attach to %s: %s\n", func,
			strerror(errno));
	}
	return link;
}

int main(int argc, char **argv)
{
	char work[4096], mt[4096], npairs[32], out[] = "/tmp/bench-ebpf-XXXXXX";
	char sink[64];
	unsigned long long *tf, *tm, mf, mm;
	struct bpf_link *links[3] = { NULL };
	struct null_bpf *skel;
	long pairs = 200000;
	int rounds = 5, i, c, fd;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		switch (c) {
		case 'n':
			pairs = atol(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-n PAIRS] [-r ROUNDS]\n",
				argv[0]);
			return 2;
		}
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench-ebpf: needs root; skipped\n");
		return 77;
	}
	builddir = getenv("MT_BUILDDIR") ? getenv("MT_BUILDDIR") : ".";
	snprintf(work, sizeof(work), "%s/bench/bench-ebpf-work", builddir);
	snprintf(mt, sizeof(mt), "%s/memtrack", builddir);
	snprintf(npairs, sizeof(npairs), "%ld", pairs);
	fd = mkstemp(out);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	snprintf(sink, sizeof(sink), "file:%s", out);

	skel = null_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "cannot load the null BPF programs\n");
		return 1;
	}
	tf = calloc((size_t)rounds, sizeof(*tf));
	tm = calloc((size_t)rounds, sizeof(*tm));
	if (!tf || !tm) {
		return 1;
	}
	for (i = 0; i < rounds; i++) {
		char *wargv[] = { work, npairs, NULL };
		char *margv[] = { mt, "-q", "--source", "ebpf", "--sink", sink,
				  "--", work, npairs, NULL };

		wait_watchdogs();
		links[0] = attach(skel->progs.null_enter, "malloc", 0);
		links[1] = attach(skel->progs.null_exit, "malloc", 1);
		links[2] = attach(skel->progs.null_enter, "free", 0);
		if (!links[0] || !links[1] || !links[2]) {
			return 1;
		}
		tf[i] = run(wargv);
		for (c = 0; c < 3; c++) {
			bpf_link__destroy(links[c]);
		}
		tm[i] = run(margv);
		if (!tf[i] || !tm[i]) {
			return 1;
		}
		fprintf(stderr, "round %d: floor %.1f ms, memtrack %.1f ms\n",
			i + 1, tf[i] / 1e6, tm[i] / 1e6);
	}
	unlink(out);
	null_bpf__destroy(skel);
	qsort(tf, (size_t)rounds, sizeof(*tf), cmp_u64);
	qsort(tm, (size_t)rounds, sizeof(*tm), cmp_u64);
	mf = tf[rounds / 2];
	mm = tm[rounds / 2];
	/* two events (malloc, free) and three traps per pair */
	printf("bench-ebpf: %ld malloc/free pairs, median of %d rounds\n",
	       pairs, rounds);
	printf("  floor (do-nothing probes): %8.1f ns/event\n",
	       (double)mf / (2.0 * pairs));
	printf("  memtrack --source ebpf:    %8.1f ns/event\n",
	       (double)mm / (2.0 * pairs));
	printf("  memtrack's own cost:       %8.1f ns/event\n",
	       ((double)mm - (double)mf) / (2.0 * pairs));
	printf("  ratio: %.3f (goal <= 1.15)\n", (double)mm / (double)mf);
	free(tf);
	free(tm);
	return 0;
}

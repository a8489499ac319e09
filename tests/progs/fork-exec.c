/* SPDX-License-Identifier: MIT */
/*
 * fork-exec MS PROG ARGS...: forks a child that waits MS milliseconds,
 * then makes one malloc of 10601 bytes and frees it; meanwhile execs PROG
 * with LD_PRELOAD set to $MT_TEST_LD_PRELOAD (run with LD_PRELOAD empty:
 * this image has no interposer, PROG's has). Under memtrack's auto the
 * parent is recorded by uprobes; PROG's interposer says hello while the
 * child, which has copies of the parent's uprobe filter, still runs.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "report.h"

int main(int argc, char **argv)
{
	const char *pre = getenv("MT_TEST_LD_PRELOAD");
	long ms;
	pid_t pid;

	if (argc < 3) {
		return 2;
	}
	ms = atol(argv[1]);
	pid = fork();
	if (pid < 0) {
		return 1;
	}
	if (!pid) {
		struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };
		void *p;

		nanosleep(&ts, NULL);
		p = malloc(10601);
		report("Malloc", p, 10601, NULL);
		free(p);
		report("Free", p, 0, NULL);
		return 0;
	}
	if (pre) {
		setenv("LD_PRELOAD", pre, 1);
	}
	execv(argv[2], argv + 2);
	return 127;
}

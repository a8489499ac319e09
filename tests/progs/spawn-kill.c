/* SPDX-License-Identifier: MIT */
/*
 * spawn-kill DIR N MAX_US SEED: N times, fork a child that execs DIR/sK
 * (K = 0..N-1, each a copy of a program on its own inode, so that the
 * eBPF source stops every one of them to attach) with LD_LIBRARY_PATH
 * DIR/libK (a libc copy there: the attach has many probes to make), then
 * kill it with SIGKILL after a pseudo-random 0..MAX_US microseconds: while
 * it is held for the attach, while its maps are read, while its probes are
 * attached, or after. Prints "reaped N" when every child was reaped.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static void spin_us(long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000L +
			 (t.tv_nsec - t0.tv_nsec) / 1000 <
		 us);
}

int main(int argc, char **argv)
{
	unsigned int seed;
	long n, max_us, k;
	int status;

	if (argc != 5) {
		fprintf(stderr, "usage: spawn-kill DIR N MAX_US SEED\n");
		return 2;
	}
	n = atol(argv[2]);
	max_us = atol(argv[3]);
	seed = (unsigned int)atol(argv[4]);
	for (k = 0; k < n; k++) {
		char prog[4096], lib[4096];
		pid_t pid;

		snprintf(prog, sizeof(prog), "%s/s%ld", argv[1], k);
		snprintf(lib, sizeof(lib), "%s/lib%ld", argv[1], k);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			setenv("LD_LIBRARY_PATH", lib, 1);
			execl(prog, prog, "5", (char *)NULL);
			_exit(127);
		}
		spin_us(max_us ? (long)(rand_r(&seed) % (unsigned)max_us) : 0);
		kill(pid, SIGKILL);
		/* every other one stays a zombie until the end: /proc then
		 * says ESRCH of it, where a reaped one is ENOENT */
		if (k % 2 && waitpid(pid, &status, 0) != pid) {
			perror("waitpid");
			return 1;
		}
	}
	for (k = 0; k < n / 2; k++) {
		if (wait(&status) < 0) {
			perror("wait");
			return 1;
		}
	}
	printf("reaped %ld\n", n);
	return 0;
}

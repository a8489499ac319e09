/* SPDX-License-Identifier: MIT */
/* A chain of forks DEPTH deep (fork, vfork+exec of itself, clone: all go
 * through sched_process_fork), threads allocating at the bottom. Every
 * process and thread allocates a size of its own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "report.h"

#define THREADS 4

/* Every thread, the main one too, meets here before any leaves: some of
 * them always wait (futex), whatever the timing. Without it the program's
 * system calls depended on it: under strace a pthread_join could find
 * its thread gone and make no futex call, and the seccomp scenario's
 * allow-list (the calls strace saw) then killed a faster run's join
 * (tests/scenarios.c, record_calls). */
static pthread_barrier_t met;

static void *thread_main(void *arg)
{
	size_t size = 40000 + (size_t)(uintptr_t)arg;
	void *p = malloc(size);

	report("Malloc", p, size, NULL);
	free(p);
	report("Free", p, 0, NULL);
	pthread_barrier_wait(&met);
	return NULL;
}

static int level(const char *self, int depth, int max)
{
	size_t size = 30000 + (size_t)depth;
	pthread_t th[THREADS];
	void *p;
	int i, status;
	pid_t pid;

	p = malloc(size);
	report("Malloc", p, size, NULL);
	free(p);
	report("Free", p, 0, NULL);
	if (depth == max) {
		pthread_barrier_init(&met, NULL, THREADS + 1);
		for (i = 0; i < THREADS; i++) {
			pthread_create(&th[i], NULL, thread_main,
				       (void *)(uintptr_t)i);
		}
		pthread_barrier_wait(&met);
		for (i = 0; i < THREADS; i++) {
			pthread_join(th[i], NULL);
		}
		return 0;
	}
	if (depth % 3 == 1) {
		/* vfork + exec of ourselves one level down */
		char d[16], m[16];

		snprintf(d, sizeof(d), "%d", depth + 1);
		snprintf(m, sizeof(m), "%d", max);
		pid = vfork();
		if (pid == 0) {
			execl(self, self, d, m, (char *)NULL);
			_exit(127);
		}
	} else {
		pid = fork();
		if (pid == 0) {
			_exit(level(self, depth + 1, max));
		}
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status)) {
		return 1;
	}
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 0;
	int max = argc > 2 ? atoi(argv[2]) : 8;

	return level("/proc/self/exe", depth, max);
}

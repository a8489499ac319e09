/* SPDX-License-Identifier: MIT */
/*
 * attach-busy DIR: 4 threads allocating all along, for a `memtrack --pid`
 * that attaches while they do (tests/test-attach-busy.sh). Thread t
 * mallocs blocks of 5000 + t bytes, frees each, and logs the time
 * (CLOCK_MONOTONIC, after the call returned) and the address of every
 * one (the first 400,000); "ready" goes to DIR/state once all run. At
 * SIGUSR2 they stop, and each thread's log goes to DIR/log-t as "tid ns
 * addr" lines.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define MAX_LOG 400000

struct entry {
	uint64_t ns;
	uintptr_t addr;
};

static struct entry logs[THREADS][MAX_LOG];
static size_t nlog[THREADS];
static pid_t tids[THREADS];
static volatile int stop, running;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *thread_main(void *arg)
{
	long t = (long)arg;
	size_t n = 0;

	tids[t] = (pid_t)syscall(SYS_gettid);
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	/* a full log ends the logging, not the allocating: the process
	 * runs until told to stop */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *p = malloc(5000 + (size_t)t);

		if (n < MAX_LOG) {
			logs[t][n].ns = now_ns();
			logs[t][n].addr = (uintptr_t)p;
			n++;
		}
		free(p);
		usleep(20);
	}
	nlog[t] = n;
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	char path[4096];
	FILE *f;
	long t;

	if (argc != 2) {
		fprintf(stderr, "usage: attach-busy DIR\n");
		return 2;
	}
	signal(SIGUSR2, on_usr2);
	for (t = 0; t < THREADS; t++) {
		if (pthread_create(&th[t], NULL, thread_main, (void *)t)) {
			return 1;
		}
	}
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < THREADS) {
		usleep(1000);
	}
	snprintf(path, sizeof(path), "%s/state", argv[1]);
	f = fopen(path, "w");
	if (!f) {
		return 1;
	}
	fputs("ready\n", f);
	fclose(f);
	for (t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
	}
	for (t = 0; t < THREADS; t++) {
		snprintf(path, sizeof(path), "%s/log-%ld", argv[1], t);
		f = fopen(path, "w");
		if (!f) {
			return 1;
		}
		for (size_t i = 0; i < nlog[t]; i++) {
			fprintf(f, "%d %llu %lx\n", (int)tids[t],
				(unsigned long long)logs[t][i].ns,
				(unsigned long)logs[t][i].addr);
		}
		fclose(f);
	}
	return 0;
}

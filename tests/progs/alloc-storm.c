/* SPDX-License-Identifier: MIT */
/*
 * Many processes allocating as fast as they can: alloc-storm P T N forks P
 * processes of T threads each; thread t of process p makes N malloc/free
 * pairs of size STORM_SIZE(p, t). Lines on stdout (write(2), whole lines):
 *   child P PID              as soon as process p is forked (by the root)
 *   done P PID START END     process p finished (CLOCK_MONOTONIC ns)
 *   tail PID ADDR            the root's last call, malloc(STORM_TAIL),
 *                            right before it exits
 * The root waits for all of them first. A child whose stdout is gone
 * (EPIPE) goes on: the test may have stopped reading.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define STORM_SIZE(p, t) (70000 + (p) * 16 + (t))
#define STORM_TAIL 77777

static long iterations;
static int proc_index;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char buf[160];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (write(1, buf, (size_t)n) < 0) {
		/* nobody reads: the events still matter */
	}
}

static void *worker(void *arg)
{
	size_t size = STORM_SIZE(proc_index, (int)(uintptr_t)arg);
	long i;

	for (i = 0; i < iterations; i++) {
		void *volatile p = malloc(size);

		free(p);
	}
	return NULL;
}

static void child(int p, int threads)
{
	pthread_t th[64];
	uint64_t start = now_ns();
	int t;

	proc_index = p;
	for (t = 0; t < threads; t++) {
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
	}
	for (t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
	}
	say("done %d %d %llu %llu\n", p, (int)getpid(),
	    (unsigned long long)start, (unsigned long long)now_ns());
	_exit(0);
}

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 4;
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	void *volatile tail;
	int p;

	iterations = argc > 3 ? atol(argv[3]) : 10000;
	if (threads > 64) {
		threads = 64;
	}
	signal(SIGPIPE, SIG_IGN);
	for (p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid == 0) {
			child(p, threads);
		}
		if (pid > 0) {
			say("child %d %d\n", p, (int)pid);
		}
	}
	while (wait(NULL) > 0) {
	}
	tail = malloc(STORM_TAIL);
	say("tail %d %p\n", (int)getpid(), tail);
	return 0;
}

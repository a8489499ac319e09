/* SPDX-License-Identifier: MIT */
/*
 * attach-target DIR: a running process for `memtrack --pid` to attach to
 * (tests/test-attach.sh).
 *
 * Before: 64 blocks of 1111 bytes, kept; their addresses go to
 * DIR/before, then "ready" to DIR/state. It then waits, allocating
 * nothing, until SIGUSR1 (sent once memtrack says it is attached).
 * After: frees the first 32 "before" blocks; 4 threads each allocate
 * 500 blocks of 2000 + thread bytes, free the even ones, and write
 * "tid addr" per block to DIR/after-N; a child forks and allocates 100
 * blocks of 3333 bytes, written as "pid addr" to DIR/child. Then "done"
 * to DIR/state, and it waits for SIGUSR2 to leave, or SIGHUP to time
 * 200,000 malloc/free pairs (ns to DIR/pairs, "timed" to DIR/state),
 * so that the test can see whether probes are still there after
 * memtrack is gone.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BEFORE 64
#define THREADS 4
#define PER_THREAD 500
#define CHILD 100

static const char *dir;
static void *before[BEFORE];
static volatile sig_atomic_t got1, got2, gothup;
static void *volatile sink;

static void on_sig(int sig)
{
	if (sig == SIGUSR1) {
		got1 = 1;
	} else if (sig == SIGUSR2) {
		got2 = 1;
	} else {
		gothup = 1;
	}
}

/* Write text to DIR/name, whole, replacing what was there. */
static void put(const char *name, const char *text)
{
	char path[4096], tmp[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s", dir, name);
	f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	rename(tmp, path);
}

static void *thread_main(void *arg)
{
	long t = (long)arg;
	static void *blocks[THREADS][PER_THREAD];
	char name[32], line[64];
	char *text = malloc(PER_THREAD * sizeof(line)); /* counted: 1 */
	pid_t tid = (pid_t)syscall(SYS_gettid);
	size_t len = 0;
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		blocks[t][i] = malloc(2000 + (size_t)t);
	}
	for (i = 0; i < PER_THREAD; i += 2) {
		free(blocks[t][i]);
	}
	text[0] = '\0';
	for (i = 0; i < PER_THREAD; i++) {
		len += (size_t)snprintf(text + len, sizeof(line), "%d %p\n",
					(int)tid, blocks[t][i]);
	}
	snprintf(name, sizeof(name), "after-%ld", t);
	put(name, text);
	free(text);
	return NULL;
}

static void child_main(void)
{
	static char text[CHILD * 64];
	size_t len = 0;
	int i;

	for (i = 0; i < CHILD; i++) {
		void *p = malloc(3333);

		len += (size_t)snprintf(text + len, 64, "%d %p\n", (int)getpid(),
					p);
	}
	put("child", text);
	_exit(0);
}

static long long pairs_ns(void)
{
	struct timespec a, b;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < 200000; i++) {
		sink = malloc(48);
		free(sink);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv)
{
	static char text[BEFORE * 32];
	pthread_t th[THREADS];
	struct sigaction sa;
	sigset_t block, old;
	size_t len = 0;
	pid_t child;
	long t;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: attach-target DIR\n");
		return 2;
	}
	dir = argv[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);

	for (i = 0; i < BEFORE; i++) {
		before[i] = malloc(1111);
		len += (size_t)snprintf(text + len, 32, "%p\n", before[i]);
	}
	put("before", text);
	put("state", "ready\n");
	while (!got1) {
		sigsuspend(&old);
	}

	for (i = 0; i < BEFORE / 2; i++) {
		free(before[i]);
	}
	for (t = 0; t < THREADS; t++) {
		if (pthread_create(&th[t], NULL, thread_main, (void *)t)) {
			return 1;
		}
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
	}
	child = fork();
	if (child == 0) {
		child_main();
	}
	waitpid(child, NULL, 0);
	put("state", "done\n");
	for (;;) {
		while (!got2 && !gothup) {
			sigsuspend(&old);
		}
		if (got2) {
			return 0;
		}
		gothup = 0;
		snprintf(text, sizeof(text), "%lld\n", pairs_ns());
		put("pairs", text);
		put("state", "timed\n");
	}
}

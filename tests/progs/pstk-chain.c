/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/pstk-chain.c - call stacks under the preload source
 * (tests/test-preload-stacks.c): a call chain six deep (pstk_f1 ..
 * pstk_f6, built -O2 -fomit-frame-pointer: whole stacks must come from
 * .eh_frame) whose innermost function allocates PSTK_SIZE bytes
 * PSTK_COUNT times through the interposed malloc, from where argv[1]
 * says:
 *   main     main -> pstk_f1 .. pstk_f6
 *   thread   pstk_thread_main -> the chain, in a new thread, while other
 *            threads allocate
 *   fork     main -> pstk_run_fork -> the chain, in a child forked
 *            while two threads allocate
 *   dlopen F main -> pstk_run_dlopen: dlopen(F) (tests/progs/.libs/
 *            pstk-dso.so), then at once its pstk_dso_f1 -> f2 -> f3,
 *            which allocates
 * Exits 0 when it ran.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "chain.h"

#define PSTK_SIZE 12345
#define PSTK_COUNT 7

static void *volatile sink;

int pstk_f1(int x);
int pstk_f2(int x);
int pstk_f3(int x);
int pstk_f4(int x);
int pstk_f5(int x);
int pstk_f6(int x);
void *pstk_thread_main(void *arg);
int pstk_run_fork(void);
int pstk_run_thread(void);
int pstk_run_dlopen(const char *path);

CHAIN_FN int pstk_f6(int x)
{
	int i;

	for (i = 0; i < PSTK_COUNT; i++) {
		sink = malloc(PSTK_SIZE);
		free(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(pstk_)

CHAIN_FN void *pstk_thread_main(void *arg)
{
	pstk_f1(0);
	__asm__ volatile("" ::: "memory");
	return arg;
}

static volatile int stop_workers;

static void *worker(void *arg)
{
	unsigned i = 0;

	while (!stop_workers) {
		void *p = malloc(16 + i++ % 200);

		free(p);
	}
	return arg;
}

CHAIN_FN int pstk_run_fork(void)
{
	pthread_t w[2];
	int i, status = -1;
	pid_t pid;

	for (i = 0; i < 2; i++) {
		pthread_create(&w[i], NULL, worker, NULL);
	}
	usleep(10000);
	pid = fork();
	if (pid == 0) {
		pstk_f1(0);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		status = -1;
	}
	stop_workers = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

CHAIN_FN int pstk_run_thread(void)
{
	pthread_t w[2], t;
	int i;

	for (i = 0; i < 2; i++) {
		pthread_create(&w[i], NULL, worker, NULL);
	}
	pthread_create(&t, NULL, pstk_thread_main, NULL);
	pthread_join(t, NULL);
	stop_workers = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
	}
	return 0;
}

CHAIN_FN int pstk_run_dlopen(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	int (*f)(int);

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	f = (int (*)(int))dlsym(h, "pstk_dso_f1");
	if (!f) {
		return 1;
	}
	f(0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "main";
	int r;

	alarm(60); /* a deadlock fails the test instead of hanging it */
	if (!strcmp(mode, "thread")) {
		r = pstk_run_thread();
	} else if (!strcmp(mode, "fork")) {
		r = pstk_run_fork();
	} else if (!strcmp(mode, "dlopen") && argc > 2) {
		r = pstk_run_dlopen(argv[2]);
	} else {
		r = pstk_f1(0);
		r = r < 0; /* 0 */
	}
	__asm__ volatile("" : "+r"(r)); /* no tail calls: main stays */
	return r;
}

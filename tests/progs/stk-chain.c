/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-chain.c - a call chain six deep (stk_f1 .. stk_f6,
 * built -O2 -fomit-frame-pointer) whose innermost function allocates
 * STK_MAGIC bytes; the interposed malloc (stk-hook.h) unwinds it. Prints
 * the frames resolved with dladdr, for the chain run from main, from a
 * new thread, from a signal handler, and in children forked while other
 * threads allocate; then the hook's counters. tests/test-inproc-stacks.c
 * checks the output.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <signal.h>
#include <sys/wait.h>

#include "chain.h"
#include "stk-hook.h"

static void *volatile sink;
static volatile int via_signal;

void sig_handler(int sig);
int stk_f1(int x);
int stk_f2(int x);
int stk_f3(int x);
int stk_f4(int x);
int stk_f5(int x);
int stk_f6(int x);
void *stk_thread_main(void *arg);

CHAIN_FN void sig_handler(int sig)
{
	sink = malloc(STK_MAGIC);
	free(sink);
	__asm__ volatile("" ::: "memory");
}

CHAIN_FN int stk_f6(int x)
{
	if (via_signal) {
		raise(SIGUSR1);
	} else {
		sink = malloc(STK_MAGIC);
		free(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(stk_)

CHAIN_FN void *stk_thread_main(void *arg)
{
	stk_f1(0);
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

/* 1 when the STK_MAGIC stack has stk_f6 .. stk_f1 then main */
static int chain_ok(void)
{
	static const char *want[] = { "stk_f6", "stk_f5", "stk_f4", "stk_f3",
				      "stk_f2", "stk_f1", "main" };
	int i;

	if (stk_nlast < 7) {
		return 0;
	}
	for (i = 0; i < 7; i++) {
		Dl_info info;

		if (!dladdr((void *)(uintptr_t)(stk_last[i] - 1), &info) ||
		    !info.dli_sname || strcmp(info.dli_sname, want[i])) {
			return 0;
		}
	}
	return 1;
}

/* Children forked while two threads allocate (and so unwind and intern)
 * run the chain; the first prints it. */
static void forks(int n)
{
	pthread_t w[2];
	int i, ok = 0;

	for (i = 0; i < 2; i++) {
		pthread_create(&w[i], NULL, worker, NULL);
	}
	for (i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			stk_f1(0);
			if (i == 0) {
				stk_print("fork");
			}
			_exit(chain_ok() ? 0 : 1);
		}
		if (pid > 0 && waitpid(pid, &status, 0) == pid &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			ok++;
		}
	}
	stop_workers = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
	}
	printf("forks %d/%d\n", ok, n);
}

int main(int argc, char **argv)
{
	pthread_t t;

	alarm(60); /* a deadlock fails the test instead of hanging it */
	stk_f1(0);
	stk_print("main");

	pthread_create(&t, NULL, stk_thread_main, NULL);
	pthread_join(t, NULL);
	stk_print("thread");

	signal(SIGUSR1, sig_handler);
	via_signal = 1;
	stk_f1(0);
	via_signal = 0;
	stk_print("signal");

	forks(argc > 1 ? atoi(argv[1]) : 20);
	stk_summary();
	return 0;
}

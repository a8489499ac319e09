/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/unw-chain.c - main -> unw_f1 -> ... -> unw_f6 -> malloc(4242),
 * built -O2 -fomit-frame-pointer (PIE, non-PIE and static): the eBPF
 * source's stack of that allocation must name the whole chain, from
 * _start down to unw_f6 (tests/test-unwind.c). With an argument the
 * chain raises SIGUSR1 instead, whose handler allocates 4245: the stack
 * goes through the signal frame down to the same chain.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "chain.h"

int unw_f1(int x);
int unw_f2(int x);
int unw_f3(int x);
int unw_f4(int x);
int unw_f5(int x);
int unw_f6(int x);

void unw_handler(int sig);

static void *volatile sink;
static volatile int via_signal;

CHAIN_FN void unw_handler(int sig)
{
	sink = malloc(4245);
	__asm__ volatile("" ::: "memory");
}

CHAIN_FN int unw_f6(int x)
{
	if (via_signal) {
		raise(SIGUSR1);
	} else {
		sink = malloc(4242);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_F1_TO_F5(unw_)

int main(int argc, char **argv)
{
	int r;

	if (argc > 1) {
		signal(SIGUSR1, unw_handler);
		via_signal = 1;
	}
	r = unw_f1(0);

	free(sink);
	printf("%d\n", r);
	return 0;
}

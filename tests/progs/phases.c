/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/phases.c - a run of known shape in time and in figures for
 * the html report's views (tests/test-report-html.sh), from main:
 *   temp_loop   100 x 100 B, each freed at once: 100 temporary
 *   phase_one   1 MiB, held PHASE_MS, then freed
 *   phase_two   2 x 1 MiB, held PHASE_MS, then freed
 *   leak_some   4 KiB, never freed
 * so that bytes allocated, allocations, temporary, the peak (phase_two)
 * and leaks each put a different function first, and the live bytes at a
 * moment of the first phase differ from those of the second. With an
 * argument ("more"), for report --diff: temp_loop makes 50 only,
 * leak_some leaks 8 KiB and first, before phase_one (held through both
 * phases: it grew in each), and phase_two frees its second MiB before it
 * holds the first (it shrank in the second phase), so that what was live
 * at a moment of either phase differs both ways.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chain.h"

#define PHASE_MS 150
#define MIB (1 << 20)

static void *volatile sink;
static int more;

int temp_loop(int x);
int phase_one(int x);
int phase_two(int x);
int leak_some(int x);

static void hold(void)
{
	struct timespec t = { 0, PHASE_MS * 1000000L };

	while (nanosleep(&t, &t) != 0) {
	}
}

CHAIN_FN int temp_loop(int x)
{
	int i;

	for (i = 0; i < (more ? 50 : 100); i++) {
		sink = malloc(100);
		free(sink);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int phase_one(int x)
{
	char *a = malloc(MIB);

	memset(a, 1, MIB);
	hold();
	free(a);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int phase_two(int x)
{
	char *a = malloc(MIB);
	char *b = malloc(MIB);

	memset(a, 2, MIB);
	memset(b, 2, MIB);
	if (more) {
		free(b);
	}
	hold();
	free(a);
	if (!more) {
		free(b);
	}
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

CHAIN_FN int leak_some(int x)
{
	sink = malloc(more ? 8192 : 4096);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

int main(int argc, char **argv)
{
	int r, i;

	(void)argv;
	more = argc > 1;
	r = temp_loop(0);
	/* each call on one line whatever the order: a site of the diff
	 * is its frames, main's line too */
	for (i = 0; i < 2; i++) {
		if (i == more) {
			r += phase_one(0);
			r += phase_two(0);
		} else {
			r += leak_some(0);
		}
	}
	__asm__ volatile("" : "+r"(r)); /* no tail calls: main stays */
	return r == 4 ? 0 : 1;
}

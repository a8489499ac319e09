/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/sample-mix.c - allocations of known sizes and counts for the
 * sampling test (tests/test-sample.sh); each size is its own site:
 *   100000 x 16 B, 20000 x 1 KiB, 200 x 256 KiB, 4 x 1 MiB, each freed
 *   at once; and 1000 x 512 B never freed (in use at the end)
 * With an argument "threads", the same from 2 threads at once (each half).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* per thread: with one shared, two threads would each free the other's
 * block (and one of them twice) */
static __thread void *volatile sink;
static int halves; /* the threads' argument: each makes half */

static void burst(size_t size, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sink = malloc(size);
		free(sink);
	}
}

static void *work(void *arg)
{
	int part = arg ? 2 : 1, i;

	burst(16, 100000 / part);
	burst(1024, 20000 / part);
	burst(256 << 10, 200 / part);
	burst(1 << 20, 4 / part);
	for (i = 0; i < 1000 / part; i++) {
		sink = malloc(512); /* kept: in use at the end */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1 && !strcmp(argv[1], "threads")) {
		if (pthread_create(&t, NULL, work, &halves)) {
			return 1;
		}
		work(&halves);
		return pthread_join(t, NULL) ? 1 : 0;
	}
	work(NULL);
	return 0;
}

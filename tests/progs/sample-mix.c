/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/sample-mix.c - allocations of known sizes and counts for the
 * sampling test (tests/test-sample.sh); each size is its own site:
 *   100000 x 16 B, 20000 x 1 KiB, 200 x 256 KiB, 4 x 1 MiB, each freed
 *   at once; and 1000 x 512 B never freed (in use at the end)
 * With an argument "threads", the same from 2 threads at once (each half).
 *
 * With "resize", the other ways in (resize()): realloc, reallocarray,
 * calloc, posix_memalign and aligned_alloc, then five calls whose recording
 * is known, their addresses printed on stdout.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
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

/* 16 B to 256 KiB, as many of each power of two */
static size_t any_size(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return ((size_t)16 << ((*x >> 33) % 15)) + (size_t)(*x >> 50) % 16;
}

/* A block of at least 1 MiB: at --sample-bytes 64K it is sampled but once
 * in 9 million (e^-16) */
#define BIG (1 << 20)

/*
 * 200000 calls on 256 slots, each chosen by a fixed sequence: a slot
 * empty gets a block from any of the allocating calls, a full one is
 * resized (realloc, reallocarray), given to realloc(p, 0) or freed; so
 * sampled and unsampled blocks are resized to sampled and unsampled ones.
 * Then what each of the last five must record (tests/test-sample.sh):
 *   grow OLD NEW  a sampled block grown: a Realloc from OLD
 *   shrink OLD    a sampled block shrunk to 16 B (unsampled, 16 B at 64K
 *                 are but once in 4000): a Free of OLD
 *   zero OLD      realloc(OLD, 0), OLD sampled: a Free of OLD
 *   zeroarray OLD reallocarray(OLD, 0, 16), the same
 *   new NEW       realloc(NULL, BIG): a Realloc from 0
 */
static int resize(void)
{
	static void *slot[256];
	uint64_t x = 42;
	void *p, *q;
	int i;

	for (i = 0; i < 200000; i++) {
		void **s;
		size_t n;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		s = &slot[(x >> 40) & 255];
		n = any_size(&x);
		switch ((x >> 36) % 5) {
		case 0:
			if (*s) {
				free(*s);
				*s = NULL;
			} else {
				*s = malloc(n);
			}
			break;
		case 1:
			if (*s) {
				*s = realloc(*s, n);
			} else {
				*s = calloc(1, n);
			}
			break;
		case 2:
			if (*s) {
				*s = reallocarray(*s, n / 16, 16);
			} else if (posix_memalign(s, 64, n)) {
				*s = NULL;
			}
			break;
		case 3:
			if (*s) {
				/* glibc frees it and returns NULL */
				*s = realloc(*s, 0);
			} else {
				*s = aligned_alloc(4096, n);
			}
			break;
		default:
			*s = realloc(*s, n); /* realloc(NULL, n) when empty */
			break;
		}
	}
	for (i = 0; i < 256; i++) {
		free(slot[i]);
	}
	p = malloc(BIG);
	q = realloc(p, 2 * BIG);
	printf("grow %ju %ju\n", (uintmax_t)(uintptr_t)p,
	       (uintmax_t)(uintptr_t)q);
	p = realloc(q, 16);
	printf("shrink %ju\n", (uintmax_t)(uintptr_t)q);
	free(p);
	p = malloc(BIG);
	printf("zero %ju\n", (uintmax_t)(uintptr_t)p);
	if (realloc(p, 0)) {
		return 1; /* glibc frees it: the test counts on it */
	}
	p = malloc(BIG);
	printf("zeroarray %ju\n", (uintmax_t)(uintptr_t)p);
	if (reallocarray(p, 0, 16)) {
		return 1;
	}
	p = realloc(NULL, BIG);
	printf("new %ju\n", (uintmax_t)(uintptr_t)p);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1 && !strcmp(argv[1], "resize")) {
		return resize();
	}

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

/* SPDX-License-Identifier: MIT */
/*
 * sys-mix N: one thread makes 8N malloc/free pairs of MIX_MALLOC bytes
 * while two other threads make N mmap/munmap pairs of
 * MIX_MAP bytes each. As root the preload source gets the first from its
 * ring and the others from the BPF ring, and merges the two while the
 * first ring is full (test-preload-syscalls).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MIX_MALLOC 1013
#define MIX_MAP (5 * 4096)

static long n;

static void *mapper(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < n; i++) {
		void *p = mmap(NULL, MIX_MAP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			munmap(p, MIX_MAP);
		}
	}
	return NULL;
}

static void *allocator(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < 8 * n; i++) {
		void *volatile p = malloc(MIX_MALLOC);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	int i;

	n = argc > 1 ? atol(argv[1]) : 1000;
	if (pthread_create(&t[0], NULL, allocator, NULL) ||
	    pthread_create(&t[1], NULL, mapper, NULL) ||
	    pthread_create(&t[2], NULL, mapper, NULL)) {
		return 1;
	}
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The quick start's workload: a little of everything memtrack records, in
 * two processes and two threads, with round figures to recognise:
 * 1000 malloc/free pairs of 64 bytes, 100 callocs of 10 x 100 bytes, a
 * growing realloc, a 1 MiB mmap, and one 4096-byte leak per process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile leak;

static void *worker(void *arg)
{
	void *blocks[100];
	int i;

	for (i = 0; i < 100; i++) {
		blocks[i] = calloc(10, 100);
	}
	/* Keep the blocks observable, see work(). */
	__asm__ volatile("" : : "r"(blocks) : "memory");
	for (i = 0; i < 100; i++) {
		free(blocks[i]);
	}
	return arg;
}

static void work(void)
{
	static void *volatile blocks[1000];
	pthread_t t;
	char *grow = NULL;
	void *map;
	int i;

	/* Through a volatile array: a malloc/free pair the compiler can see
	 * through would be optimised away, and there would be nothing to
	 * record. */
	for (i = 0; i < 1000; i++) {
		blocks[i] = malloc(64);
	}
	for (i = 0; i < 1000; i++) {
		free(blocks[i]);
	}
	for (i = 1; i <= 8; i++) {
		grow = realloc(grow, (size_t)i * 1024);
	}
	free(grow);
	map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map != MAP_FAILED) {
		munmap(map, 1 << 20);
	}
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	/* Deliberately leaked, so the summary has something to show. */
	leak = malloc(4096);
}

int main(void)
{
	pid_t child = fork();

	work();
	if (child == 0) {
		return 0;
	}
	if (child > 0) {
		waitpid(child, NULL, 0);
	}
	printf("memtrack-demo: done (pid %d and child %d)\n", (int)getpid(),
	       (int)child);
	return 0;
}

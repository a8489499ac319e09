/* SPDX-License-Identifier: MIT */
/*
 * What a traced program may do to the preload source's shared memory and
 * descriptors, by accident or on purpose (tests/test-preload-harm.sh).
 * Each mode then makes N malloc/free pairs of HARM_SIZE bytes, so that a
 * test counts exactly what was recorded around the harm:
 *   ring-harm loop N            nothing else
 *   ring-harm fdreuse N DIR     closes descriptors 3..63 and opens files
 *                               DIR/fd.K on them (a daemon, closefrom(),
 *                               `exec 5>file`); after the pairs each file
 *                               must still be empty (exit 3 if not)
 *   ring-harm truncate N        ftruncate()s every memfd it holds to one
 *                               page (prints "truncate: ERRNO-NAME")
 *   ring-harm stray N           writes a word of no lap over the state
 *                               words of the next 8 slots at head
 *   ring-harm forge N           commits, with the ring's own protocol, a
 *                               slot of a kind no producer writes, between
 *                               two halves of the pairs
 *   ring-harm vandal SECONDS    writes random words at random places of
 *                               the whole mapping, header included, one
 *                               every 50 us, for SECONDS (no pairs)
 *   ring-harm future N          commits, with the ring's own protocol, a
 *                               Malloc of HARM_SIZE + 1 bytes stamped an
 *                               hour ahead (CLOCK_MONOTONIC: memtrack's
 *                               clock=monotonic), between two halves of
 *                               the pairs
 * The mapping is found as the interposer finds it: MEMTRACK_PRELOAD_SHM.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "shm.h"

#define HARM_SIZE 4321

static void pairs(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		void *p = malloc(HARM_SIZE);

		if (!p) {
			exit(4);
		}
		*(volatile char *)p = 1;
		free(p);
	}
}

/* The shared mapping, or exit 2. */
static struct pl_shm *map_shm(size_t *size)
{
	const char *env = getenv(PL_ENV_SHM);
	struct stat st;
	void *m;
	int fd;

	if (!env) {
		fprintf(stderr, "ring-harm: no %s\n", PL_ENV_SHM);
		exit(2);
	}
	fd = atoi(env);
	if (fstat(fd, &st) < 0) {
		perror("ring-harm: fstat");
		exit(2);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (m == MAP_FAILED) {
		perror("ring-harm: mmap");
		exit(2);
	}
	*size = (size_t)st.st_size;
	return m;
}

static int fdreuse(long n, const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, dirty = 0;

	for (fd = 3; fd < 64; fd++) {
		close(fd);
	}
	for (fd = 3; fd < 64; fd++) {
		snprintf(path, sizeof(path), "%s/fd.%d", dir, fd);
		if (open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600) != fd) {
			fprintf(stderr, "ring-harm: %s did not get fd %d\n", path,
				fd);
			return 2;
		}
	}
	pairs(n);
	for (fd = 3; fd < 64; fd++) {
		if (fstat(fd, &st) == 0 && st.st_size) {
			printf("dirty fd %d: %lld bytes\n", fd,
			       (long long)st.st_size);
			dirty = 1;
		}
	}
	printf("%s\n", dirty ? "dirty" : "clean");
	return dirty ? 3 : 0;
}

static int truncate_memfds(long n)
{
	char link[64], target[256];
	int fd, tried = 0;

	for (fd = 0; fd < 1024; fd++) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0) {
			continue;
		}
		target[len] = '\0';
		if (strncmp(target, "/memfd:", 7)) {
			continue;
		}
		tried = 1;
		if (ftruncate(fd, 4096) < 0) {
			printf("truncate: %s\n", errno == EPERM ? "EPERM" :
					       strerror(errno));
		} else {
			printf("truncate: done\n");
		}
	}
	if (!tried) {
		printf("truncate: no memfd\n");
	}
	fflush(stdout);
	pairs(n);
	return 0;
}

static struct mt_event *slot_at(struct pl_shm *shm, uint64_t pos)
{
	return &pl_slots(shm)[pos & (shm->nslots - 1)];
}

static int stray(long n)
{
	size_t size;
	struct pl_shm *shm = map_shm(&size);
	uint64_t h = __atomic_load_n(&shm->head, __ATOMIC_ACQUIRE);
	int i;

	for (i = 0; i < 8; i++) {
		__atomic_store_n(&slot_at(shm, h + i)->reserved[0],
				 pl_word(0x5a5a5a5a, PL_CLAIMED, 1),
				 __ATOMIC_RELEASE);
	}
	pairs(n);
	return 0;
}

/* The slot at head, claimed for thread tid and head moved past it, as a
 * producer claims one: commit() it once written. */
static struct mt_event *claim(struct pl_shm *shm, uint32_t tid,
			      uint32_t *lap)
{
	for (;;) {
		uint64_t h = __atomic_load_n(&shm->head, __ATOMIC_ACQUIRE);
		struct mt_event *slot = slot_at(shm, h);
		uint64_t w;

		*lap = (uint32_t)(h >> shm->shift);
		w = pl_word(*lap, PL_FREE, 0);
		if (!__atomic_compare_exchange_n(&slot->reserved[0], &w,
						 pl_word(*lap, PL_CLAIMED, tid),
						 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED)) {
			continue;
		}
		__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		return slot;
	}
}

static void commit(struct mt_event *slot, uint32_t lap, uint32_t tid)
{
	__atomic_store_n(&slot->reserved[0], pl_word(lap, PL_COMMITTED, tid),
			 __ATOMIC_RELEASE);
}

/* One slot committed as a producer commits it, of kind 0x77. */
static int forge(long n)
{
	size_t size;
	struct pl_shm *shm = map_shm(&size);
	struct mt_event *slot;
	uint32_t lap;

	pairs(n / 2);
	slot = claim(shm, 1, &lap);
	slot->kind = 0x77;
	slot->size = 1;
	slot->addr = 1;
	commit(slot, lap, 1);
	pairs(n - n / 2);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One Malloc committed as a producer commits it, its time an hour on. */
static int future(long n)
{
	size_t size;
	struct pl_shm *shm = map_shm(&size);
	uint32_t tid = (uint32_t)syscall(SYS_gettid), lap;
	struct mt_event *slot;

	pairs(n / 2);
	slot = claim(shm, tid, &lap);
	slot->timestamp = now_ns() + 3600ull * 1000000000u;
	slot->addr = 0x10000;
	slot->size = HARM_SIZE + 1;
	slot->old_addr = 0;
	slot->pid = getpid();
	slot->tid = (int32_t)tid;
	slot->kind = MT_EV_MALLOC;
	slot->flags = 0;
	slot->reserved0 = 0;
	slot->stack_id = 0;
	slot->reserved[1] = 0;
	commit(slot, lap, tid);
	pairs(n - n / 2);
	return 0;
}

static int vandal(long seconds)
{
	size_t size, words, hits = 0;
	struct pl_shm *shm = map_shm(&size);
	uint64_t *w = (uint64_t *)(void *)shm;
	uint64_t end = now_ns() + (uint64_t)seconds * 1000000000u;
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	struct timespec pause = { 0, 50000 };

	words = size / sizeof(uint64_t);
	while (now_ns() < end) {
		/* xorshift64: no libc state, no allocation */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w[(x >> 11) % words] = x * 0x2545f4914f6cdd1dull;
		hits++;
		nanosleep(&pause, NULL);
	}
	printf("vandal: %zu words\n", hits);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: ring-harm MODE N [DIR]\n");
		return 2;
	}
	if (!strcmp(argv[1], "loop")) {
		pairs(n);
		return 0;
	}
	if (!strcmp(argv[1], "fdreuse") && argc > 3) {
		return fdreuse(n, argv[3]);
	}
	if (!strcmp(argv[1], "truncate")) {
		return truncate_memfds(n);
	}
	if (!strcmp(argv[1], "stray")) {
		return stray(n);
	}
	if (!strcmp(argv[1], "forge")) {
		return forge(n);
	}
	if (!strcmp(argv[1], "vandal")) {
		return vandal(n);
	}
	if (!strcmp(argv[1], "future")) {
		return future(n);
	}
	fprintf(stderr, "ring-harm: unknown mode %s\n", argv[1]);
	return 2;
}

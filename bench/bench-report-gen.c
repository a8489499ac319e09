/* SPDX-License-Identifier: MIT */
/*
 * bench-report-gen - input for the 'memtrack report' benchmark.
 *
 *   bench-report-gen --write FILE EVENTS   write a synthetic heap trace
 *   bench-report-gen --decode FILE         decode it, doing nothing with the
 *                                          events, and print the time
 *
 * --write goes straight through the msgpack-zstd encoder plugin (one frame
 * per 65536 events), because replaying 10M JSON lines would take longer
 * than the report being measured. --decode is the floor of any report: the
 * decoder's own time, so the benchmark can say how much of the report's time
 * is decoding and how much is analysis.
 *
 * The trace is shaped like a real heap: 4 processes of 4 threads, each
 * thread freeing mostly what it allocated recently (so frees match and some
 * blocks are temporary), a few long-lived blocks that leak, sizes skewed to
 * small classes, and an mmap/munmap now and then. The PRNG is seeded with a
 * constant so every run sees the same trace.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memtrack/plugin.h>

#include "host/host.h"
#include "host/plugin.h"

#define NPROC 4
#define NTHREAD 4
#define POOL 4096 /* live blocks a thread keeps at most */
#define BATCH 65536

struct thread {
	uint64_t live[POOL];
	uint64_t sizes[POOL];
	size_t nlive;
	uint64_t next_addr;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* splitmix64: fast and good enough for proportions */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd_size(void)
{
	uint64_t r = rnd();

	/* mostly small blocks, a tail up to 1 MiB */
	return 1 + (r >> 40) % (16ULL << ((r & 7) == 0 ? 16 : (r & 3) * 2));
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void gen(struct thread *threads, struct mt_event *ev, uint64_t ts)
{
	unsigned int t = (unsigned int)(rnd() % (NPROC * NTHREAD));
	struct thread *th = &threads[t];
	uint64_t r = rnd(), i;

	memset(ev, 0, sizeof(*ev));
	ev->timestamp = ts;
	ev->pid = 1000 + (int32_t)(t / NTHREAD);
	ev->tid = ev->pid * 10 + (int32_t)(t % NTHREAD);
	if ((r & 1023) == 0) {
		ev->kind = (r & 1024) ? MT_EV_MUNMAP : MT_EV_MMAP;
		ev->addr = 0x7f0000000000ULL + ((r >> 20) & 0xffff) * 4096;
		ev->size = 1 << 20;
		return;
	}
	/* frees slightly rarer than allocations: the heap grows, then the
	 * pool limit makes it level off */
	if (th->nlive && ((r % 100) < 47 || th->nlive == POOL)) {
		/* the last block most of the time: temporaries */
		i = (r & 0x300) ? th->nlive - 1 : (r >> 12) % th->nlive;
		ev->kind = MT_EV_FREE;
		ev->addr = th->live[i];
		th->live[i] = th->live[--th->nlive];
		th->sizes[i] = th->sizes[th->nlive];
		return;
	}
	ev->size = rnd_size();
	ev->addr = th->next_addr;
	th->next_addr += (ev->size + 15) & ~15ULL;
	switch ((r >> 8) % 20) {
	case 0:
		ev->kind = MT_EV_CALLOC;
		break;
	case 1:
		if (th->nlive) {
			i = th->nlive - 1;
			ev->kind = MT_EV_REALLOC;
			ev->flags = MT_EVF_OLD_ADDR;
			ev->old_addr = th->live[i];
			th->live[i] = ev->addr;
			th->sizes[i] = ev->size;
			return;
		}
		ev->kind = MT_EV_MALLOC;
		break;
	default:
		ev->kind = MT_EV_MALLOC;
		break;
	}
	th->live[th->nlive] = ev->addr;
	th->sizes[th->nlive++] = ev->size;
}

static int do_write(const char *path, uint64_t n)
{
	struct thread *threads = calloc(NPROC * NTHREAD, sizeof(*threads));
	struct mt_event *batch = malloc(BATCH * sizeof(*batch));
	struct mt_plugin *enc = NULL;
	void *st = NULL;
	uint64_t done = 0, ts = 1000000;
	int fd = -1, err;
	unsigned int t;

	if (!threads || !batch) {
		err = -ENOMEM;
		goto end;
	}
	for (t = 0; t < NPROC * NTHREAD; t++) {
		threads[t].next_addr = 0x10000000ULL * (t + 1);
	}
	err = mt_plugin_load(MT_PLUGIN_ENCODER, "msgpack-zstd", &enc);
	if (err < 0) {
		goto end;
	}
	err = enc->ops.encoder.create(mt_host_get(), NULL, &st);
	if (err < 0) {
		goto end;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "bench-report-gen: %s: %s\n", path,
			strerror(errno));
		goto end;
	}
	while (done < n) {
		size_t k = n - done < BATCH ? (size_t)(n - done) : BATCH, i;
		struct mt_frame f;

		for (i = 0; i < k; i++) {
			ts += 50 + rnd() % 100;
			gen(threads, &batch[i], ts);
		}
		err = enc->ops.encoder.encode(st, batch, k, &f);
		if (err < 0) {
			goto end;
		}
		err = write_all(fd, f.data, f.len);
		enc->ops.encoder.frame_free(&f);
		if (err < 0) {
			fprintf(stderr, "bench-report-gen: %s: %s\n", path,
				strerror(-err));
			goto end;
		}
		done += k;
	}
	err = 0;
end:
	if (fd >= 0 && close(fd) < 0 && !err) {
		err = -errno;
	}
	if (st) {
		enc->ops.encoder.destroy(st);
	}
	if (enc) {
		mt_plugin_close(enc);
	}
	free(batch);
	free(threads);
	return err;
}

static int count_events(void *ctx, const struct mt_event *ev, size_t n)
{
	uint64_t *count = ctx;

	(void)ev;
	*count += n;
	return 0;
}

static int do_decode(const char *path)
{
	struct timespec a, b;
	uint64_t count = 0;
	double s;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bench-report-gen: %s: %s\n", path,
			strerror(errno));
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	err = mt_host_decode(NULL, fd, path, count_events, NULL, &count);
	clock_gettime(CLOCK_MONOTONIC, &b);
	close(fd);
	mt_host_cleanup();
	s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	/* one line the benchmark script parses: events seconds */
	printf("%llu %.3f\n", (unsigned long long)count, s);
	return err;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--write") == 0) {
		return do_write(argv[2], strtoull(argv[3], NULL, 10)) < 0;
	}
	if (argc == 3 && strcmp(argv[1], "--decode") == 0) {
		return do_decode(argv[2]) < 0;
	}
	fprintf(stderr,
		"usage: bench-report-gen --write FILE EVENTS | --decode FILE\n");
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench-report-gen - input for the 'memtrack report' benchmark.
 *
 *   bench-report-gen --write FILE EVENTS [--stacks N [--elf PATH]...]
 *                                          write a synthetic heap trace
 *   bench-report-gen --decode FILE         decode it, doing nothing with the
 *                                          events, and print the time
 *   bench-report-gen --run OUT CMD [ARG]...
 *                                          run CMD, its output into OUT, and
 *                                          print its wall time (us) and peak
 *                                          RSS (KiB, wait4's ru_maxrss)
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
 *
 * --stacks N gives every allocation (malloc, calloc, realloc) one of N call
 * stacks, as 'memtrack --stacks' records them through the preload source:
 * the mappings first (an MTKM payload: pid 1000's exec and the executable
 * segments of each --elf file, build-id included; then a fork record for
 * each other process, which shares them), and each stack's MTKT payload, one
 * record per frame as the preload source sends it, before the events frame
 * of its first use, under the pid that used it first. The stacks are a tree
 * of call sites: each shares a random part of a random earlier one's root
 * end and goes on to a depth of 5 to 40 frames. A frame is a return address
 * inside a function of an --elf file (from its symbol tables), mapped where
 * a PIE would be, so the report's symbolizer names it through libdw as for
 * a real recording; without --elf the addresses are in no mapping (hex
 * frames). Which stack an allocation gets is skewed (a few hot stacks, a
 * long tail every one of which is used); it comes from a PRNG of its own,
 * so the events are the same with and without --stacks.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBELF
#include <gelf.h>
#include <libelf.h>
#endif

#include <memtrack/plugin.h>

#include "host/host.h"
#include "host/pipeline.h" /* MT_META_VARIANT */
#include "host/plugin.h"
#ifdef HAVE_LIBELF
#include "common/elf-build-id.h"
#include "common/elf-symbols.h"
#endif

#define NPROC 4
#define NTHREAD 4
#define POOL 4096 /* live blocks a thread keeps at most */
#define BATCH 65536

#define MIN_DEPTH 5
#define MAX_DEPTH 40
#define MAX_STACKS ((1u << 26) - 1) /* the report's limit (symbolize.c) */
#define MAX_ELF 8
#define MAX_SEGS 8
#define META_HDR 16
#define MAPS_EXEC 1 /* MTKM record types (plugins/ebpf/README.md) */
#define MAPS_MAP 2
#define MAPS_FORK 3
#define MOD_BASE 0x560000000000ULL /* where a PIE goes */
#define MOD_STRIDE 0x100000000ULL
#define HEX_SITES 16384 /* call sites without --elf */

struct thread {
	uint64_t live[POOL];
	uint64_t sizes[POOL];
	size_t nlive;
	uint64_t next_addr;
};

struct seg {
	uint64_t vaddr, filesz, off;
};

struct module {
	char *path;
	unsigned char bid[32];
	size_t bidlen;
	uint64_t base; /* 0 for a fixed-address executable */
	struct seg segs[MAX_SEGS];
	unsigned int nsegs;
};

/* the call stacks of --stacks */
struct stacks {
	uint32_t n;
	uint64_t *frames; /* n * MAX_DEPTH, root first */
	uint8_t *depth;
	uint8_t *sent;
	uint64_t *sites; /* the return addresses frames are made of */
	size_t nsites, sites_cap;
	struct module mods[MAX_ELF];
	unsigned int nmods;
	uint32_t *pending; /* first used in this batch: to send before it */
	size_t npending;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t stk_rng_state = 0x243f6a8885a308d3ULL;

/* splitmix64: fast and good enough for proportions */
static uint64_t rnd_from(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(void)
{
	return rnd_from(&rng_state);
}

static uint64_t stk_rnd(void)
{
	return rnd_from(&stk_rng_state);
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

static int add_site(struct stacks *sk, uint64_t addr)
{
	if (sk->nsites == sk->sites_cap) {
		size_t cap = sk->sites_cap ? 2 * sk->sites_cap : 4096;
		uint64_t *p = realloc(sk->sites, cap * sizeof(*p));

		if (!p) {
			return -ENOMEM;
		}
		sk->sites = p;
		sk->sites_cap = cap;
	}
	sk->sites[sk->nsites++] = addr;
	return 0;
}

#ifdef HAVE_LIBELF
struct func_ctx {
	struct stacks *sk;
	struct module *m;
};

/* One call site in each function of an executable segment: a return
 * address, so the report looks up the byte before it, inside the
 * function. */
static int func_site(const GElf_Sym *sym, const char *name, void *arg)
{
	struct func_ctx *c = arg;
	unsigned int i;

	(void)name;
	for (i = 0; i < c->m->nsegs; i++) {
		const struct seg *g = &c->m->segs[i];

		if (sym->st_value >= g->vaddr &&
		    sym->st_value < g->vaddr + g->filesz) {
			uint64_t span = sym->st_size > 1 ? sym->st_size - 1 : 1;

			return add_site(c->sk, c->m->base + sym->st_value + 1 +
						       stk_rnd() % span);
		}
	}
	return 0;
}

static int load_elf(struct stacks *sk, const char *path)
{
	struct module *m = &sk->mods[sk->nmods];
	struct func_ctx c = { sk, m };
	size_t before = sk->nsites, phnum, i;
	GElf_Ehdr eh;
	Elf *elf = NULL;
	int fd, err = -EINVAL;

	memset(m, 0, sizeof(*m));
	m->path = realpath(path, NULL);
	fd = m->path ? open(m->path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "bench-report-gen: %s: %s\n", path,
			strerror(errno));
		goto end;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum)) {
		fprintf(stderr, "bench-report-gen: %s: not an ELF file\n",
			path);
		goto end;
	}
	m->base = eh.e_type == ET_DYN ? MOD_BASE + sk->nmods * MOD_STRIDE : 0;
	m->bidlen = mt_elf_build_id(elf, m->bid, sizeof(m->bid));
	for (i = 0; i < phnum && m->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X)) {
			m->segs[m->nsegs++] = (struct seg){ ph.p_vaddr,
							    ph.p_filesz,
							    ph.p_offset };
		}
	}
	err = mt_elf_for_each_func(elf, func_site, &c);
	if (!err && sk->nsites == before) {
		fprintf(stderr, "bench-report-gen: %s: no function symbols\n",
			path);
		err = -EINVAL;
	}
end:
	if (elf) {
		elf_end(elf);
	}
	if (fd >= 0) {
		close(fd);
	}
	if (err < 0) {
		free(m->path);
		return err;
	}
	sk->nmods++;
	return 0;
}
#endif

/* The tree: each stack after the first shares 1 to depth-1 frames of the
 * root end of a random earlier one. */
static int stacks_init(struct stacks *sk, uint32_t n, char **elfs,
		       unsigned int nelf)
{
	unsigned int e;
	uint32_t i;
	int err;

	if (!n || n > MAX_STACKS || nelf > MAX_ELF) {
		fprintf(stderr, "bench-report-gen: --stacks 1..%u, --elf at most %u times\n",
			MAX_STACKS, MAX_ELF);
		return -EINVAL;
	}
#ifdef HAVE_LIBELF
	elf_version(EV_CURRENT);
	for (e = 0; e < nelf; e++) {
		err = load_elf(sk, elfs[e]);
		if (err < 0) {
			return err;
		}
	}
#else
	if (nelf) {
		fprintf(stderr, "bench-report-gen: built without libelf: no --elf\n");
		return -EINVAL;
	}
#endif
	for (e = 0; !nelf && e < HEX_SITES; e++) {
		err = add_site(sk, 0x400000 + (stk_rnd() % (64 << 20)));
		if (err < 0) {
			return err;
		}
	}
	sk->n = n;
	sk->frames = malloc((size_t)n * MAX_DEPTH * sizeof(*sk->frames));
	sk->depth = malloc(n);
	sk->sent = calloc(n, 1);
	sk->pending = malloc(BATCH * sizeof(*sk->pending));
	if (!sk->frames || !sk->depth || !sk->sent || !sk->pending) {
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		uint64_t *f = sk->frames + (size_t)i * MAX_DEPTH;
		unsigned int d = MIN_DEPTH +
				 stk_rnd() % (MAX_DEPTH - MIN_DEPTH + 1);
		unsigned int k = 0;

		if (i) {
			uint32_t j = (uint32_t)(stk_rnd() % i);
			unsigned int pd = sk->depth[j], top = pd < d ? pd : d;

			k = 1 + stk_rnd() % (top - 1);
			memcpy(f, sk->frames + (size_t)j * MAX_DEPTH,
			       k * sizeof(*f));
		}
		for (; k < d; k++) {
			f[k] = sk->sites[stk_rnd() % sk->nsites];
		}
		sk->depth[i] = (uint8_t)d;
	}
	return 0;
}

static void stacks_free(struct stacks *sk)
{
	unsigned int i;

	for (i = 0; i < sk->nmods; i++) {
		free(sk->mods[i].path);
	}
	free(sk->frames);
	free(sk->depth);
	free(sk->sent);
	free(sk->sites);
	free(sk->pending);
}

/* A cubed uniform: stack 1 and its neighbours are hot, yet even the last
 * one is picked once in about 3n allocations. */
static uint32_t pick_stack(struct stacks *sk)
{
	double u = (double)(stk_rnd() >> 11) * 0x1p-53;
	uint32_t i = (uint32_t)(u * u * u * sk->n);

	return i < sk->n ? i : sk->n - 1;
}

static void seal(unsigned char *p, size_t len, const char *tag,
		 uint32_t records)
{
	uint32_t version = 1, h = 2166136261u;
	size_t i;

	for (i = META_HDR; i < len; i++) {
		h = (h ^ p[i]) * 16777619u;
	}
	memcpy(p, tag, 4);
	memcpy(p + 4, &version, 4);
	memcpy(p + 8, &records, 4);
	memcpy(p + 12, &h, 4);
}

static int put_meta(struct mt_plugin *enc, void *st, int fd,
		    const unsigned char *p, size_t len)
{
	struct mt_frame f;
	int err;

	err = enc->ops.encoder.encode_meta(st, MT_META_VARIANT, p, len, &f);
	if (err < 0) {
		return err;
	}
	err = write_all(fd, f.data, f.len);
	enc->ops.encoder.frame_free(&f);
	return err;
}

static unsigned char *put_bytes(unsigned char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

/* pid 1000's exec and mappings, then the forks of the others */
static int put_maps(struct stacks *sk, struct mt_plugin *enc, void *st,
		    int fd)
{
	size_t cap = META_HDR + 5, len;
	unsigned char *buf, *p;
	uint32_t recs = 1, pid = 1000, t;
	unsigned int i, j;
	int err;

	for (i = 0; i < sk->nmods; i++) {
		cap += sk->mods[i].nsegs *
		       (5 + 25 + 32 + 2 + strlen(sk->mods[i].path));
	}
	buf = malloc(cap);
	if (!buf) {
		return -ENOMEM;
	}
	p = buf + META_HDR;
	*p++ = MAPS_EXEC;
	p = put_bytes(p, &pid, 4);
	for (i = 0; i < sk->nmods; i++) {
		const struct module *m = &sk->mods[i];
		uint16_t plen = (uint16_t)strlen(m->path);

		for (j = 0; j < m->nsegs; j++) {
			const struct seg *g = &m->segs[j];
			uint64_t start = m->base + (g->vaddr & ~0xfffULL);
			uint64_t end = m->base +
				       ((g->vaddr + g->filesz + 0xfff) &
					~0xfffULL);
			uint64_t off = g->off & ~0xfffULL;

			*p++ = MAPS_MAP;
			p = put_bytes(p, &pid, 4);
			p = put_bytes(p, &start, 8);
			p = put_bytes(p, &end, 8);
			p = put_bytes(p, &off, 8);
			*p++ = (unsigned char)m->bidlen;
			p = put_bytes(p, m->bid, m->bidlen);
			p = put_bytes(p, &plen, 2);
			p = put_bytes(p, m->path, plen);
			recs++;
		}
	}
	len = (size_t)(p - buf);
	seal(buf, len, "MTKM", recs);
	err = put_meta(enc, st, fd, buf, len);
	for (t = 1; !err && t < NPROC; t++) {
		uint32_t child = pid + t;

		p = buf + META_HDR;
		*p++ = MAPS_FORK;
		p = put_bytes(p, &child, 4);
		p = put_bytes(p, &pid, 4);
		len = (size_t)(p - buf);
		seal(buf, len, "MTKM", 1);
		err = put_meta(enc, st, fd, buf, len);
	}
	free(buf);
	return err;
}

/* The stacks first used in this batch, one MTKT payload each, leaf
 * first; ev carries the pid of each (its first user). */
static int put_stacks(struct stacks *sk, const struct mt_event *batch,
		      struct mt_plugin *enc, void *st, int fd)
{
	unsigned char buf[META_HDR + 12 + 8 * MAX_DEPTH];
	size_t k;
	int err;

	for (k = 0; k < sk->npending; k++) {
		uint32_t at = sk->pending[k];
		uint32_t id = batch[at].stack_id, i = id - 1;
		uint32_t pid = (uint32_t)batch[at].pid, n = sk->depth[i], f;
		const uint64_t *fr = sk->frames + (size_t)i * MAX_DEPTH;
		unsigned char *p = buf + META_HDR;

		p = put_bytes(p, &id, 4);
		p = put_bytes(p, &pid, 4);
		p = put_bytes(p, &n, 4);
		for (f = n; f-- > 0;) {
			p = put_bytes(p, &fr[f], 8);
		}
		seal(buf, (size_t)(p - buf), "MTKT", 1);
		err = put_meta(enc, st, fd, buf, (size_t)(p - buf));
		if (err < 0) {
			return err;
		}
	}
	sk->npending = 0;
	return 0;
}

static void give_stack(struct stacks *sk, struct mt_event *ev, uint32_t at)
{
	uint32_t i;

	if (ev->kind != MT_EV_MALLOC && ev->kind != MT_EV_CALLOC &&
	    ev->kind != MT_EV_REALLOC) {
		return;
	}
	i = pick_stack(sk);
	ev->flags |= MT_EVF_STACK;
	ev->stack_id = i + 1;
	if (!sk->sent[i]) {
		sk->sent[i] = 1;
		sk->pending[sk->npending++] = at;
	}
}

static int do_write(const char *path, uint64_t n, struct stacks *sk)
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
	if (sk) {
		err = put_maps(sk, enc, st, fd);
		if (err < 0) {
			goto end;
		}
	}
	while (done < n) {
		size_t k = n - done < BATCH ? (size_t)(n - done) : BATCH, i;
		struct mt_frame f;

		for (i = 0; i < k; i++) {
			ts += 50 + rnd() % 100;
			gen(threads, &batch[i], ts);
			if (sk) {
				give_stack(sk, &batch[i], (uint32_t)i);
			}
		}
		if (sk) {
			err = put_stacks(sk, batch, enc, st, fd);
			if (err < 0) {
				goto end;
			}
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

/* wait4() gives the child's peak RSS as /usr/bin/time -f %M does */
static int do_run(const char *out, char **argv)
{
	struct timespec a, b;
	struct rusage ru;
	int status, fd;
	pid_t pid;

	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "bench-report-gen: %s: %s\n", out,
			strerror(errno));
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	if (pid == 0) {
		dup2(fd, STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "bench-report-gen: %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fd);
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	/* one line the benchmark script parses: microseconds KiB */
	printf("%lld %ld\n",
	       (long long)(b.tv_sec - a.tv_sec) * 1000000 +
		       (b.tv_nsec - a.tv_nsec) / 1000,
	       ru.ru_maxrss);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench-report-gen: %s failed (status %d)\n",
			argv[0], status);
		return -ECHILD;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: bench-report-gen --write FILE EVENTS [--stacks N [--elf PATH]...]\n"
		"       bench-report-gen --decode FILE\n"
		"       bench-report-gen --run OUT CMD [ARG]...\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "--write") == 0) {
		struct stacks sk;
		char *elfs[MAX_ELF];
		unsigned long nstacks = 0;
		unsigned int nelf = 0;
		int i, err;

		for (i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "--stacks") && i + 1 < argc) {
				nstacks = strtoul(argv[++i], NULL, 10);
				if (!nstacks || nstacks > MAX_STACKS) {
					return usage();
				}
			} else if (!strcmp(argv[i], "--elf") && i + 1 < argc &&
				   nelf < MAX_ELF) {
				elfs[nelf++] = argv[++i];
			} else {
				return usage();
			}
		}
		if (!nstacks) {
			return nelf ? usage() :
				      do_write(argv[2],
					       strtoull(argv[3], NULL, 10),
					       NULL) < 0;
		}
		memset(&sk, 0, sizeof(sk));
		err = stacks_init(&sk, (uint32_t)nstacks, elfs, nelf);
		if (!err) {
			err = do_write(argv[2], strtoull(argv[3], NULL, 10),
				       &sk);
		}
		stacks_free(&sk);
		return err < 0;
	}
	if (argc == 3 && strcmp(argv[1], "--decode") == 0) {
		return do_decode(argv[2]) < 0;
	}
	if (argc >= 4 && strcmp(argv[1], "--run") == 0) {
		return do_run(argv[2], argv + 3) < 0;
	}
	return usage();
}

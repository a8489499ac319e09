/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/sample.c - --sample-bytes under --source auto: which of the
 * allocator calls uprobes recorded go into the file.
 *
 * The interposer samples in the process (plugins/preload/interposer/
 * sample.c); here the same is done to the events read from the ring:
 * per thread a Poisson process of mean N over the bytes it allocates
 * (common/sample-draw.h), an allocation kept when a point falls in it,
 * the free or resize of a kept block kept, the rest dropped. The report
 * unbiases from the MTKR payload both halves write before their events.
 *
 * The hand-over. A process that execs an image with the interposer is
 * the uprobes' from its exec until its hello, the interposer's after
 * (source-auto.c). Under sampling the interposer's table of sampled
 * blocks starts empty at its hello: a block uprobes sampled before it and
 * freed after would have its allocation in the file and no free. So the
 * uprobes' events of an image from before its hello are dropped: such a
 * block is then in the file neither allocated nor freed. What that
 * leaves out is what ld.so and the libraries' constructors allocate
 * before the interposer's runs: none for most programs. After the hello
 * BPF records only what no interposer sees (functions in program files):
 * the uprobes' for good, sampled.
 *
 * Which images say hello is known only when they do. Each event carries
 * when its image began (BPF's emit(), reserved[0], from the exec); the
 * hello's record carries the same (control.c). An event is decided once
 * its image said hello, or once the control ring was read more than
 * HELLO_WAIT_NS after the image began with no hello for it (the image
 * stays the uprobes': sampled). Until then it waits here, behind its
 * process's other waiting events: only the first moments of each image
 * wait, so little is held, and a process's events keep their order. An
 * image that says hello later than that (late_hellos) had its first
 * events sampled: they are counted. An event whose image is unknown (0:
 * a process that did not exec in the tree) is the uprobes' from the
 * start.
 *
 * Kept blocks are known by (pid, image, address): the blocks of an old
 * image never match the new image's frees.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "ebpf.h"
#include "array.h"
#include "key-index.h"
#include "sample-draw.h"

/* How long after an image began its hello may come and still drop its
 * events: the interposer's constructor runs before main, a few ms after
 * the exec of a program with a hundred libraries here. */
#define HELLO_WAIT_NS 1000000000ull

struct smp_thread {
	int64_t left; /* bytes to the thread's next sample point */
	uint64_t rng;
};

struct smp_block {
	uint64_t addr; /* 0: an empty slot */
	uint64_t image;
	int32_t pid;
};

/* A process's events that wait to be decided. */
struct smp_wait {
	int32_t pid;
	int dirty;	    /* a hello of the process came since the last look */
	uint64_t oldest;    /* the earliest image of ev[] */
	struct mt_event *ev;
	size_t n, cap;
};

struct ebpf_sampler {
	uint64_t mean, seed;
	int seeded;
	/* (pid, image) of every hello -> index into hello_ts */
	struct mt_key_index hellos;
	uint64_t *hello_ts;
	size_t nhellos, hellos_cap;
	/* tid -> index into threads */
	struct mt_key_index tids;
	struct smp_thread *threads;
	size_t nthreads, threads_cap;
	/* the kept blocks: open addressing, linear probing, removal by
	 * shifting back (no tombstones), at most half full */
	struct smp_block *blocks;
	size_t blocks_cap, nblocks;
	/* the events not decided yet, per process in the order read: pid ->
	 * index into waits (kept once made, empty or not) */
	struct mt_key_index wait_of;
	struct smp_wait *waits;
	size_t nwaits, waits_cap;
	/* the indices of the waits with events */
	uint32_t *active;
	size_t nactive, active_cap;
	/* the control ring's hellos are all known up to this time */
	uint64_t ctl_ns;
	int said; /* the MTKR payload */
	uint64_t kept, dropped_prehello, late_hellos, lost;
};

static uint64_t block_home(const struct ebpf_sampler *s, int32_t pid,
			   uint64_t image, uint64_t addr)
{
	uint64_t h = (addr >> 4) ^ (image * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)(uint32_t)pid << 40);

	h *= 0xbf58476d1ce4e5b9ull;
	return (h >> 17) & (s->blocks_cap - 1);
}

static size_t block_find(const struct ebpf_sampler *s, int32_t pid,
			 uint64_t image, uint64_t addr)
{
	size_t i;

	if (!s->blocks_cap) {
		return SIZE_MAX;
	}
	for (i = block_home(s, pid, image, addr); s->blocks[i].addr;
	     i = (i + 1) & (s->blocks_cap - 1)) {
		const struct smp_block *b = &s->blocks[i];

		if (b->addr == addr && b->pid == pid && b->image == image) {
			return i;
		}
	}
	return SIZE_MAX;
}

static int block_grow(struct ebpf_sampler *s)
{
	size_t cap = s->blocks_cap ? s->blocks_cap * 2 : 4096;
	struct smp_block *old = s->blocks, *nb = calloc(cap, sizeof(*nb));
	size_t old_cap = s->blocks_cap;

	if (!nb) {
		return -ENOMEM;
	}
	s->blocks = nb;
	s->blocks_cap = cap;
	for (size_t j = 0; j < old_cap; j++) {
		size_t i;

		if (!old[j].addr) {
			continue;
		}
		for (i = block_home(s, old[j].pid, old[j].image, old[j].addr);
		     nb[i].addr; i = (i + 1) & (cap - 1)) {
		}
		nb[i] = old[j];
	}
	free(old);
	return 0;
}

/* 0, or -ENOMEM: the block is not kept (then it is not recorded) */
static int block_add(struct ebpf_sampler *s, int32_t pid, uint64_t image,
		     uint64_t addr)
{
	size_t i;

	if (block_find(s, pid, image, addr) != SIZE_MAX) {
		return 0; /* a free we never saw: the same block again */
	}
	if ((s->nblocks + 1) * 2 > s->blocks_cap && block_grow(s)) {
		return -ENOMEM;
	}
	for (i = block_home(s, pid, image, addr); s->blocks[i].addr;
	     i = (i + 1) & (s->blocks_cap - 1)) {
	}
	s->blocks[i] = (struct smp_block){ addr, image, pid };
	s->nblocks++;
	return 0;
}

/* 1: (pid, image, addr) was a kept block, and is forgotten now */
static int block_drop(struct ebpf_sampler *s, int32_t pid, uint64_t image,
		      uint64_t addr)
{
	size_t i = block_find(s, pid, image, addr), j, mask;

	if (i == SIZE_MAX) {
		return 0;
	}
	/* shift back what the hole would hide from its home */
	mask = s->blocks_cap - 1;
	for (j = (i + 1) & mask; s->blocks[j].addr; j = (j + 1) & mask) {
		size_t h = block_home(s, s->blocks[j].pid, s->blocks[j].image,
				      s->blocks[j].addr);

		/* j stays if its home is cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j)) {
			continue;
		}
		s->blocks[i] = s->blocks[j];
		i = j;
	}
	s->blocks[i].addr = 0;
	s->nblocks--;
	return 1;
}

static struct smp_thread *thread_of(struct ebpf_sampler *s, int32_t tid)
{
	uint32_t k;

	if (!mt_key_get(&s->tids, (uint64_t)(uint32_t)tid, 0, &k)) {
		return &s->threads[k];
	}
	if (s->nthreads == s->threads_cap) {
		struct smp_thread *p = mt_array_grow(
			s->threads, &s->threads_cap, s->nthreads + 1,
			sizeof(*p));

		if (!p) {
			return NULL;
		}
		s->threads = p;
	}
	k = (uint32_t)s->nthreads;
	if (mt_key_put(&s->tids, (uint64_t)(uint32_t)tid, 0, k)) {
		return NULL;
	}
	/* with a seed, the k-th thread to allocate draws the same in every
	 * run; else from the kernel's randomness */
	s->threads[k].rng = s->seed ^ ((uint64_t)k * 0xd1342543de82ef95ull);
	if (!s->seeded) {
		uint64_t r = 0;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
			r = ebpf_now_ns() ^ (uint64_t)(uint32_t)tid << 32;
		}
		s->threads[k].rng ^= r;
	}
	s->threads[k].left = mt_sample_draw(&s->threads[k].rng, s->mean);
	s->nthreads++;
	return &s->threads[k];
}

/* 1: an allocation of size bytes by tid takes a sample point */
static int take(struct ebpf_sampler *s, int32_t tid, uint64_t size)
{
	struct smp_thread *t = thread_of(s, tid);

	if (!t) {
		s->lost++;
		return 0;
	}
	if ((uint64_t)t->left > size) {
		t->left -= (int64_t)size;
		return 0;
	}
	t->left = mt_sample_draw(&t->rng, s->mean);
	return size != 0;
}

static int put(struct ebpf_state *st, struct mt_emitter *em,
	       const struct mt_event *ev)
{
	struct mt_event *slot = mt_emit(em);

	if (!slot) {
		return -EPIPE;
	}
	*slot = *ev;
	slot->reserved[0] = 0;
	st->smp->kept++;
	return 0;
}

/* What a sampled recording keeps of the event, as the interposer's
 * record_sampled() does. */
static int sample_one(struct ebpf_state *st, struct mt_emitter *em,
		      const struct mt_event *ev)
{
	struct ebpf_sampler *s = st->smp;
	uint64_t image = ev->reserved[0];
	struct mt_event e;
	int was, kept;

	switch (ev->kind) {
	case MT_EV_MALLOC:
	case MT_EV_CALLOC:
	case MT_EV_ALIGNED_ALLOC:
		if (!ev->addr || !take(s, ev->tid, ev->size)) {
			return 0;
		}
		if (block_add(s, ev->pid, image, ev->addr)) {
			s->lost++;
			return 0;
		}
		return put(st, em, ev);
	case MT_EV_FREE:
		return block_drop(s, ev->pid, image, ev->addr) ?
			       put(st, em, ev) :
			       0;
	case MT_EV_REALLOC:
		was = (ev->flags & MT_EVF_OLD_ADDR) && ev->old_addr &&
		      block_drop(s, ev->pid, image, ev->old_addr);
		if (!ev->addr && ev->size) {
			/* failed: the old block stays as it was */
			if (was && block_add(s, ev->pid, image, ev->old_addr)) {
				s->lost++;
			}
			return 0;
		}
		kept = ev->addr && take(s, ev->tid, ev->size);
		if (kept && block_add(s, ev->pid, image, ev->addr)) {
			s->lost++;
			kept = 0;
		}
		if (kept) {
			/* from a block not kept: as realloc(NULL, n) */
			e = *ev;
			e.old_addr = was ? ev->old_addr : 0;
			e.flags |= MT_EVF_OLD_ADDR;
			return put(st, em, &e);
		}
		if (was) {
			e = *ev;
			e.kind = MT_EV_FREE;
			e.addr = ev->old_addr;
			e.size = 0;
			e.old_addr = 0;
			e.flags &= (uint8_t)~MT_EVF_OLD_ADDR;
			return put(st, em, &e);
		}
		return 0;
	default:
		/* the system calls: the preload source's under auto */
		return put(st, em, ev);
	}
}

/* -1: its image said hello after it (dropped); 1: it is the uprobes'
 * (sampled); 0: not known yet. After the hello BPF records only the calls
 * of functions in program files, which no interposer sees (a static
 * mimalloc's): the uprobes' for good. */
static int decided(const struct ebpf_sampler *s, const struct mt_event *ev,
		   uint64_t ctl_ns)
{
	uint64_t image = ev->reserved[0];
	uint32_t v;

	if (!image) {
		return 1;
	}
	if (!mt_key_get(&s->hellos, (uint64_t)(uint32_t)ev->pid, image, &v)) {
		return ev->timestamp < s->hello_ts[v] ? -1 : 1;
	}
	return ctl_ns > image && ctl_ns - image > HELLO_WAIT_NS ? 1 : 0;
}

/* The events of w now decided go, in order, up to the first that is not
 * (a process's events keep their order). */
static int release_one(struct ebpf_state *st, struct mt_emitter *em,
		       struct smp_wait *w, uint64_t ctl_ns)
{
	struct ebpf_sampler *s = st->smp;
	size_t i;
	int err = 0;

	w->dirty = 0;
	for (i = 0; i < w->n && !err; i++) {
		int d = decided(s, &w->ev[i], ctl_ns);

		if (!d) {
			break;
		}
		if (d > 0) {
			err = sample_one(st, em, &w->ev[i]);
		} else {
			s->dropped_prehello++;
		}
	}
	memmove(w->ev, w->ev + i, (w->n - i) * sizeof(*w->ev));
	w->n -= i;
	w->oldest = UINT64_MAX;
	for (i = 0; i < w->n; i++) {
		if (w->ev[i].reserved[0] < w->oldest) {
			w->oldest = w->ev[i].reserved[0];
		}
	}
	return err;
}

/* Every process's waiting events now decided. A process is looked at
 * only when a hello of its came or its oldest image has waited long
 * enough: not every read looks at every event. */
static int release(struct ebpf_state *st, struct mt_emitter *em,
		   uint64_t ctl_ns)
{
	struct ebpf_sampler *s = st->smp;
	size_t k, n = 0;
	int err = 0;

	for (k = 0; k < s->nactive; k++) {
		struct smp_wait *w = &s->waits[s->active[k]];

		if (!err && (w->dirty || ctl_ns == UINT64_MAX ||
			     (ctl_ns > w->oldest &&
			      ctl_ns - w->oldest > HELLO_WAIT_NS))) {
			err = release_one(st, em, w, ctl_ns);
		}
		if (w->n) {
			s->active[n++] = s->active[k];
		}
	}
	s->nactive = n;
	return err;
}

static struct smp_wait *wait_get(struct ebpf_sampler *s, int32_t pid,
				 int add)
{
	uint32_t k;

	if (!mt_key_get(&s->wait_of, (uint64_t)(uint32_t)pid, 0, &k)) {
		return &s->waits[k];
	}
	if (!add) {
		return NULL;
	}
	if (s->nwaits == s->waits_cap) {
		struct smp_wait *p = mt_array_grow(s->waits, &s->waits_cap,
						   s->nwaits + 1, sizeof(*p));

		if (!p) {
			return NULL;
		}
		s->waits = p;
	}
	k = (uint32_t)s->nwaits;
	if (mt_key_put(&s->wait_of, (uint64_t)(uint32_t)pid, 0, k)) {
		return NULL;
	}
	s->waits[k] = (struct smp_wait){ .pid = pid, .oldest = UINT64_MAX };
	s->nwaits++;
	return &s->waits[k];
}

int ebpf_sample_event(struct ebpf_state *st, struct mt_emitter *em,
		      const struct mt_event *ev)
{
	struct ebpf_sampler *s = st->smp;
	struct smp_wait *w = wait_get(s, ev->pid, 0);
	int d = 0;

	/* a process with events waiting: behind them */
	if (!w || !w->n) {
		d = decided(s, ev, __atomic_load_n(&s->ctl_ns,
						   __ATOMIC_RELAXED));
	}
	if (d > 0) {
		return sample_one(st, em, ev);
	}
	if (d < 0) {
		s->dropped_prehello++;
		return 0;
	}
	if (!w && !(w = wait_get(s, ev->pid, 1))) {
		return -ENOMEM;
	}
	if (!w->n) {
		if (s->nactive == s->active_cap) {
			uint32_t *p = mt_array_grow(s->active, &s->active_cap,
						    s->nactive + 1, sizeof(*p));

			if (!p) {
				return -ENOMEM;
			}
			s->active = p;
		}
		s->active[s->nactive++] = (uint32_t)(w - s->waits);
	}
	if (w->n == w->cap) {
		struct mt_event *p = mt_array_grow(w->ev, &w->cap, w->n + 1,
						   sizeof(*p));

		if (!p) {
			return -ENOMEM;
		}
		w->ev = p;
	}
	w->ev[w->n++] = *ev;
	if (ev->reserved[0] < w->oldest) {
		w->oldest = ev->reserved[0];
	}
	return 0;
}

int ebpf_sample_flush(struct ebpf_state *st, struct mt_emitter *em, int all)
{
	struct ebpf_sampler *s = st->smp;

	return release(st, em,
		       all ? UINT64_MAX :
			     __atomic_load_n(&s->ctl_ns, __ATOMIC_RELAXED));
}

void ebpf_sample_ctl_read(struct ebpf_state *st, uint64_t before_ns)
{
	if (st->smp) {
		__atomic_store_n(&st->smp->ctl_ns, before_ns, __ATOMIC_RELAXED);
	}
}

void ebpf_sample_hello(struct ebpf_state *st, int32_t pid, uint64_t image,
		       uint64_t ts)
{
	struct ebpf_sampler *s = st->smp;

	if (!s || !image) {
		return;
	}
	if (ts - image > HELLO_WAIT_NS) {
		s->late_hellos++;
	}
	if (s->nhellos == s->hellos_cap) {
		uint64_t *p = mt_array_grow(s->hello_ts, &s->hellos_cap,
					    s->nhellos + 1, sizeof(*p));

		if (!p) {
			s->late_hellos++; /* not kept: its events are sampled */
			return;
		}
		s->hello_ts = p;
	}
	if (mt_key_put(&s->hellos, (uint64_t)(uint32_t)pid, image,
		       (uint32_t)s->nhellos)) {
		s->late_hellos++;
		return;
	}
	s->hello_ts[s->nhellos++] = ts;
	{
		struct smp_wait *w = wait_get(s, pid, 0);

		if (w) {
			w->dirty = 1;
		}
	}
}

/* The MTKR payload (plugins/ebpf/README.md), before the first event: the
 * preload source says the same. */
int ebpf_sample_say(struct ebpf_state *st, struct mt_emitter *em)
{
	struct ebpf_sampler *s = st->smp;
	unsigned char p[MT_SAMPLE_PAYLOAD_LEN];
	int err;

	if (s->said) {
		return 0;
	}
	mt_sample_payload(p, s->mean, s->seed, s->seeded);
	err = em->meta ? em->meta(em, p, sizeof(p)) : -ENOTSUP;
	if (err < 0) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot say the recording is sampled (the encoder takes no metadata: %s)",
			 strerror(-err));
		return err;
	}
	s->said = 1;
	return 0;
}

int ebpf_sample_create(struct ebpf_state *st)
{
	if (!st->sample_bytes) {
		return 0;
	}
	st->smp = calloc(1, sizeof(*st->smp));
	if (!st->smp) {
		return -ENOMEM;
	}
	st->smp->mean = st->sample_bytes;
	st->smp->seed = st->sample_seed;
	st->smp->seeded = st->sample_seeded;
	return 0;
}

void ebpf_sample_log(struct ebpf_state *st)
{
	struct ebpf_sampler *s = st->smp;

	if (!s) {
		return;
	}
	ebpf_log(st, MT_LOG_INFO,
		 "sampling: %llu of uprobes' events kept, %llu dropped from images the interposer took over",
		 (unsigned long long)s->kept,
		 (unsigned long long)s->dropped_prehello);
	if (s->late_hellos) {
		ebpf_log(st, MT_LOG_WARN,
			 "sampling: %llu processes said hello more than %llu ms after their exec: what uprobes sampled of them before it may show as not freed",
			 (unsigned long long)s->late_hellos,
			 (unsigned long long)(HELLO_WAIT_NS / 1000000));
	}
	if (s->lost) {
		ebpf_log(st, MT_LOG_WARN,
			 "sampling: %llu sampled allocations not recorded (no memory for their table); the estimates are that much low",
			 (unsigned long long)s->lost);
	}
}

void ebpf_sample_destroy(struct ebpf_state *st)
{
	struct ebpf_sampler *s = st->smp;

	if (!s) {
		return;
	}
	mt_key_free(&s->hellos);
	free(s->hello_ts);
	mt_key_free(&s->tids);
	free(s->threads);
	free(s->blocks);
	for (size_t k = 0; k < s->nwaits; k++) {
		free(s->waits[k].ev);
	}
	free(s->waits);
	free(s->active);
	mt_key_free(&s->wait_of);
	free(s);
	st->smp = NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload-ring.c - the preload source's shared ring
 * (plugins/preload/ring.h) in one process: many producers and a small
 * ring lose nothing and keep each producer's order; a writer that died
 * between claiming a slot and committing it is skipped, before or after
 * head passed it; producers waiting for room are counted and let go when
 * the consumer has gone, or when its heartbeat stops, and not while it
 * beats. Words written over the ring (P5) are skipped and counted, never
 * a wait without end for either side. TSC timestamps (tsc.c) come out as
 * the CLOCK_MONOTONIC ns they were taken at, once, in order.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ring-put.h"
#include "ring-read.h"
#include "tsc.h"

/* as the source lays it out: the slots after the whole header */
#define HEADER ((sizeof(struct pl_shm) + 4095) / 4096 * 4096)

static struct pl_shm *ring_new(uint64_t nslots)
{
	size_t size = HEADER + nslots * sizeof(struct mt_event);
	struct pl_shm *shm;

	shm = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(shm, MAP_FAILED);
	shm->map_size = size;
	shm->consumer_pid = (int32_t)getpid();
	shm->enabled = 1;
	pl_ring_init(shm, nslots, HEADER);
	return shm;
}

static void ring_free(struct pl_shm *shm)
{
	munmap(shm, shm->map_size);
}

static uint32_t gettid_(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* A thread id that no longer exists: a child that has been reaped. */
static uint32_t dead_tid(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return (uint32_t)pid;
}

struct producer {
	struct pl_shm *shm;
	uint32_t id;
	uint64_t count;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct mt_event ev;
	uint32_t tid = gettid_();
	uint64_t i;

	memset(&ev, 0, sizeof(ev));
	for (i = 0; i < p->count; i++) {
		ev.addr = p->id;
		ev.size = i;
		ck_assert_int_eq(pl_ring_put(p->shm, &ev, tid), 0);
	}
	return NULL;
}

/* Take everything there is; returns how many. */
static size_t consume(struct pl_reader *rd, uint64_t *next, size_t nprod)
{
	const struct mt_event *e;
	size_t n = 0;

	while ((e = pl_ring_peek(rd))) {
		ck_assert_uint_lt(e->addr, nprod);
		/* each producer's events in its order, none twice */
		ck_assert_uint_eq(e->size, next[e->addr]);
		next[e->addr]++;
		pl_ring_advance(rd);
		n++;
	}
	pl_ring_publish(rd);
	return n;
}

START_TEST(test_many_producers)
{
	enum { NPROD = 4, COUNT = 200000 };
	struct pl_shm *shm = ring_new(64);
	struct producer p[NPROD];
	pthread_t th[NPROD];
	uint64_t next[NPROD] = { 0 };
	struct pl_reader rd;
	size_t total = 0;
	int i;

	pl_reader_init(&rd, shm, NULL);
	for (i = 0; i < NPROD; i++) {
		p[i] = (struct producer){ shm, (uint32_t)i, COUNT };
		pthread_create(&th[i], NULL, produce, &p[i]);
	}
	while (total < (size_t)NPROD * COUNT) {
		total += consume(&rd, next, NPROD);
	}
	for (i = 0; i < NPROD; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(next[i], COUNT);
	}
	ck_assert_uint_eq(pl_ring_unread(&rd), 0);
	/* 64 slots for 800,000 events: they waited */
	ck_assert_uint_gt(shm->waits, 0);
	ring_free(shm);
}
END_TEST

/* Claim the slot at head as a dead thread would have left it. */
static void claim_dead(struct pl_shm *shm, int move_head)
{
	struct mt_event *slot = &pl_slots(shm)[shm->head & (shm->nslots - 1)];
	uint32_t lap = (uint32_t)(shm->head >> shm->shift);

	slot->reserved[0] = pl_word(lap, PL_CLAIMED, dead_tid());
	if (move_head) {
		shm->head++;
	}
}

static void put_one(struct pl_shm *shm, uint64_t size)
{
	struct mt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.size = size;
	ck_assert_int_eq(pl_ring_put(shm, &ev, gettid_()), 0);
}

static void check_skip(int move_head)
{
	struct pl_shm *shm = ring_new(8);
	struct pl_reader rd;
	const struct mt_event *e;
	int i;

	pl_reader_init(&rd, shm, NULL);
	put_one(shm, 1);
	claim_dead(shm, move_head);
	ck_assert_ptr_nonnull(pl_ring_peek(&rd));
	pl_ring_advance(&rd);
	/* stalled: not skipped before stall_ns, skipped after */
	ck_assert_ptr_null(pl_ring_peek(&rd));
	ck_assert_int_eq(pl_ring_unstall(&rd, 1000, 500), 0);
	ck_assert_int_eq(pl_ring_unstall(&rd, 1200, 500), 0);
	ck_assert_int_eq(pl_ring_unstall(&rd, 1600, 500), 1);
	ck_assert_uint_eq(rd.abandoned, 1);
	/* producers go on past it, several laps */
	for (i = 2; i < 40; i++) {
		put_one(shm, (uint64_t)i);
		e = pl_ring_peek(&rd);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->size, (uint64_t)i);
		pl_ring_advance(&rd);
		pl_ring_publish(&rd);
	}
	ring_free(shm);
}

START_TEST(test_dead_writer_after_head)
{
	check_skip(1);
}
END_TEST

/* Killed between its claim and moving head on: the consumer skips the
 * slot while head still points at it. */
START_TEST(test_dead_writer_at_head)
{
	alarm(10); /* a producer spinning on the skipped slot would hang */
	check_skip(0);
	alarm(0);
}
END_TEST

/* A live writer (this thread) is never skipped. */
START_TEST(test_live_writer_waited_for)
{
	struct pl_shm *shm = ring_new(8);
	struct mt_event *slot = pl_slots(shm);
	struct pl_reader rd;

	pl_reader_init(&rd, shm, NULL);
	slot->reserved[0] = pl_word(0, PL_CLAIMED, gettid_());
	shm->head = 1;
	ck_assert_int_eq(pl_ring_unstall(&rd, 1000, 500), 0);
	ck_assert_int_eq(pl_ring_unstall(&rd, 100000, 500), 0);
	ck_assert_uint_eq(rd.tail, 0);
	ring_free(shm);
}
END_TEST

struct waiter {
	struct pl_shm *shm;
	int ret;
};

static void *put_when_full(void *arg)
{
	struct waiter *w = arg;
	struct mt_event ev;

	memset(&ev, 0, sizeof(ev));
	w->ret = pl_ring_put(w->shm, &ev, gettid_());
	return NULL;
}

static uint64_t now_ms(void)
{
	return pl_now_ns() / 1000000;
}

/* A full ring: the producer waits until the consumer reads (counted),
 * or gives up at once when the consumer is gone. */
START_TEST(test_wait_and_gone)
{
	struct pl_shm *shm = ring_new(8);
	struct waiter w = { shm, 1 };
	struct pl_reader rd;
	pthread_t th;
	uint64_t t0;
	int i;

	pl_reader_init(&rd, shm, NULL);
	for (i = 0; i < 8; i++) {
		put_one(shm, (uint64_t)i);
	}
	pthread_create(&th, NULL, put_when_full, &w);
	usleep(100000);
	ck_assert_int_eq(w.ret, 1); /* still waiting */
	ck_assert_ptr_nonnull(pl_ring_peek(&rd));
	pl_ring_advance(&rd);
	pl_ring_publish(&rd);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_uint_eq(shm->waits, 1);
	ck_assert_uint_ge(shm->wait_ns, 90000000u);

	/* full again; the consumer goes */
	w.ret = 1;
	pthread_create(&th, NULL, put_when_full, &w);
	usleep(50000);
	t0 = now_ms();
	__atomic_store_n(&shm->dead, PL_DEAD, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.ret, -1);
	/* it noticed within one wait slice */
	ck_assert_uint_lt(now_ms() - t0, 300);
	ring_free(shm);
}
END_TEST

/* The consumer killed, not destroyed (SIGKILL, the OOM killer), or its
 * pid given to another process since: its heartbeat stands still, and a
 * waiting producer gives up after PL_GONE_MS, counted in gave_up. Its pid
 * plays no part (it used to: a reused pid, or one of another pid
 * namespace, left producers waiting forever or giving up at once). */
START_TEST(test_heartbeat_stops)
{
	struct pl_shm *shm = ring_new(8);
	struct waiter w = { shm, 1 };
	pthread_t th;
	uint64_t t0;
	int i;

	for (i = 0; i < 8; i++) {
		put_one(shm, (uint64_t)i);
	}
	/* a pid that is alive (ours): no matter */
	shm->consumer_pid = (int32_t)getpid();
	t0 = now_ms();
	pthread_create(&th, NULL, put_when_full, &w);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.ret, -1);
	ck_assert_uint_ge(now_ms() - t0, PL_GONE_MS);
	ck_assert_uint_lt(now_ms() - t0, PL_GONE_MS + 1000);
	ck_assert_uint_eq(shm->gave_up, 1);
	ring_free(shm);
}
END_TEST

struct beater {
	struct pl_shm *shm;
	int stop;
};

static void *beat(void *arg)
{
	struct beater *b = arg;

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&b->shm->beat, 1, __ATOMIC_RELEASE);
		usleep(PL_BEAT_MS * 1000);
	}
	return NULL;
}

/* A consumer that beats but is slow to read (a sink that blocks) is
 * waited for as long as it takes, past PL_GONE_MS. */
START_TEST(test_heartbeat_keeps_waiting)
{
	struct pl_shm *shm = ring_new(8);
	struct waiter w = { shm, 1 };
	struct beater b = { shm, 0 };
	struct pl_reader rd;
	pthread_t th, bt;
	int i;

	pl_reader_init(&rd, shm, NULL);
	for (i = 0; i < 8; i++) {
		put_one(shm, (uint64_t)i);
	}
	pthread_create(&bt, NULL, beat, &b);
	pthread_create(&th, NULL, put_when_full, &w);
	usleep((PL_GONE_MS + 700) * 1000);
	ck_assert_int_eq(w.ret, 1); /* still waiting */
	ck_assert_ptr_nonnull(pl_ring_peek(&rd));
	pl_ring_advance(&rd);
	pl_ring_publish(&rd);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_uint_eq(shm->gave_up, 0);
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
	ring_free(shm);
}
END_TEST

static struct mt_event *slot_of(struct pl_shm *shm, uint64_t pos)
{
	return &pl_slots(shm)[pos & (shm->nslots - 1)];
}

/* Read what is there, skipping what unstall skips, until n events came
 * out or nothing moves; returns the events' sizes in out. */
static size_t drain_all(struct pl_reader *rd, uint64_t *out, size_t n,
			uint64_t *now)
{
	size_t got = 0;
	int idle = 0;

	while (got < n && idle < 4) {
		const struct mt_event *e = pl_ring_peek(rd);
		struct mt_event ev;

		if (!e) {
			*now += 1000;
			idle = pl_ring_unstall(rd, *now, 500) ? 0 : idle + 1;
			continue;
		}
		idle = 0;
		if (pl_ring_take(rd, e, &ev) == 0) {
			out[got++] = ev.size;
		}
	}
	pl_ring_publish(rd);
	return got;
}

/* Words of no state of the protocol, at the tail: a word of another lap,
 * a free word where head has passed (after stall_ns), an event of no
 * known kind. Each is skipped and counted; the events around them all
 * come out, in order. (On 9e2f06c the reader stopped at the first for
 * good, and the ring filled.) */
START_TEST(test_stray_words_skipped)
{
	struct pl_shm *shm = ring_new(16);
	struct pl_reader rd;
	uint64_t sizes[16], now = 1000000;
	size_t n;

	pl_reader_init(&rd, shm, NULL);
	put_one(shm, 1);
	put_one(shm, 2); /* pos 1: its word gets another lap's */
	put_one(shm, 3);
	put_one(shm, 4); /* pos 3: written over with a free word */
	put_one(shm, 5);
	put_one(shm, 6); /* pos 5: no kind of ours */
	put_one(shm, 7);
	slot_of(shm, 1)->reserved[0] = pl_word(7, PL_COMMITTED, 1);
	slot_of(shm, 3)->reserved[0] = pl_word(0, PL_FREE, 0);
	slot_of(shm, 5)->kind = 0x77;
	n = drain_all(&rd, sizes, 16, &now);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(sizes[0], 1);
	ck_assert_uint_eq(sizes[1], 3);
	ck_assert_uint_eq(sizes[2], 5);
	ck_assert_uint_eq(sizes[3], 7);
	ck_assert_uint_eq(rd.corrupt, 3);
	ck_assert_uint_eq(rd.tail, 7);
	/* and the ring goes on, laps later */
	for (n = 0; n < 40; n++) {
		put_one(shm, 100 + n);
		ck_assert_uint_eq(drain_all(&rd, sizes, 1, &now), 1);
		ck_assert_uint_eq(sizes[0], 100 + n);
	}
	ck_assert_uint_eq(rd.corrupt, 3);
	ring_free(shm);
}
END_TEST

/* A stray word in the slot at head: a word of no lap, and a previous
 * lap's word where the consumer has read that position. The producer
 * takes the slot over it instead of waiting (on 9e2f06c: forever, every
 * producer of the tree), and its event comes out. */
START_TEST(test_stray_word_at_head)
{
	struct pl_shm *shm = ring_new(8);
	struct pl_reader rd;
	uint64_t sizes[8], now = 1000000;
	int i;

	alarm(20);
	pl_reader_init(&rd, shm, NULL);
	slot_of(shm, 0)->reserved[0] = pl_word(0x1234, PL_CLAIMED, 99);
	put_one(shm, 1);
	ck_assert_uint_eq(drain_all(&rd, sizes, 1, &now), 1);
	ck_assert_uint_eq(sizes[0], 1);
	for (i = 2; i < 9; i++) {
		put_one(shm, (uint64_t)i);
	}
	ck_assert_uint_eq(drain_all(&rd, sizes, 7, &now), 7);
	/* head is 8 (lap 1, slot 0), the consumer read everything: slot 0
	 * set back to a lap 0 event is a stray word, not a full ring */
	slot_of(shm, 8)->reserved[0] = pl_word(0, PL_COMMITTED, 99);
	put_one(shm, 9);
	ck_assert_uint_eq(drain_all(&rd, sizes, 1, &now), 1);
	ck_assert_uint_eq(sizes[0], 9);
	ck_assert_uint_eq(rd.corrupt, 0); /* no event was lost */
	alarm(0);
	ring_free(shm);
}
END_TEST

/* head written over (far ahead, or behind the tail): the reader puts it
 * back to the tail, and producers claim from there again. */
START_TEST(test_head_written_over)
{
	struct pl_shm *shm = ring_new(8);
	struct pl_reader rd;
	uint64_t sizes[8], now = 1000000;

	alarm(20);
	pl_reader_init(&rd, shm, NULL);
	put_one(shm, 1);
	ck_assert_uint_eq(drain_all(&rd, sizes, 1, &now), 1);
	shm->head = 1ull << 40;
	ck_assert_ptr_null(pl_ring_peek(&rd));
	ck_assert_int_eq(pl_ring_unstall(&rd, now, 500), 0);
	ck_assert_uint_eq(shm->head, 1);
	ck_assert_uint_eq(pl_ring_unread(&rd), 0);
	put_one(shm, 2);
	ck_assert_uint_eq(drain_all(&rd, sizes, 1, &now), 1);
	ck_assert_uint_eq(sizes[0], 2);
	ck_assert_uint_eq(rd.corrupt, 1);
	alarm(0);
	ring_free(shm);
}
END_TEST

/* The geometry is read once: a producer's view made before another
 * process wrote over nslots and slots_offset still puts into the ring,
 * and a header whose geometry does not fit the mapping is refused. */
START_TEST(test_geometry_copied)
{
	struct pl_shm *shm = ring_new(8);
	struct pl_reader rd;
	struct pl_ring r, bad;
	struct mt_event ev;
	const struct mt_event *e;

	ck_assert_int_eq(pl_ring_attach(&r, shm, shm->map_size), 0);
	pl_reader_init(&rd, shm, NULL);
	shm->slots_offset = 1ull << 40;
	shm->nslots = 1ull << 50;
	ck_assert_int_eq(pl_ring_attach(&bad, shm, shm->map_size), -1);
	memset(&ev, 0, sizeof(ev));
	ev.size = 42;
	ck_assert_int_eq(pl_ring_put_r(&r, &ev, gettid_()), 0);
	e = pl_ring_peek(&rd);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->size, 42);
	shm->slots_offset = HEADER;
	shm->nslots = 8;
	ring_free(shm);
}
END_TEST

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define TSC_N 20000
/* how far a converted count may be from the clock read next to it: the
 * pairs' own error is tens of ns; a wrong scale is off by far more */
#define TSC_SLACK_NS 2000

/* Counts taken next to clock_gettime, converted later and out of order
 * (as the consumer meets them): each within TSC_SLACK_NS of its clock
 * reading, and the same count always the same ns, in order. */
START_TEST(test_tsc_matches_clock)
{
	static uint64_t t[TSC_N], t2[TSC_N], ns[TSC_N], out[TSC_N];
	struct pl_tsc *c;
	const char *why;
	int i;

	if (!pl_tsc_usable(&why)) {
		fprintf(stderr, "test_tsc_matches_clock: not run: %s\n", why);
		return;
	}
	c = malloc(sizeof(*c));
	ck_assert_ptr_nonnull(c);
	pl_tsc_init(c);
	for (i = 0; i < TSC_N; i++) {
		uint64_t a, b;

		do { /* not interrupted between the three reads */
			a = pl_rdtsc();
			ns[i] = mono();
			b = pl_rdtsc();
		} while (b - a > 10000);
		t[i] = a;
		t2[i] = b;
		if (i % 1000 == 999) {
			usleep(500); /* the consumer's pairs come and go */
		}
		/* convert some as they come, the rest later */
		if (i % 3 == 0) {
			out[i] = pl_tsc_ns(c, t[i]);
		}
	}
	for (i = TSC_N - 1; i >= 0; i--) {
		uint64_t v = pl_tsc_ns(c, t[i]);

		if (i % 3 == 0) {
			ck_assert_msg(v == out[i], "count %d: %llu then %llu", i,
				      (unsigned long long)out[i],
				      (unsigned long long)v);
		}
		out[i] = v;
	}
	for (i = 0; i < TSC_N; i++) {
		/* the count t was taken before the clock read, t2 after */
		uint64_t v2 = pl_tsc_ns(c, t2[i]);

		ck_assert_msg(out[i] <= ns[i] + TSC_SLACK_NS &&
				      v2 + TSC_SLACK_NS >= ns[i],
			      "pair %d: %llu and %llu ns, the clock said %llu",
			      i, (unsigned long long)out[i],
			      (unsigned long long)v2,
			      (unsigned long long)ns[i]);
		ck_assert_uint_le(v2 - out[i], 10000);
		if (i) {
			ck_assert_uint_ge(out[i], out[i - 1]);
		}
	}
	free(c);
}
END_TEST

/* With shm->tsc the reader converts an event's timestamp once, in place,
 * however often it is peeked; a metadata chunk's bytes stay as written. */
START_TEST(test_tsc_in_ring)
{
	struct pl_shm *shm = ring_new(8);
	struct pl_reader rd;
	struct pl_tsc *c;
	struct mt_event ev;
	const struct mt_event *e;
	const char *why;
	uint64_t t, before, after, v;

	if (!pl_tsc_usable(&why)) {
		fprintf(stderr, "test_tsc_in_ring: not run: %s\n", why);
		ring_free(shm);
		return;
	}
	c = malloc(sizeof(*c));
	ck_assert_ptr_nonnull(c);
	pl_tsc_init(c);
	shm->tsc = 1;
	pl_reader_init(&rd, shm, c);
	memset(&ev, 0, sizeof(ev));
	before = mono();
	t = pl_rdtsc();
	after = mono();
	ev.timestamp = t;
	ev.kind = MT_EV_MALLOC;
	ck_assert_int_eq(pl_ring_put(shm, &ev, gettid_()), 0);
	ev.timestamp = 0x1122334455667788ull;
	ev.kind = PL_META_KIND;
	ck_assert_int_eq(pl_ring_put(shm, &ev, gettid_()), 0);
	usleep(100000); /* the consumer reads later */
	e = pl_ring_peek(&rd);
	ck_assert_ptr_nonnull(e);
	v = e->timestamp;
	ck_assert_uint_ge(v + TSC_SLACK_NS, before);
	ck_assert_uint_le(v, after + TSC_SLACK_NS);
	ck_assert_uint_eq(pl_ring_peek_at(&rd, 0)->timestamp, v);
	e = pl_ring_peek_at(&rd, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->timestamp, 0x1122334455667788ull);
	ck_assert_uint_eq(pl_ring_peek(&rd)->timestamp, v);
	pl_ring_advance(&rd);
	ck_assert_uint_eq(pl_ring_peek(&rd)->timestamp, 0x1122334455667788ull);
	pl_ring_advance(&rd);
	ck_assert_ptr_null(pl_ring_peek(&rd));
	free(c);
	ring_free(shm);
}
END_TEST

/* A reader that has not read yet is woken by the first wakeup_at
 * events, through the doorbell, and not before. It used to be woken only
 * by its tick or a full ring: a fast program filled the ring while the
 * reader's core idled. The doorbell is a futex word in the shared
 * memory: no descriptor number of the program's is ever written (on
 * 9e2f06c an eventfd by number, which a program that reused the number
 * for a file got its wake-ups written into). A quiet producer (seccomp)
 * does not ring: the watcher looks itself. */
START_TEST(test_first_fill_wakes)
{
	struct pl_shm *shm = ring_new(1024);
	struct pl_ring r;
	struct mt_event ev;
	uint64_t i;

	ck_assert_int_eq(pl_ring_attach(&r, shm, shm->map_size), 0);
	ck_assert_uint_eq(shm->wakeup_at, 128);
	memset(&ev, 0, sizeof(ev));
	ev.kind = MT_EV_MALLOC;
	/* the producer looks at the fill once every 16 positions */
	for (i = 0; i < shm->wakeup_at; i++) {
		ck_assert_int_eq(pl_ring_put_r(&r, &ev, gettid_()), 0);
	}
	ck_assert_uint_eq(shm->doorbell, 0);
	ck_assert_uint_eq(shm->sleeping, 1);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(pl_ring_put_r(&r, &ev, gettid_()), 0);
	}
	ck_assert_uint_eq(shm->doorbell, 1);
	ck_assert_uint_eq(shm->sleeping, 0);

	shm->sleeping = 1;
	r.quiet = 1;
	for (i = 0; i < 64; i++) {
		ck_assert_int_eq(pl_ring_put_r(&r, &ev, gettid_()), 0);
	}
	ck_assert_uint_eq(shm->doorbell, 1);
	ck_assert_uint_eq(shm->sleeping, 1);
	ring_free(shm);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("preload-ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_producers);
	tcase_add_test(tc, test_dead_writer_after_head);
	tcase_add_test(tc, test_dead_writer_at_head);
	tcase_add_test(tc, test_live_writer_waited_for);
	tcase_add_test(tc, test_wait_and_gone);
	tcase_add_test(tc, test_heartbeat_stops);
	tcase_add_test(tc, test_heartbeat_keeps_waiting);
	tcase_add_test(tc, test_stray_words_skipped);
	tcase_add_test(tc, test_stray_word_at_head);
	tcase_add_test(tc, test_head_written_over);
	tcase_add_test(tc, test_geometry_copied);
	tcase_add_test(tc, test_tsc_matches_clock);
	tcase_add_test(tc, test_tsc_in_ring);
	tcase_add_test(tc, test_first_fill_wakes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(ring_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

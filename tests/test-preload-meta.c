/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload-meta.c - metadata records through the preload event
 * ring (plugins/preload/source/meta.c) in one process: producer threads cut
 * records of 1 byte to 70 KiB (far longer than a 64-slot ring) into
 * chunks, with events between them that refer to the record just put;
 * the consumer puts them back together. Every record reaches the
 * emitter whole (content checked), once, in each producer's order, and
 * before any event put after it; a record whose writer stopped halfway
 * is never emitted. Hostile chunks, fed straight to pl_meta_take: a
 * flood of records never finished, chunks that break the protocol,
 * records over the size cap and over the byte budget stay within
 * meta.c's bounds in memory and time, are counted, and leave the good
 * records around them whole.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "meta.h"
#if defined(__SANITIZE_ADDRESS__)
#define MT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MT_TEST_ASAN 1
#endif
#endif
#ifndef MT_TEST_ASAN
#define MT_TEST_ASAN 0
#endif

#include "ring-put.h"
#include "ring-read.h"

#define NPROD 4
#define NREC 60
#define MAXLEN (70u << 10)

static struct pl_shm *ring_new(uint64_t nslots)
{
	size_t header = (sizeof(struct pl_shm) + 4095) & ~(size_t)4095;
	size_t size = header + nslots * sizeof(struct mt_event);
	struct pl_shm *shm;

	shm = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(shm, MAP_FAILED);
	shm->map_size = size;
	shm->consumer_pid = (int32_t)getpid();
	shm->enabled = 1;
	pl_ring_init(shm, nslots, header);
	return shm;
}

/* record seq of producer p: its length and byte i */
static size_t rec_len(uint32_t p, uint32_t seq)
{
	/* 1 byte, one chunk exactly, and up to 70 KiB */
	static const size_t some[] = { 1, PL_META_CHUNK, PL_META_CHUNK + 1 };

	if (seq < 3) {
		return some[seq];
	}
	return 1 + ((size_t)(p * 7919u + seq * 104729u) % MAXLEN);
}

static unsigned char rec_byte(uint32_t p, uint32_t seq, size_t i)
{
	return (unsigned char)(p * 31u + seq * 17u + i * 13u + (i >> 8));
}

struct prod {
	struct pl_shm *shm;
	uint32_t p;
	int stop_at; /* stop halfway through this record (-1: never) */
};

struct put_ctx {
	struct pl_shm *shm;
	uint32_t tid;
	int left; /* chunks to put before stopping; < 0: all */
};

static int put_chunk(const struct mt_event *ev, void *arg)
{
	struct put_ctx *c = arg;

	if (c->left == 0) {
		return -1;
	}
	if (c->left > 0) {
		c->left--;
	}
	return pl_ring_put(c->shm, ev, c->tid);
}

static void *produce(void *arg)
{
	struct prod *pr = arg;
	struct put_ctx c = { pr->shm, (uint32_t)syscall(SYS_gettid), -1 };
	unsigned char *buf = malloc(MAXLEN + 8);
	uint32_t seq;

	for (seq = 0; seq < NREC; seq++) {
		size_t len = rec_len(pr->p, seq), i;
		struct mt_event ev;
		/* the id: producer and sequence, checked by the consumer */
		uint32_t id = pr->p << 16 | seq;

		/* the first 8 bytes say whose it is, the rest a pattern */
		for (i = 0; i < len; i++) {
			buf[i] = rec_byte(pr->p, seq, i);
		}
		if ((int)seq == pr->stop_at) {
			c.left = (int)(len / PL_META_CHUNK) / 2;
		}
		ck_assert_int_eq(pl_meta_cut(id, buf, len, put_chunk, &c) < 0,
				 (int)seq == pr->stop_at);
		c.left = -1;
		/* an event that needs the record just put */
		memset(&ev, 0, sizeof(ev));
		ev.kind = MT_EV_MALLOC;
		ev.addr = (uint64_t)id;
		ck_assert_int_eq(pl_ring_put(pr->shm, &ev, c.tid), 0);
	}
	free(buf);
	return NULL;
}

struct sink {
	struct mt_emitter em;
	/* the next record expected from each producer */
	uint32_t next[NPROD];
	int stop_at[NPROD];
	unsigned long records, events, bad;
	uint32_t last_id; /* of the record being delivered */
	int have_id;
};

/* em->meta: the record must be the next of its producer, whole. */
static int sink_meta(struct mt_emitter *em, const void *data, size_t len)
{
	struct sink *s = (struct sink *)em;
	const unsigned char *d = data;
	uint32_t p, seq;
	size_t i;

	ck_assert(s->have_id);
	p = s->last_id >> 16;
	seq = s->last_id & 0xffff;
	ck_assert_uint_lt(p, NPROD);
	if ((int)s->next[p] == s->stop_at[p]) {
		s->next[p]++; /* the cut one is skipped, never emitted */
	}
	ck_assert_msg(seq == s->next[p], "producer %u: record %u, expected %u",
		      p, seq, s->next[p]);
	ck_assert_uint_eq(len, rec_len(p, seq));
	for (i = 0; i < len; i++) {
		if (d[i] != rec_byte(p, seq, i)) {
			s->bad++;
			break;
		}
	}
	s->next[p]++;
	s->records++;
	return 0;
}

static void consume(struct pl_shm *shm, struct sink *s, uint64_t total)
{
	struct pl_meta_rx rx;
	struct pl_reader rd;
	uint64_t seen = 0;

	memset(&rx, 0, sizeof(rx));
	pl_reader_init(&rd, shm, NULL);
	while (seen < total) {
		const struct mt_event *e = pl_ring_peek(&rd);

		if (!e) {
			pl_ring_publish(&rd);
			sched_yield();
			continue;
		}
		if (e->kind == PL_META_KIND) {
			s->last_id = e->stack_id;
			s->have_id = 1;
			ck_assert_int_eq(pl_meta_take(&rx, e, &s->em, NULL,
						      NULL),
					 0);
			s->have_id = 0;
		} else {
			uint32_t p = (uint32_t)e->addr >> 16;
			uint32_t seq = (uint32_t)e->addr & 0xffff;

			/* its record was emitted before it (or was cut) */
			ck_assert_msg(s->next[p] > seq ||
					      (int)seq == s->stop_at[p],
				      "event of record %u/%u before it", p,
				      seq);
			s->events++;
		}
		pl_ring_advance(&rd);
		seen++;
	}
	pl_ring_publish(&rd);
	/* the cut records, never finished */
	ck_assert_uint_eq(pl_meta_rx_free(&rx), 1);
}

START_TEST(test_records_through_small_ring)
{
	struct pl_shm *shm = ring_new(64);
	struct prod pr[NPROD];
	pthread_t th[NPROD];
	struct sink s;
	uint64_t total = 0;
	uint32_t p, seq;

	memset(&s, 0, sizeof(s));
	s.em.meta = sink_meta;
	for (p = 0; p < NPROD; p++) {
		pr[p].shm = shm;
		pr[p].p = p;
		/* producer 1 stops halfway through its record 10, as if
		 * killed, and goes on with the next */
		pr[p].stop_at = p == 1 ? 10 : -1;
		s.stop_at[p] = pr[p].stop_at;
		for (seq = 0; seq < NREC; seq++) {
			size_t len = rec_len(p, seq);
			uint64_t chunks = (len + PL_META_CHUNK - 1) /
					  PL_META_CHUNK;

			if ((int)seq == pr[p].stop_at) {
				chunks = (len / PL_META_CHUNK) / 2;
			}
			total += chunks + 1; /* and its event */
		}
	}
	for (p = 0; p < NPROD; p++) {
		pthread_create(&th[p], NULL, produce, &pr[p]);
	}
	consume(shm, &s, total);
	for (p = 0; p < NPROD; p++) {
		pthread_join(th[p], NULL);
		ck_assert_uint_eq(s.next[p], NREC);
	}
	ck_assert_uint_eq(s.records, NPROD * NREC - 1);
	ck_assert_uint_eq(s.events, NPROD * NREC);
	ck_assert_uint_eq(s.bad, 0);
	munmap(shm, shm->map_size);
}
END_TEST

/* The emitter cannot store metadata: records are dropped, said once,
 * and the events still flow. */
static int no_meta(struct mt_emitter *em, const void *data, size_t len)
{
	(void)em, (void)data, (void)len;
	return -ENOTSUP;
}

static int said;

static void count_log(void *ctx, const char *msg)
{
	(void)ctx, (void)msg;
	said++;
}

START_TEST(test_encoder_without_meta)
{
	struct pl_meta_rx rx;
	struct mt_emitter em;
	struct mt_event ev;
	unsigned char data[100] = { 0 };
	int i;

	memset(&rx, 0, sizeof(rx));
	memset(&em, 0, sizeof(em));
	em.meta = no_meta;
	for (i = 0; i < 3; i++) {
		pl_meta_pack(&ev, (uint32_t)i, PL_META_FIRST | PL_META_LAST,
			     data, 10);
		ck_assert_int_eq(pl_meta_take(&rx, &ev, &em, count_log, NULL),
				 0);
	}
	ck_assert_int_eq(said, 1);
	ck_assert_uint_eq(pl_meta_rx_free(&rx), 0);
}
END_TEST

/* ---- hostile chunks: meta.c's bounds, fed to pl_meta_take directly ---- */

/* the emitter keeps copies of the records, in order */
struct got {
	struct mt_emitter em;
	unsigned char *data[16];
	size_t len[16];
	size_t n;
};

static int got_meta(struct mt_emitter *em, const void *data, size_t len)
{
	struct got *g = (struct got *)em;

	if (g->n < 16) {
		g->data[g->n] = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(g->data[g->n]);
		memcpy(g->data[g->n], data, len);
		g->len[g->n] = len;
	}
	g->n++;
	return 0;
}

static void got_init(struct got *g, struct pl_meta_rx *rx)
{
	memset(g, 0, sizeof(*g));
	g->em.meta = got_meta;
	memset(rx, 0, sizeof(*rx));
}

static void got_free(struct got *g)
{
	size_t i;

	for (i = 0; i < g->n && i < 16; i++) {
		free(g->data[i]);
	}
}

static unsigned char pat(uint32_t tag, size_t i)
{
	return (unsigned char)(tag * 131u + i * 7u + (i >> 8) + (i >> 16));
}

/* Record k of the records got: whole, byte for byte, record tag of len
 * bytes? */
static void got_is(const struct got *g, size_t k, uint32_t tag, size_t len)
{
	size_t i;

	ck_assert_msg(k < g->n, "record %zu not emitted (%zu were)", k, g->n);
	ck_assert_msg(g->len[k] == len, "record %zu: %zu bytes, expected %zu",
		      k, g->len[k], len);
	for (i = 0; i < len; i++) {
		if (g->data[k][i] != pat(tag, i)) {
			ck_abort_msg("record %zu (tag %u): byte %zu differs",
				     k, tag, i);
		}
	}
}

/* (the loops below run millions of times: a check assertion, each a
 * message to the runner, would cost more than the code under test) */
static void take(struct pl_meta_rx *rx, struct got *g,
		 const struct mt_event *ev)
{
	int err = pl_meta_take(rx, ev, &g->em, NULL, NULL);

	if (err) {
		ck_abort_msg("pl_meta_take: %d", err);
	}
}

/* Chunk k of record tag (len bytes) under id, as pl_meta_cut cuts it. */
static void chunk(struct pl_meta_rx *rx, struct got *g, uint32_t id,
		  uint32_t tag, size_t len, size_t k)
{
	unsigned char buf[PL_META_CHUNK];
	size_t off = k * PL_META_CHUNK, n, i;
	unsigned flags;
	struct mt_event ev;

	if (off >= len) {
		ck_abort_msg("chunk %zu of a record of %zu bytes", k, len);
	}
	n = len - off < PL_META_CHUNK ? len - off : PL_META_CHUNK;
	flags = (k == 0 ? PL_META_FIRST : 0) |
		(off + n == len ? PL_META_LAST : 0);
	for (i = 0; i < n; i++) {
		buf[i] = pat(tag, off + i);
	}
	pl_meta_pack(&ev, id, flags, buf, n);
	take(rx, g, &ev);
}

/* The whole record, chunk after chunk. */
static void record(struct pl_meta_rx *rx, struct got *g, uint32_t id,
		   uint32_t tag, size_t len)
{
	size_t k;

	for (k = 0; k * PL_META_CHUNK < len; k++) {
		chunk(rx, g, id, tag, len, k);
	}
}

/* A chunk of id with any flags and length field (data: zeros). */
static void raw(struct pl_meta_rx *rx, struct got *g, uint32_t id,
		unsigned flags, unsigned len_field)
{
	static const unsigned char zero[PL_META_CHUNK];
	struct mt_event ev;

	pl_meta_pack(&ev, id, flags, zero, PL_META_CHUNK);
	ev.reserved0 = (uint16_t)len_field;
	take(rx, g, &ev);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &res), 2);
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define FLOOD 2000000u

/*
 * A process that sends 2M first chunks under new ids and never a last
 * one: unbounded, it grew memtrack by ~100 MB per 2M chunks and took
 * quadratic time (a linear search over the ids in progress: hours).
 * Bounded, the records in progress and their bytes stay within the caps
 * at every step, the oldest are the ones let go, each counted, and it
 * takes well under a second. A record begun before the flood is gone
 * (its end an orphan); one begun among the newest still comes out whole.
 */
START_TEST(test_flood_of_firsts)
{
	struct pl_meta_stats st;
	struct pl_meta_rx rx;
	struct got g;
	long rss0;
	double t0;
	uint32_t i;

	got_init(&g, &rx);
	rss0 = rss_kib();
	t0 = now_s();
	chunk(&rx, &g, 7, 7, 3 * PL_META_CHUNK, 0); /* the oldest */
	for (i = 0; i < FLOOD; i++) {
		/* ids 1000.. : distinct, never 7 nor 5 */
		chunk(&rx, &g, 1000 + i, 1, 2 * PL_META_CHUNK, 0);
		if (!(i & 0xffff)) {
			pl_meta_get_stats(&rx, &st);
			ck_assert_uint_le(st.in_progress, PL_META_INFLIGHT_MAX);
			ck_assert_uint_le(st.bytes, PL_META_INFLIGHT_BYTES);
		}
	}
	/* a record among the newest, then a whole one after the flood */
	chunk(&rx, &g, 1000 + FLOOD - 1, 1, 2 * PL_META_CHUNK, 1);
	record(&rx, &g, 5, 5, 1000);
	chunk(&rx, &g, 7, 7, 3 * PL_META_CHUNK, 1);
	chunk(&rx, &g, 7, 7, 3 * PL_META_CHUNK, 2);
	ck_assert_msg(now_s() - t0 < 20, "%u chunks took %.1f s", FLOOD + 6,
		      now_s() - t0);
	pl_meta_get_stats(&rx, &st);
	ck_assert_uint_le(st.in_progress, PL_META_INFLIGHT_MAX);
	ck_assert_uint_le(st.bytes, PL_META_INFLIGHT_BYTES);
	/* what reassembly holds is what it says it holds, give or take
	 * the tables and malloc's headers (1.5 MiB): not 100 MB. Not under
	 * ASan, which keeps freed blocks in a quarantine of its own (256 MiB
	 * by default): the accounted bytes above still hold there. */
#if !MT_TEST_ASAN
	ck_assert_msg(rss_kib() - rss0 < (long)(st.bytes >> 10) + 8192,
		      "RSS grew by %ld KiB, reassembly holds %llu KiB",
		      rss_kib() - rss0, (unsigned long long)(st.bytes >> 10));
#else
	(void)rss0;
#endif
	/* FLOOD + 2 begun, MAX - 1 left in progress, 2 ended */
	ck_assert_uint_eq(st.evicted, FLOOD + 2 - (PL_META_INFLIGHT_MAX - 1) -
					      2);
	ck_assert_uint_eq(st.orphans, 2); /* the ends of record 7 */
	ck_assert_uint_eq(st.records, 2);
	ck_assert_uint_eq(st.malformed + st.reused + st.oversized, 0);
	ck_assert_uint_eq(pl_meta_dropped(&rx), st.evicted + 2);
	got_is(&g, 0, 1, 2 * PL_META_CHUNK);
	got_is(&g, 1, 5, 1000);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_uint_eq(pl_meta_rx_free(&rx), PL_META_INFLIGHT_MAX - 1);
	got_free(&g);
}
END_TEST

/*
 * Chunks that break the protocol are dropped and counted, with the
 * record they make unusable, and nothing else: the good records around
 * them, interleaved, come out whole.
 */
START_TEST(test_malformed_chunks)
{
	struct pl_meta_stats st;
	struct pl_meta_rx rx;
	struct got g;

	got_init(&g, &rx);
	chunk(&rx, &g, 1, 1, 200, 0);          /* A begins */
	raw(&rx, &g, 99, 0, PL_META_CHUNK);    /* continuation, unknown id */
	raw(&rx, &g, 98, PL_META_LAST, 10);    /* the same, last */
	chunk(&rx, &g, 2, 2, 100, 0);          /* B begins */
	/* B again under its id: the old B is dropped, the new one counts */
	chunk(&rx, &g, 2, 3, 130, 0);
	raw(&rx, &g, 50, PL_META_FIRST | PL_META_LAST, PL_META_CHUNK + 1);
	raw(&rx, &g, 51, PL_META_FIRST | PL_META_LAST, 0xffff);
	raw(&rx, &g, 52, PL_META_FIRST | PL_META_LAST, 0);
	raw(&rx, &g, 53, PL_META_FIRST, 10);   /* short and not last */
	chunk(&rx, &g, 1, 1, 200, 1);
	record(&rx, &g, 4, 4, 30);             /* one chunk */
	/* C gets a bad chunk in its middle: C is dropped, its end orphaned */
	chunk(&rx, &g, 3, 5, 150, 0);
	raw(&rx, &g, 3, 0, PL_META_CHUNK + 20);
	chunk(&rx, &g, 3, 5, 150, 2);
	chunk(&rx, &g, 3, 5, 150, 3);
	/* D gets a short chunk in its middle: the same */
	chunk(&rx, &g, 6, 6, 150, 0);
	raw(&rx, &g, 6, 0, 20);
	chunk(&rx, &g, 6, 6, 150, 3);
	chunk(&rx, &g, 1, 1, 200, 2);
	chunk(&rx, &g, 2, 3, 130, 1);
	chunk(&rx, &g, 2, 3, 130, 2);          /* B ends */
	chunk(&rx, &g, 1, 1, 200, 3);
	chunk(&rx, &g, 1, 1, 200, 4);          /* A ends */
	record(&rx, &g, 8, 8, 5000);

	got_is(&g, 0, 4, 30);
	got_is(&g, 1, 3, 130);
	got_is(&g, 2, 1, 200);
	got_is(&g, 3, 8, 5000);
	ck_assert_uint_eq(g.n, 4);
	pl_meta_get_stats(&rx, &st);
	ck_assert_uint_eq(st.records, 4);
	ck_assert_uint_eq(st.orphans, 2 + 2 + 1); /* 99, 98; C's; D's */
	ck_assert_uint_eq(st.malformed, 4 + 2);   /* 50..53; C's, D's */
	ck_assert_uint_eq(st.reused, 1);
	ck_assert_uint_eq(st.oversized + st.evicted, 0);
	ck_assert_uint_eq(st.in_progress, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(pl_meta_dropped(&rx), 5 + 6 + 1);
	ck_assert_uint_eq(pl_meta_rx_free(&rx), 0);
	got_free(&g);
}
END_TEST

/*
 * A record of PL_META_RECORD_MAX bytes (the longest the reader takes)
 * comes out whole; one byte more is dropped at the chunk that passes the
 * cap, counted once, its further chunks orphans: memory never holds more
 * than the cap for it.
 */
START_TEST(test_oversized_record)
{
	size_t over = PL_META_RECORD_MAX + 1, k, nk;
	struct pl_meta_stats st;
	struct pl_meta_rx rx;
	struct got g;

	got_init(&g, &rx);
	record(&rx, &g, 1, 1, PL_META_RECORD_MAX);
	nk = (over + PL_META_CHUNK - 1) / PL_META_CHUNK;
	for (k = 0; k < nk; k++) {
		chunk(&rx, &g, 2, 2, over, k);
		pl_meta_get_stats(&rx, &st);
		if (st.bytes > PL_META_RECORD_MAX) {
			ck_abort_msg("%llu bytes held at chunk %zu",
				     (unsigned long long)st.bytes, k);
		}
	}
	record(&rx, &g, 3, 3, 100);
	got_is(&g, 0, 1, PL_META_RECORD_MAX);
	got_is(&g, 1, 3, 100);
	ck_assert_uint_eq(g.n, 2);
	pl_meta_get_stats(&rx, &st);
	ck_assert_uint_eq(st.oversized, 1);
	/* the chunk that passed the cap is the last one here */
	ck_assert_uint_eq(st.orphans, 0);
	ck_assert_uint_eq(st.in_progress, 0);
	ck_assert_uint_eq(pl_meta_rx_free(&rx), 0);
	got_free(&g);
}
END_TEST

/* Many records of the largest size at once: the byte budget holds, the
 * oldest give way, the newest still comes out whole. */
START_TEST(test_byte_budget)
{
	const size_t big = 8u << 20, nk = big / PL_META_CHUNK + 1;
	const uint32_t nrec = PL_META_INFLIGHT_BYTES / (8u << 20) + 3;
	struct pl_meta_stats st;
	struct pl_meta_rx rx;
	struct got g;
	uint32_t r;
	size_t k;

	got_init(&g, &rx);
	/* all begun, then all but their last chunk, round robin */
	for (k = 0; k + 1 < nk; k++) {
		for (r = 0; r < nrec; r++) {
			chunk(&rx, &g, 10 + r, 10 + r, big, k);
		}
		pl_meta_get_stats(&rx, &st);
		if (st.bytes > PL_META_INFLIGHT_BYTES) {
			ck_abort_msg("%llu bytes held at chunk %zu",
				     (unsigned long long)st.bytes, k);
		}
	}
	for (r = 0; r < nrec; r++) {
		chunk(&rx, &g, 10 + r, 10 + r, big, nk - 1);
	}
	pl_meta_get_stats(&rx, &st);
	ck_assert_uint_gt(st.evicted, 0);
	ck_assert_uint_eq(st.records + st.evicted, nrec);
	/* the rest of an evicted record: orphans */
	ck_assert_uint_ge(st.orphans, st.evicted);
	ck_assert_uint_ge(g.n, 1);
	got_is(&g, g.n - 1, 10 + nrec - 1, big);
	ck_assert_uint_eq(pl_meta_rx_free(&rx), 0);
	got_free(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preload-meta");
	TCase *tc = tcase_create("meta");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_records_through_small_ring);
	tcase_add_test(tc, test_encoder_without_meta);
	tcase_add_test(tc, test_flood_of_firsts);
	tcase_add_test(tc, test_malformed_chunks);
	tcase_add_test(tc, test_oversized_record);
	tcase_add_test(tc, test_byte_budget);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

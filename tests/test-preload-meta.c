/* SPDX-License-Identifier: MIT */
/*
 * tests/test-preload-meta.c - metadata records through the preload event
 * ring (plugins/preload/meta.c) in one process: producer threads cut
 * records of 1 byte to 70 KiB (far longer than a 64-slot ring) into
 * chunks, with events between them that refer to the record just put;
 * the consumer puts them back together. Every record reaches the
 * emitter whole (content checked), once, in each producer's order, and
 * before any event put after it; a record whose writer stopped halfway
 * is never emitted.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "meta.h"
#include "ring.h"

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
	return pl_ring_put(c->shm, -1, ev, c->tid);
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
		ck_assert_int_eq(pl_ring_put(pr->shm, -1, &ev, c.tid), 0);
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

int main(void)
{
	Suite *s = suite_create("preload-meta");
	TCase *tc = tcase_create("meta");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_records_through_small_ring);
	tcase_add_test(tc, test_encoder_without_meta);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

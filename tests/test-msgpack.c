/* SPDX-License-Identifier: MIT */
/*
 * test-msgpack.c - the plugin's MessagePack layer (msgpack-write.c,
 * msgpack-read.c, msgpack-read-fast.c), compiled in: the writer against the
 * reference bytes of tests/fixtures/codspeed-format ($MT_TESTDATA), and
 * the fast reader against the generic one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* ZSTD_getCParams(): the window the encoder cuts its frames by */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "msgpack.h"
#include "test-encoder-util.h"
#include "codec-testlib.h"

START_TEST(test_golden_msgpack_bytes)
{
	struct vector *v;
	size_t n = load_vectors(&v), i, done, len;
	uint8_t out[4 * MT_MSGPACK_EVENT_MAX];
	void *state = new_state(NULL);

	for (i = 0; i < n; i++) {
		struct buf frame;
		uint8_t raw[256];
		size_t rlen;

		/* the internal serializer alone */
		len = mt_msgpack_pack(out, sizeof(out), &v[i].ev, 1, &done);
		ck_assert_uint_eq(done, 1);
		ck_assert_msg(len == v[i].msgpack_len &&
			      !memcmp(out, v[i].msgpack, len),
			      "vector %zu: msgpack bytes differ", i);
		/* and through the plugin: one event per frame */
		frame = encode_all(state, &v[i].ev, 1);
		rlen = ZSTD_decompress(raw, sizeof(raw), frame.data,
				       frame.len);
		ck_assert_msg(!ZSTD_isError(rlen), "vector %zu: %s", i,
			      ZSTD_getErrorName(rlen));
		ck_assert_msg(rlen == v[i].msgpack_len &&
			      !memcmp(raw, v[i].msgpack, rlen),
			      "vector %zu: frame content differs", i);
		free(frame.data);
	}
	/* all at once, in a tight buffer: records are back to back */
	{
		uint8_t all[126 * 120 + MT_MSGPACK_EVENT_MAX];
		struct mt_event ev[126];
		size_t off = 0;

		for (i = 0; i < n; i++) {
			ev[i] = v[i].ev;
		}
		len = mt_msgpack_pack(all, sizeof(all), ev, n, &done);
		ck_assert_uint_eq(done, n);
		for (i = 0; i < n; i++) {
			ck_assert(!memcmp(all + off, v[i].msgpack,
					  v[i].msgpack_len));
			off += v[i].msgpack_len;
		}
		ck_assert_uint_eq(off, len);
	}
	ops->destroy(state);
	free(v);
}
END_TEST

/* An unsigned value in its smallest form, or (form 1) a wider uint, or
 * (form 2) an int 64 where it fits: forms the writer never picks. */
static void put_uint_as(struct buf *b, uint64_t v, unsigned int form)
{
	uint8_t h[9];
	int i;

	if (form == 2 && v <= INT64_MAX) {
		h[0] = 0xd3;
	} else if (form) {
		h[0] = 0xcf;
	} else {
		uint8_t rec[MT_MSGPACK_EVENT_MAX];
		size_t len;

		/* the writer's own form, through a Free's addr value */
		struct mt_event ev = { .addr = v, .kind = MT_EV_FREE };
		size_t done, at = 1 + 4 + 1 + 4 + 1 + 10 + 1 + 5;

		len = mt_msgpack_pack(rec, sizeof(rec), &ev, 1, &done);
		buf_add(b, rec + at, len - at - 10);
		return;
	}
	for (i = 0; i < 8; i++) {
		h[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	}
	buf_add(b, h, 9);
}

static void put_i32_as(struct buf *b, int32_t v, unsigned int form)
{
	uint8_t h[5];

	if (v >= 0) {
		put_uint_as(b, (uint64_t)v, form);
	} else if (form) {
		/* int 32 where the writer would take a smaller one */
		h[0] = 0xd2;
		h[1] = (uint8_t)((uint32_t)v >> 24);
		h[2] = (uint8_t)((uint32_t)v >> 16);
		h[3] = (uint8_t)((uint32_t)v >> 8);
		h[4] = (uint8_t)v;
		buf_add(b, h, 5);
	} else {
		struct mt_event ev = { .pid = v, .kind = MT_EV_FREE };
		uint8_t rec[MT_MSGPACK_EVENT_MAX];
		size_t done, len;

		len = mt_msgpack_pack(rec, sizeof(rec), &ev, 1, &done);
		ck_assert_uint_gt(len, 5);
		/* pid's value ends where "\xa3tid" starts */
		{
			size_t end = 5;

			while (memcmp(rec + end, "\xa3tid", 4)) {
				end++;
			}
			buf_add(b, rec + 5, end - 5);
		}
	}
}

/* A key or type name as fixstr, or (odd forms) str 8 or bin 8. */
static void put_name_as(struct buf *b, const char *s, unsigned int form)
{
	uint8_t h[2] = { form == 2 ? 0xc4 : 0xd9, (uint8_t)strlen(s) };

	if (!form) {
		put_str(b, s);
		return;
	}
	buf_add(b, h, 2);
	buf_add(b, s, strlen(s));
}

/* Some value of any type, for an unknown key. */
static void put_any(struct buf *b)
{
	static const uint8_t values[][12] = {
		{ 1, 0xc0 },                        /* nil */
		{ 1, 0xc3 },                        /* true */
		{ 3, 0x92, 0x01, 0xa0 },            /* [1, ""] */
		{ 4, 0x92, 0x01, 0xa1, 'x' },       /* [1, "x"] */
		{ 4, 0x81, 0xa1, 'k', 0x07 },       /* {"k": 7} */
		{ 9, 0xcb, 1, 2, 3, 4, 5, 6, 7, 8 }, /* float 64 */
		{ 4, 0xa3, 'a', 'b', 'c' },
		{ 1, 0xff },                        /* -1 */
	};
	unsigned int i = (unsigned int)(rng() % 8);

	buf_add(b, values[i] + 1, values[i][0]);
}

/*
 * A record for ev as another writer might lay it out: keys shuffled, extra
 * keys, wider integer forms, str 8 or bin names, a size on a Free, an
 * old_addr on any kind, duplicate keys, a map 16 header. odd = 0 gives the
 * writer's own bytes.
 */
static void odd_record(struct buf *b, const struct mt_event *ev, int odd)
{
	enum { K_PID, K_TID, K_TS, K_ADDR, K_TYPE, K_OLD, K_SIZE, K_STACK,
	       K_EXTRA, K_MAX = 16 };
	static const char *const keys[] = {
		"pid", "tid", "timestamp", "addr", "type", "old_addr", "size",
		"stack",
	};
	int order[K_MAX], n = 0, i, j, t;
	uint8_t h[3];

	for (i = K_PID; i <= K_TYPE; i++) {
		order[n++] = i;
	}
	if (ev->flags & MT_EVF_OLD_ADDR || (odd && rng() % 8 == 0)) {
		order[n++] = K_OLD;
	}
	if (ev->kind != MT_EV_FREE || (odd && rng() % 8 == 0)) {
		order[n++] = K_SIZE;
	}
	if (ev->flags & MT_EVF_STACK) {
		order[n++] = K_STACK;
	}
	if (odd && rng() % 4 == 0) {
		order[n++] = K_EXTRA;
	}
	if (odd && rng() % 10 == 0) {
		order[n++] = (int)(rng() % 4); /* a duplicate */
	}
	if (odd && rng() % 5 == 0) {
		for (i = n - 1; i > 0; i--) {
			j = (int)(rng() % (uint64_t)(i + 1));
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
	}
	if (odd && rng() % 16 == 0) {
		h[0] = 0xde;
		h[1] = 0;
		h[2] = (uint8_t)n;
		buf_add(b, h, 3);
	} else {
		h[0] = (uint8_t)(0x80 | n);
		buf_add(b, h, 1);
	}
	for (i = 0; i < n; i++) {
		unsigned int kf = odd && rng() % 16 == 0 ? 1 + rng() % 2 : 0;
		unsigned int vf = odd && rng() % 8 == 0 ? 1 + rng() % 2 : 0;

		if (order[i] == K_EXTRA) {
			put_name_as(b, rng() % 2 ? "note" : "sizes", kf);
			put_any(b);
			continue;
		}
		put_name_as(b, keys[order[i]], kf);
		switch (order[i]) {
		case K_PID:
			put_i32_as(b, ev->pid, vf);
			break;
		case K_TID:
			put_i32_as(b, ev->tid, vf);
			break;
		case K_TS:
			put_uint_as(b, ev->timestamp, vf);
			break;
		case K_ADDR:
			put_uint_as(b, ev->addr, vf);
			break;
		case K_TYPE:
			put_name_as(b, mt_event_kind_name(ev->kind), vf % 2);
			break;
		case K_OLD:
			put_uint_as(b, ev->flags & MT_EVF_OLD_ADDR ?
				    ev->old_addr : rng(), vf);
			break;
		case K_SIZE:
			put_uint_as(b, ev->size, vf);
			break;
		default:
			put_uint_as(b, odd && rng() % 16 == 0 ?
				    (uint64_t)UINT32_MAX + 1 + rng() % 9 :
				    ev->stack_id, vf);
			break;
		}
	}
}

/*
 * The fast reader at src with exactly MT_MSGPACK_FAST_MIN readable bytes
 * (a PROT_NONE page after them catches any read beyond), against the
 * generic one: whatever the fast one accepts, it decodes the same way.
 * Returns what the fast one returned.
 */
static size_t check_fast_record(uint8_t *guarded, const uint8_t *rec,
				size_t len, const uint8_t *after)
{
	struct mt_event fast, slow;
	struct mt_msgpack_error err;
	enum mt_msgpack_status st;
	size_t used = 0, got;
	uint8_t *src = guarded - MT_MSGPACK_FAST_MIN;

	ck_assert_uint_le(len, MT_MSGPACK_FAST_MIN);
	memcpy(src, rec, len);
	/* what follows: the next record's bytes, as in a real buffer */
	memcpy(src + len, after, MT_MSGPACK_FAST_MIN - len);
	memset(&fast, 0xa5, sizeof(fast));
	got = mt_msgpack_unpack_fast(src, &fast);
	st = mt_msgpack_unpack(src, len, &slow, &used, &err);
	if (got) {
		ck_assert_int_eq(st, MT_MSGPACK_OK);
		ck_assert_uint_eq(got, used);
		assert_events_eq(&fast, &slow, 1);
	}
	return got;
}

START_TEST(test_fast_matches_generic)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map, *guarded, after[MT_MSGPACK_FAST_MIN];
	size_t i, accepted = 0, odd_accepted = 0, odd_refused = 0;

	map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(map != MAP_FAILED);
	guarded = map + page;
	ck_assert_int_eq(mprotect(guarded, (size_t)page, PROT_NONE), 0);
	for (i = 0; i < sizeof(after); i++) {
		after[i] = (uint8_t)rng();
	}
	after[0] = 0x86; /* looks like the start of a record */

	for (i = 0; i < 200000; i++) {
		struct mt_event ev;
		struct buf b = { NULL, 0 };
		int odd = i % 2;
		size_t got;

		random_event(&ev);
		odd_record(&b, &ev, odd);
		got = check_fast_record(guarded, b.data, b.len, after);
		if (!odd) {
			uint8_t rec[MT_MSGPACK_EVENT_MAX];
			size_t done, len;

			/* the writer's records all take the fast way */
			len = mt_msgpack_pack(rec, sizeof(rec), &ev, 1, &done);
			ck_assert_uint_eq(b.len, len);
			ck_assert(!memcmp(b.data, rec, len));
			ck_assert_uint_eq(got, len);
			accepted++;
		} else if (got) {
			odd_accepted++;
		} else {
			odd_refused++;
		}
		free(b.data);
	}
	/* the odd ones exercised both outcomes */
	ck_assert_uint_gt(odd_accepted, 1000);
	ck_assert_uint_gt(odd_refused, 1000);
	ck_assert_uint_eq(accepted, 100000);

	/* every truncation of a record: never read past the bytes given */
	for (i = 0; i < 2000; i++) {
		struct mt_event ev;
		struct buf b = { NULL, 0 };
		size_t cut;

		random_event(&ev);
		odd_record(&b, &ev, (int)(i % 2));
		for (cut = 0; cut < b.len; cut++) {
			uint8_t *src = guarded - MT_MSGPACK_FAST_MIN;
			struct mt_event fast;

			memset(src, 0, MT_MSGPACK_FAST_MIN);
			memcpy(src, b.data, cut);
			/* a cut record is refused or read as a shorter one
			 * (zero bytes are fixints), never beyond the page */
			(void)mt_msgpack_unpack_fast(src, &fast);
		}
		free(b.data);
	}
	munmap(map, 2 * (size_t)page);
}
END_TEST

/*
 * The decoder switching between its readers: writer records and odd ones
 * mixed in one stream, cut into frames at random places (records across
 * frames), through a file and a pipe. The events are the generic reader's
 * over the whole stream.
 */
START_TEST(test_decode_mixed_layouts)
{
	struct buf raw = { NULL, 0 }, all = { NULL, 0 };
	struct mt_event *want = NULL;
	size_t n = 0, cap = 0, i, off, pos;
	void *state = new_state(NULL);
	struct collect c;
	int ret, use_pipe;

	for (i = 0; i < 60000; i++) {
		struct mt_event ev;
		struct buf b = { NULL, 0 };
		struct mt_msgpack_error err;
		struct mt_event got;
		size_t used;

		random_event(&ev);
		/* runs of odd records, runs of plain ones */
		odd_record(&b, &ev, (i / 37) % 3 == 0 && rng() % 2);
		if (mt_msgpack_unpack(b.data, b.len, &got, &used, &err) !=
		    MT_MSGPACK_OK) {
			free(b.data); /* e.g. a stack beyond 32 bits */
			continue;
		}
		ck_assert_uint_eq(used, b.len);
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			want = realloc(want, cap * sizeof(*want));
			ck_assert_ptr_nonnull(want);
		}
		want[n++] = got;
		buf_add(&raw, b.data, b.len);
		free(b.data);
	}
	/* frames of random sizes, some only a few bytes */
	for (off = 0; off < raw.len; off = pos) {
		struct buf part, z;
		size_t step = rng() % 4 == 0 ? 1 + rng() % 200 :
			      1 + rng() % 300000;

		pos = off + step < raw.len ? off + step : raw.len;
		part.data = raw.data + off;
		part.len = pos - off;
		z = compress_buf(&part);
		buf_add(&all, z.data, z.len);
		free(z.data);
	}
	for (use_pipe = 0; use_pipe < 2; use_pipe++) {
		ret = decode_mem(state, all.data, all.len, use_pipe, &c);
		ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
		ck_assert_uint_eq(c.n, n);
		assert_events_eq(c.ev, want, n);
		collect_free(&c);
	}
	free(raw.data);
	free(all.data);
	free(want);
	ops->destroy(state);
}
END_TEST

static Suite *msgpack_suite(void)
{
	Suite *s = suite_create("msgpack");
	TCase *tc = tcase_create("msgpack");

	/* the one timeout of the suite these tests came from */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_golden_msgpack_bytes);
	tcase_add_test(tc, test_fast_matches_generic);
	tcase_add_test(tc, test_decode_mixed_layouts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return codec_test_main(msgpack_suite());
}

/* SPDX-License-Identifier: MIT */
/*
 * test-decoder.c - the msgpack-zstd decoder through its descriptor:
 * the reference files of tests/fixtures/codspeed-format ($MT_TESTDATA),
 * extended keys and skippable frames, truncated, corrupt and garbage
 * input, unknown types and keys, and a callback that stops.
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

static void check_decode_golden(const char *file, int use_pipe)
{
	struct vector *v;
	size_t n = load_vectors(&v), i;
	struct buf data = read_fixture(file);
	struct mt_event want[126];
	struct collect c;
	void *state = new_state(NULL);
	int ret;

	for (i = 0; i < n; i++) {
		want[i] = v[i].ev;
	}
	ret = decode_mem(state, data.data, data.len, use_pipe, &c);
	ck_assert_msg(ret == 0, "%s: %d %s", file, ret, te_last_log);
	ck_assert_uint_eq(c.n, n);
	assert_events_eq(c.ev, want, n);
	ck_assert_uint_eq(c.metas, 0);
	collect_free(&c);
	free(data.data);
	ops->destroy(state);
	free(v);
}

START_TEST(test_decode_golden)
{
	check_decode_golden("golden.mt", 0);
	check_decode_golden("golden.mt", 1);
	check_decode_golden("golden.mt.3frames", 0);
	check_decode_golden("golden.mt.3frames", 1);
}
END_TEST

START_TEST(test_decode_extended)
{
	struct buf data = read_fixture("extended-keys-and-skippable-frames.mt");
	struct collect c;
	void *state = new_state(NULL);
	int ret, use_pipe;

	for (use_pipe = 0; use_pipe < 2; use_pipe++) {
		ret = decode_mem(state, data.data, data.len, use_pipe, &c);
		ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
		ck_assert_uint_eq(c.n, 3);
		ck_assert_int_eq(c.ev[0].kind, MT_EV_MALLOC);
		ck_assert_int_eq(c.ev[0].pid, 1);
		ck_assert_int_eq(c.ev[0].tid, 2);
		ck_assert_uint_eq(c.ev[0].timestamp, 3);
		ck_assert_uint_eq(c.ev[0].addr, 4);
		ck_assert_uint_eq(c.ev[0].size, 5);
		ck_assert_uint_eq(c.ev[0].flags, MT_EVF_STACK);
		ck_assert_uint_eq(c.ev[0].stack_id, 77);
		ck_assert_int_eq(c.ev[1].kind, MT_EV_FREE);
		ck_assert_uint_eq(c.ev[1].size, 0);
		ck_assert_uint_eq(c.ev[1].flags, MT_EVF_STACK);
		ck_assert_uint_eq(c.ev[1].stack_id, 78);
		ck_assert_int_eq(c.ev[2].kind, MT_EV_MALLOC);
		ck_assert_uint_eq(c.ev[2].flags, 0);
		ck_assert_uint_eq(c.ev[2].stack_id, 0);
		/* two skippable frames, "hello", in file order */
		ck_assert_uint_eq(c.metas, 2);
		ck_assert_uint_eq(c.variant[0], 0);
		ck_assert_uint_eq(c.meta_len[0], 5);
		ck_assert(!memcmp(c.meta[0], "hello", 5));
		ck_assert_uint_eq(c.events_before_meta[0], 1);
		ck_assert_uint_eq(c.variant[1], 0);
		ck_assert(!memcmp(c.meta[1], "hello", 5));
		ck_assert_uint_eq(c.events_before_meta[1], 3);
		collect_free(&c);
	}
	/* on_meta may be NULL: the frames are skipped silently */
	{
		int fds[2];
		struct collect c2;

		memset(&c2, 0, sizeof(c2));
		ck_assert_int_eq(pipe(fds), 0);
		ck_assert_int_eq(write(fds[1], data.data, data.len),
				 (ssize_t)data.len);
		close(fds[1]);
		ret = ops->decode(state, fds[0], "x.mt", on_events, NULL,
				  &c2);
		close(fds[0]);
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_eq(c2.n, 3);
		collect_free(&c2);
	}
	free(data.data);
	ops->destroy(state);
}
END_TEST

/* File offsets where the zstd or skippable frames of data end. */
static size_t frame_ends(const uint8_t *data, size_t len, size_t *ends,
			 size_t max)
{
	size_t off = 0, n = 0;

	while (off < len && n < max) {
		size_t fl = ZSTD_findFrameCompressedSize(data + off,
							 len - off);

		ck_assert(!ZSTD_isError(fl));
		off += fl;
		ends[n++] = off;
	}
	return n;
}

/* Number of whole records in the decompressed prefix data[0..len). */
static size_t records_in_prefix(const uint8_t *data, size_t len)
{
	size_t cap = 1 << 22, n = 0, off = 0, used;
	uint8_t *raw = malloc(cap);
	size_t rlen;
	struct mt_event ev;
	struct mt_msgpack_error err;

	ck_assert_ptr_nonnull(raw);
	if (len == 0) {
		free(raw);
		return 0;
	}
	rlen = ZSTD_decompress(raw, cap, data, len);
	ck_assert(!ZSTD_isError(rlen));
	while (off < rlen) {
		ck_assert_int_eq(mt_msgpack_unpack(raw + off, rlen - off, &ev,
						   &used, &err),
				 MT_MSGPACK_OK);
		off += used;
		n++;
	}
	free(raw);
	return n;
}

static void check_truncations(const uint8_t *data, size_t len,
			      const struct mt_event *want, size_t total,
			      size_t step, int use_pipe)
{
	size_t ends[64], nends = frame_ends(data, len, ends, 64);
	void *state = new_state(NULL);
	struct collect c;
	size_t cut, i;
	int ret;

	for (cut = 0; cut < len; cut += step) {
		int boundary = cut == 0;

		for (i = 0; i < nends; i++) {
			boundary |= ends[i] == cut;
		}
		ret = decode_mem(state, data, cut, use_pipe, &c);
		/* whatever was delivered is a correct prefix */
		ck_assert_uint_le(c.n, total);
		assert_events_eq(c.ev, want, c.n);
		if (cut == 0) {
			/* no frame at all: not a recording */
			ck_assert_msg(ret == -ENODATA, "cut 0: %d", ret);
			assert_log_has("empty file");
		} else if (boundary) {
			ck_assert_msg(ret == 0, "cut %zu: %d %s", cut, ret,
				      te_last_log);
			ck_assert_uint_eq(c.n, records_in_prefix(data, cut));
		} else {
			char needle[64];

			ck_assert_msg(ret == -EBADMSG, "cut %zu: %d", cut,
				      ret);
			snprintf(needle, sizeof(needle),
				 "truncated at byte %zu", cut);
			assert_log_has(needle);
			assert_log_has("test.mt");
		}
		collect_free(&c);
	}
	ops->destroy(state);
}

START_TEST(test_truncated_golden)
{
	struct vector *v;
	size_t n = load_vectors(&v), i;
	struct mt_event want[126];
	struct buf g = read_fixture("golden.mt");
	struct buf g3 = read_fixture("golden.mt.3frames");

	for (i = 0; i < n; i++) {
		want[i] = v[i].ev;
	}
	check_truncations(g.data, g.len, want, n, 1, 0);
	check_truncations(g3.data, g3.len, want, n, 1, 0);
	check_truncations(g3.data, g3.len, want, n, 7, 1);
	free(g.data);
	free(g3.data);
	free(v);
}
END_TEST

/* n deterministic events into ev[n], encoded into all: frames of 7000
 * events (more than one batch of the decoder), each followed by a
 * metadata (skippable) frame. */
static void encode_in_frames(void *state, struct mt_event *ev, size_t n,
			     struct buf *all)
{
	size_t i, off = 0;
	struct mt_frame f;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		te_deterministic_event(i, &ev[i]);
	}
	while (off < n) {
		size_t cnt = n - off < 7000 ? n - off : 7000;
		struct buf frame = encode_all(state, ev + off, cnt);

		buf_add(all, frame.data, frame.len);
		free(frame.data);
		off += cnt;
		ck_assert_int_eq(ops->encode_meta(state, 1, "abc", 3, &f), 0);
		buf_add(all, f.data, f.len);
		ops->frame_free(&f);
	}
}

START_TEST(test_truncated_multi_frame)
{
	size_t n = 30000, i;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct buf all = { NULL, 0 };
	void *state = new_state(NULL);

	encode_in_frames(state, ev, n, &all);
	ops->destroy(state);
	/* every frame boundary, and many offsets in between */
	check_truncations(all.data, all.len, ev, n, all.len / 300 + 1, 0);
	check_truncations(all.data, all.len, ev, n, all.len / 50 + 3, 1);
	{
		size_t ends[64], ne = frame_ends(all.data, all.len, ends, 64);
		struct collect c;

		state = new_state(NULL);
		for (i = 0; i < ne; i++) {
			int ret = decode_mem(state, all.data, ends[i], i % 2,
					     &c);

			ck_assert_int_eq(ret, 0);
			ck_assert_uint_eq(c.n, ((i + 2) / 2) * 7000 > n ?
						       n : ((i + 2) / 2) * 7000);
			collect_free(&c);
			/* one byte more or less is truncated */
			ret = decode_mem(state, all.data, ends[i] - 1, 0, &c);
			ck_assert_int_eq(ret, -EBADMSG);
			assert_log_has("truncated");
			collect_free(&c);
		}
		ops->destroy(state);
	}
	free(all.data);
	free(ev);
}
END_TEST

/* A cut inside a skippable frame's header (after the magic, before the
 * 8 header bytes are there) keeps every event decoded before it: the
 * frames before are complete. The extended fixture is 3 events, a
 * skippable frame at the end; a multi-frame file has 7000 events a
 * frame, more than one batch of the decoder. */
START_TEST(test_truncated_in_skippable_header)
{
	struct buf e = read_fixture("extended-keys-and-skippable-frames.mt");
	size_t n = 15000, i, k, ends[64], ne;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct buf all = { NULL, 0 };
	void *state = new_state(NULL);
	struct collect c;
	int ret;

	/* the 157-byte prefix: 3 events, then the start of the last frame */
	ck_assert_uint_gt(e.len, 157);
	for (k = 0; k < 2; k++) {
		ret = decode_mem(state, e.data, 157, (int)k, &c);
		ck_assert_int_eq(ret, -EBADMSG);
		assert_log_has("truncated at byte 157");
		assert_log_has("inside a skippable frame header");
		ck_assert_uint_eq(c.n, 3);
		collect_free(&c);
	}
	free(e.data);

	encode_in_frames(state, ev, n, &all);
	ne = frame_ends(all.data, all.len, ends, 64);
	/* ends[0, 2, 4]: event frames, each followed by a skippable one */
	for (i = 0; i + 1 < ne; i += 2) {
		size_t want = (i / 2 + 1) * 7000 < n ? (i / 2 + 1) * 7000 : n;

		for (k = 1; k < 8; k++) {
			ret = decode_mem(state, all.data, ends[i] + k,
					 (int)(k % 2), &c);
			ck_assert_int_eq(ret, -EBADMSG);
			assert_log_has(k < 4 ? "inside a frame header" :
				       "inside a skippable frame header");
			ck_assert_msg(c.n == want, "cut at %zu+%zu: %zu events of %zu",
				      ends[i], k, c.n, want);
			assert_events_eq(c.ev, ev, c.n);
			collect_free(&c);
		}
	}
	ops->destroy(state);
	free(all.data);
	free(ev);
}
END_TEST

START_TEST(test_corrupt_input)
{
	struct buf g = read_fixture("golden.mt");
	struct buf e = read_fixture("extended-keys-and-skippable-frames.mt");
	void *state = new_state(NULL);
	struct collect c;
	size_t off;
	unsigned int x;
	int ret;

	/* every byte of golden.mt, three ways: decode must end, with an
	 * error that says something or with events */
	for (x = 0; x < 3; x++) {
		static const uint8_t flips[] = { 0xff, 0x01, 0x80 };

		for (off = 0; off < g.len; off++) {
			g.data[off] ^= flips[x];
			ret = decode_mem(state, g.data, g.len,
					 off % 16 == 0, &c);
			g.data[off] ^= flips[x];
			ck_assert_msg(ret == 0 || ret == -EBADMSG,
				      "offset %zu: %d", off, ret);
			if (ret < 0) {
				ck_assert_msg(strstr(te_last_log, "byte ") &&
					      strstr(te_last_log, "test.mt"),
					      "offset %zu: %s", off,
					      te_last_log);
			}
			ck_assert_uint_le(c.n, 5000);
			collect_free(&c);
		}
	}
	for (off = 0; off < e.len; off++) {
		e.data[off] ^= 0x5a;
		ret = decode_mem(state, e.data, e.len, off % 2, &c);
		e.data[off] ^= 0x5a;
		ck_assert(ret == 0 || ret == -EBADMSG);
		collect_free(&c);
	}
	/* random garbage after valid frames */
	for (off = 0; off < 200; off++) {
		struct buf b = { NULL, 0 };
		uint8_t junk[64];
		size_t i;

		buf_add(&b, g.data, g.len);
		for (i = 0; i < sizeof(junk); i++) {
			junk[i] = (uint8_t)rng();
		}
		buf_add(&b, junk, 1 + off % sizeof(junk));
		ret = decode_mem(state, b.data, b.len, off % 3 == 0, &c);
		ck_assert_int_lt(ret, 0);
		ck_assert_uint_eq(c.n, 126);
		collect_free(&c);
		free(b.data);
	}
	free(g.data);
	free(e.data);
	ops->destroy(state);
}
END_TEST

START_TEST(test_garbage_file)
{
	static const char text[] = "this is not a memtrack file at all\n";
	void *state = new_state(NULL);
	struct collect c;
	int ret;

	ret = decode_mem(state, text, sizeof(text) - 1, 0, &c);
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_uint_eq(c.n, 0);
	assert_log_has("not a zstd frame at byte 0");
	assert_log_has("test.mt");
	ret = decode_mem(state, "ab", 2, 1, &c);
	ck_assert_int_eq(ret, -EBADMSG);
	assert_log_has("truncated at byte 2");
	ops->destroy(state);
}
END_TEST

START_TEST(test_unknown_type)
{
	struct mt_event ev;
	uint8_t rec[MT_MSGPACK_EVENT_MAX];
	struct buf raw = { NULL, 0 }, z;
	struct collect c;
	void *state = new_state(NULL);
	size_t done, len;
	int ret;

	memset(&ev, 0, sizeof(ev));
	ev.kind = MT_EV_MALLOC;
	ev.size = 9;
	len = mt_msgpack_pack(rec, sizeof(rec), &ev, 1, &done);
	buf_add(&raw, rec, len);
	/* {pid:1, tid:1, timestamp:1, addr:1, type:"Bogus", size:1} */
	buf_add(&raw, "\x86", 1);
	put_str(&raw, "pid");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "tid");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "timestamp");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "addr");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "type");
	put_str(&raw, "Bogus");
	put_str(&raw, "size");
	buf_add(&raw, "\x01", 1);
	/* then a valid record the reference reader never reaches */
	buf_add(&raw, rec, len);
	z = compress_buf(&raw);
	ret = decode_mem(state, z.data, z.len, 0, &c);
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_uint_eq(c.n, 1);
	assert_log_has("\"Bogus\"");
	/* offset of the type value in the decompressed stream */
	{
		char needle[64];

		snprintf(needle, sizeof(needle), "decompressed byte %zu",
			 len + 1 + 4 + 1 + 4 + 1 + 10 + 1 + 5 + 1 + 5);
		assert_log_has(needle);
	}
	collect_free(&c);
	free(raw.data);
	free(z.data);
	ops->destroy(state);
}
END_TEST

START_TEST(test_unknown_keys_skipped)
{
	struct buf raw = { NULL, 0 }, z;
	struct collect c;
	void *state = new_state(NULL);
	char long_str[100];
	int ret;

	memset(long_str, 'x', sizeof(long_str) - 1);
	long_str[sizeof(long_str) - 1] = '\0';
	/* map16 of 17 pairs: the known keys in an odd order, unknown ones
	 * holding every kind of msgpack value */
	buf_add(&raw, "\xde\x00\x11", 3);
	put_str(&raw, "u_nil");
	buf_add(&raw, "\xc0", 1);
	put_str(&raw, "type");
	put_str(&raw, "Realloc");
	put_str(&raw, "u_true");
	buf_add(&raw, "\xc3", 1);
	put_str(&raw, "size");
	buf_add(&raw, "\xcd\x12\x34", 3);
	put_str(&raw, "u_f64");
	buf_add(&raw, "\xcb\x40\x09\x21\xfb\x54\x44\x2d\x18", 9);
	put_str(&raw, "u_f32");
	buf_add(&raw, "\xca\x40\x49\x0f\xdb", 5);
	put_str(&raw, "pid");
	buf_add(&raw, "\xd1\x80\x00", 3); /* int16 -32768 */
	put_str(&raw, "u_str8");
	put_str(&raw, long_str);
	put_str(&raw, "u_bin8");
	buf_add(&raw, "\xc4\x03\x00\xc1\xff", 5);
	put_str(&raw, "tid");
	buf_add(&raw, "\xd3\xff\xff\xff\xff\xff\xff\xff\xfe", 9); /* -2 */
	put_str(&raw, "u_nested");
	/* [1, {"a": [2, "s"], "b": {}}, -3, [], [[[]]]] */
	buf_add(&raw, "\x95\x01\x82\xa1" "a" "\x92\x02\xa1s\xa1" "b"
		      "\x80\xfd\x90\x91\x91\x90", 17);
	put_str(&raw, "timestamp");
	buf_add(&raw, "\xcf\x01\x02\x03\x04\x05\x06\x07\x08", 9);
	put_str(&raw, "u_ext8");
	buf_add(&raw, "\xc7\x02\x05\xaa\xbb", 5);
	put_str(&raw, "u_fixext4");
	buf_add(&raw, "\xd6\x01\x01\x02\x03\x04", 6);
	put_str(&raw, "addr");
	buf_add(&raw, "\xce\xde\xad\xbe\xef", 5);
	put_str(&raw, "u_map16");
	buf_add(&raw, "\xde\x00\x01\xa1k\xdc\x00\x02\xc2\xc0", 10);
	put_str(&raw, "old_addr");
	buf_add(&raw, "\x10", 1);
	z = compress_buf(&raw);
	ret = decode_mem(state, z.data, z.len, 1, &c);
	ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_int_eq(c.ev[0].kind, MT_EV_REALLOC);
	ck_assert_int_eq(c.ev[0].pid, -32768);
	ck_assert_int_eq(c.ev[0].tid, -2);
	ck_assert_uint_eq(c.ev[0].timestamp, 0x0102030405060708ull);
	ck_assert_uint_eq(c.ev[0].addr, 0xdeadbeef);
	ck_assert_uint_eq(c.ev[0].size, 0x1234);
	ck_assert_uint_eq(c.ev[0].old_addr, 0x10);
	ck_assert_uint_eq(c.ev[0].flags, MT_EVF_OLD_ADDR);
	collect_free(&c);
	free(z.data);

	/* a record without "size" is refused, naming the key */
	raw.len = 0;
	buf_add(&raw, "\x85", 1);
	put_str(&raw, "pid");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "tid");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "timestamp");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "addr");
	buf_add(&raw, "\x01", 1);
	put_str(&raw, "type");
	put_str(&raw, "Malloc");
	z = compress_buf(&raw);
	ret = decode_mem(state, z.data, z.len, 0, &c);
	ck_assert_int_eq(ret, -EBADMSG);
	assert_log_has("\"size\"");
	assert_log_has("decompressed byte 0");
	collect_free(&c);
	free(z.data);

	/* a stack id beyond 32 bits and a non-map record are refused */
	raw.len = 0;
	buf_add(&raw, "\x93\x01\x02\x03", 4);
	z = compress_buf(&raw);
	ret = decode_mem(state, z.data, z.len, 0, &c);
	ck_assert_int_eq(ret, -EBADMSG);
	assert_log_has("not a map");
	collect_free(&c);
	free(z.data);
	free(raw.data);
	ops->destroy(state);
}
END_TEST

/* A record split across two zstd frames is still one stream (as the
 * reference reader sees it); cut at every byte of the record. */
START_TEST(test_record_across_frames)
{
	struct mt_event ev[2];
	uint8_t rec[2 * MT_MSGPACK_EVENT_MAX];
	void *state = new_state(NULL);
	struct collect c;
	size_t done, len, len1, cut;

	random_event(&ev[0]);
	random_event(&ev[1]);
	len1 = mt_msgpack_pack(rec, sizeof(rec), ev, 1, &done);
	len = mt_msgpack_pack(rec, sizeof(rec), ev, 2, &done);
	ck_assert_uint_eq(done, 2);
	for (cut = 0; cut <= len; cut++) {
		struct buf a = { rec, cut }, b = { rec + cut, len - cut };
		struct buf za = compress_buf(&a), zb = compress_buf(&b);
		struct buf all = { NULL, 0 };
		int ret;

		buf_add(&all, za.data, za.len);
		buf_add(&all, zb.data, zb.len);
		ret = decode_mem(state, all.data, all.len, 0, &c);
		ck_assert_msg(ret == 0, "cut %zu: %s", cut, te_last_log);
		ck_assert_uint_eq(c.n, 2);
		assert_events_eq(c.ev, ev, 2);
		collect_free(&c);
		/* the first frame alone ends inside a record */
		if (cut > 0 && cut < len && cut != len1) {
			ret = decode_mem(state, za.data, za.len, 0, &c);
			ck_assert_int_eq(ret, -EBADMSG);
			assert_log_has("truncated");
			collect_free(&c);
		}
		free(za.data);
		free(zb.data);
		free(all.data);
	}
	ops->destroy(state);
}
END_TEST

/* A callback's non-zero value stops decoding and is returned. */
static int stop_after_first(void *ctx, const struct mt_event *events,
			    size_t count)
{
	size_t *seen = ctx;

	*seen += count;
	return 42;
}

START_TEST(test_callback_stops)
{
	size_t n = 10000, i, seen = 0;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct buf frame;
	void *state = new_state(NULL);
	int fds[2], ret;
	char path[] = "/tmp/test-encoder-XXXXXX";

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		te_deterministic_event(i, &ev[i]);
	}
	frame = encode_all(state, ev, n);
	fds[0] = mkstemp(path);
	ck_assert_int_ge(fds[0], 0);
	unlink(path);
	ck_assert_int_eq(write(fds[0], frame.data, frame.len),
			 (ssize_t)frame.len);
	lseek(fds[0], 0, SEEK_SET);
	ret = ops->decode(state, fds[0], "x", stop_after_first, NULL, &seen);
	ck_assert_int_eq(ret, 42);
	ck_assert_uint_eq(seen, 4096);
	close(fds[0]);
	free(frame.data);
	free(ev);
	ops->destroy(state);
}
END_TEST

static Suite *decoder_suite(void)
{
	Suite *s = suite_create("decoder-msgpack-zstd");
	TCase *tc = tcase_create("decode");

	/* truncation sweeps decode thousands of files */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_decode_golden);
	tcase_add_test(tc, test_decode_extended);
	tcase_add_test(tc, test_truncated_golden);
	tcase_add_test(tc, test_truncated_multi_frame);
	tcase_add_test(tc, test_truncated_in_skippable_header);
	tcase_add_test(tc, test_corrupt_input);
	tcase_add_test(tc, test_garbage_file);
	tcase_add_test(tc, test_unknown_type);
	tcase_add_test(tc, test_unknown_keys_skipped);
	tcase_add_test(tc, test_record_across_frames);
	tcase_add_test(tc, test_callback_stops);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return codec_test_main(decoder_suite());
}

/* SPDX-License-Identifier: MIT */
/*
 * test-encoder.c - the msgpack-zstd encoder through its descriptor, as
 * the host uses it: the golden frame, round trips, options, frame
 * ownership, and the stable-input path against the buffered stream.
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

/* golden.mt was written at zstd level 1: at that level, the same bytes. */
START_TEST(test_golden_frame)
{
	struct vector *v;
	size_t n = load_vectors(&v), i;
	struct buf golden = read_fixture("golden.mt");
	struct mt_event ev[126];
	struct buf frame;
	void *state = new_state("level=1");

	for (i = 0; i < n; i++) {
		ev[i] = v[i].ev;
	}
	frame = encode_all(state, ev, n);
	ck_assert_uint_eq(frame.len, golden.len);
	ck_assert_msg(!memcmp(frame.data, golden.data, golden.len),
		      "frame differs from golden.mt");
	free(frame.data);
	/* a state is reusable: the same batch again gives the same frame */
	frame = encode_all(state, ev, n);
	ck_assert_uint_eq(frame.len, golden.len);
	ck_assert(!memcmp(frame.data, golden.data, golden.len));
	free(frame.data);
	free(golden.data);
	ops->destroy(state);
	free(v);
}
END_TEST

/*
 * The default level is the reference writer's -5 (encoder.c): its frame of
 * the 126 vectors is level -5's, not golden.mt's level 1, and decodes to
 * the reference serializer's msgpack bytes, event after event.
 */
START_TEST(test_default_level_frame)
{
	struct vector *v;
	size_t n = load_vectors(&v), i, cap, got, off = 0;
	struct buf golden = read_fixture("golden.mt");
	struct mt_event ev[126];
	struct buf frame, minus5;
	void *state = new_state(NULL), *explicit5 = new_state("level=-5");
	uint8_t *raw;

	ck_assert_uint_eq(n, 126);
	for (i = 0; i < n; i++) {
		ev[i] = v[i].ev;
		off += v[i].msgpack_len;
	}
	frame = encode_all(state, ev, n);
	minus5 = encode_all(explicit5, ev, n);
	ck_assert_msg(frame.len == minus5.len &&
		      !memcmp(frame.data, minus5.data, frame.len),
		      "default frame differs from level -5's");
	ck_assert_msg(frame.len != golden.len ||
		      memcmp(frame.data, golden.data, golden.len),
		      "default frame is golden.mt's, written at level 1");
	cap = off + 1;
	raw = malloc(cap);
	ck_assert_ptr_nonnull(raw);
	got = ZSTD_decompress(raw, cap, frame.data, frame.len);
	ck_assert_msg(!ZSTD_isError(got), "%s", ZSTD_getErrorName(got));
	ck_assert_uint_eq(got, off);
	for (i = 0, off = 0; i < n; off += v[i].msgpack_len, i++) {
		ck_assert_msg(!memcmp(raw + off, v[i].msgpack,
				      v[i].msgpack_len),
			      "event %zu: msgpack bytes differ from events.jsonl",
			      i);
	}
	free(raw);
	free(frame.data);
	free(minus5.data);
	free(golden.data);
	ops->destroy(state);
	ops->destroy(explicit5);
	free(v);
}
END_TEST

START_TEST(test_round_trip_random)
{
	size_t n = 20000, i;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct collect c;
	struct buf frame;
	void *state = new_state(NULL);
	int ret;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
	}
	frame = encode_all(state, ev, n);
	ret = decode_mem(state, frame.data, frame.len, 0, &c);
	ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
	ck_assert_uint_eq(c.n, n);
	assert_events_eq(c.ev, ev, n);
	collect_free(&c);
	free(frame.data);
	free(ev);
	ops->destroy(state);
}
END_TEST

START_TEST(test_round_trip_multi_frame)
{
	size_t n = 50000, i, off = 0;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct buf all = { NULL, 0 };
	struct mt_frame f;
	struct collect c;
	void *state = new_state("level=3");
	static const size_t sizes[] = { 0, 1, 999, 4096, 20000, 0, 12345 };
	int ret, use_pipe;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct buf frame = encode_all(state, ev + off, sizes[i]);

		buf_add(&all, frame.data, frame.len);
		free(frame.data);
		off += sizes[i];
		if (i == 3) {
			ck_assert_int_eq(ops->encode_meta(state, 7, "meta!",
							  5, &f), 0);
			buf_add(&all, f.data, f.len);
			ops->frame_free(&f);
		}
	}
	/* the rest in one frame bigger than a zstd block */
	{
		struct buf frame = encode_all(state, ev + off, n - off);

		buf_add(&all, frame.data, frame.len);
		free(frame.data);
	}
	for (use_pipe = 0; use_pipe < 2; use_pipe++) {
		ret = decode_mem(state, all.data, all.len, use_pipe, &c);
		ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
		ck_assert_uint_eq(c.n, n);
		assert_events_eq(c.ev, ev, n);
		ck_assert_uint_eq(c.metas, 1);
		ck_assert_uint_eq(c.variant[0], 7);
		ck_assert_uint_eq(c.meta_len[0], 5);
		ck_assert(!memcmp(c.meta[0], "meta!", 5));
		ck_assert_uint_eq(c.events_before_meta[0], 1 + 999 + 4096);
		collect_free(&c);
	}
	free(all.data);
	free(ev);
	ops->destroy(state);
}
END_TEST

START_TEST(test_empty_batch_and_meta)
{
	struct mt_frame f;
	struct collect c;
	struct buf frame;
	void *state = new_state(NULL);
	int ret;

	frame = encode_all(state, NULL, 0);
	ret = decode_mem(state, frame.data, frame.len, 0, &c);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(c.n, 0);
	free(frame.data);
	/* empty input is not a stream: nothing writes one (the frame
	 * above is what a recording without events is) */
	ret = decode_mem(state, "", 0, 1, &c);
	ck_assert_int_eq(ret, -ENODATA);
	ck_assert_uint_eq(c.n, 0);
	assert_log_has("empty file, not a recording");
	/* skippable frame layout, empty payload allowed */
	ck_assert_int_eq(ops->encode_meta(state, 15, "", 0, &f), 0);
	ck_assert_uint_eq(f.len, 8);
	ck_assert(!memcmp(f.data, "\x5f\x2a\x4d\x18\0\0\0\0", 8));
	ops->frame_free(&f);
	ck_assert_int_eq(ops->encode_meta(state, 16, "x", 1, &f), -EINVAL);
	assert_log_has("16");
	ops->destroy(state);
}
END_TEST

START_TEST(test_bad_kind_refused)
{
	struct mt_event ev[3];
	struct mt_frame f;
	void *state = new_state(NULL);

	memset(ev, 0, sizeof(ev));
	ev[2].kind = 42;
	ck_assert_int_eq(ops->encode(state, ev, 3, &f), -EINVAL);
	assert_log_has("event 2");
	assert_log_has("42");
	/* the state stays usable */
	ev[2].kind = MT_EV_BRK;
	ck_assert_int_eq(ops->encode(state, ev, 3, &f), 0);
	ops->frame_free(&f);
	ops->destroy(state);
}
END_TEST

/* Frames may be released from another thread than the encoder's. */
static void *free_frame_main(void *arg)
{
	ops->frame_free(arg);
	return NULL;
}

START_TEST(test_frame_free_other_thread)
{
	struct mt_event ev[10];
	struct mt_frame f;
	pthread_t th;
	void *state = new_state(NULL);
	size_t i;

	for (i = 0; i < 10; i++) {
		random_event(&ev[i]);
	}
	ck_assert_int_eq(ops->encode(state, ev, 10, &f), 0);
	ops->destroy(state); /* the frame outlives the state */
	ck_assert_int_eq(pthread_create(&th, NULL, free_frame_main, &f), 0);
	pthread_join(th, NULL);
	ck_assert_ptr_null(f.data);
}
END_TEST

START_TEST(test_level_option)
{
	static const char *const good[] = {
		NULL, "", "level=1", "level=3", "level=-5", "level=19",
	};
	static const char *const bad[] = {
		"level=abc", "bogus=1", "level=", "level=3x", "level=999",
		"level=1,fast",
	};
	struct mt_event ev[500];
	struct collect c;
	size_t i;

	for (i = 0; i < 500; i++) {
		random_event(&ev[i]);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		void *state = new_state(good[i]);
		struct buf frame = encode_all(state, ev, 500);

		ck_assert_int_eq(decode_mem(state, frame.data, frame.len, 0,
					    &c), 0);
		ck_assert_uint_eq(c.n, 500);
		assert_events_eq(c.ev, ev, 500);
		collect_free(&c);
		free(frame.data);
		ops->destroy(state);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *state = (void *)1;
		const char *opt = bad[i];
		int ret;

		te_last_log[0] = '\0';
		ret = ops->create(&te_host, opt, &state);
		ck_assert_msg(ret == -EINVAL, "%s: %d", opt, ret);
		ck_assert_ptr_eq(state, (void *)1);
		/* the message names the offending option */
		if (!strcmp(opt, "level=1,fast")) {
			opt = "fast";
		}
		assert_log_has(opt);
	}
}
END_TEST

/* A state that takes the buffered path whatever libzstd offers. */
static void *new_buffered_state(const char *args)
{
	void *state;

	setenv("MEMTRACK_MSGPACK_ZSTD_NO_STABLE", "1", 1);
	state = new_state(args);
	unsetenv("MEMTRACK_MSGPACK_ZSTD_NO_STABLE");
	return state;
}

/* The frame must hold exactly the msgpack bytes of ev[0..n). */
static void assert_frame_holds(const struct buf *frame,
			       const struct mt_event *ev, size_t n)
{
	size_t cap = n * MT_MSGPACK_EVENT_MAX + MT_MSGPACK_EVENT_MAX;
	uint8_t *want = malloc(cap), *got = malloc(cap);
	size_t wlen, glen, done;

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	wlen = mt_msgpack_pack(want, cap, ev, n, &done);
	ck_assert_uint_eq(done, n);
	glen = ZSTD_decompress(got, cap, frame->data, frame->len);
	ck_assert_msg(!ZSTD_isError(glen), "%s", ZSTD_getErrorName(glen));
	ck_assert_uint_eq(glen, wlen);
	ck_assert(!memcmp(got, want, wlen));
	free(want);
	free(got);
}

/*
 * Batches on both sides of a zstd block (128 KiB of msgpack), where the
 * stable path hands over to the buffered one, and up to a whole pipeline
 * batch: same msgpack bytes, no content size in the header (the reference
 * writer streams), and the very same frame up to zstd's window.
 */
START_TEST(test_stable_matches_buffered)
{
	size_t n = 70000, i, k, lens_n = 0, block_n = 0, done;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	uint8_t rec[MT_MSGPACK_EVENT_MAX];
	void *stable = new_state(NULL), *buffered = new_buffered_state(NULL);
	void *stable3 = new_state("level=3");
	void *buffered3 = new_buffered_state("level=3");

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
		lens_n += mt_msgpack_pack(rec, sizeof(rec), &ev[i], 1, &done);
		if (lens_n < ZSTD_BLOCKSIZE_MAX) {
			block_n = i + 1; /* ev[0..block_n) is under a block */
		}
	}
	{
		const size_t sizes[] = {
			0, 1, 126, block_n - 1, block_n, block_n + 1,
			block_n + 2, 3 * block_n, 5000, 20000, 65536, n,
		};

		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct buf a = encode_all(stable, ev, sizes[k]);
			struct buf b = encode_all(buffered, ev, sizes[k]);
			struct buf a3 = encode_all(stable3, ev, sizes[k]);
			struct buf b3 = encode_all(buffered3, ev, sizes[k]);
			unsigned long long csize =
				ZSTD_getFrameContentSize(a.data, a.len);

			assert_frame_holds(&a, ev, sizes[k]);
			assert_frame_holds(&a3, ev, sizes[k]);
			if (sizes[k]) {
				ck_assert_msg(csize == ZSTD_CONTENTSIZE_UNKNOWN,
					      "%zu events: content size %llu in the header",
					      sizes[k], csize);
			}
			/* the stable path starts where a block is full:
			 * from there, same bytes within one window */
			if (sizes[k] <= 3 * block_n) {
				ck_assert_msg(a.len == b.len &&
					      !memcmp(a.data, b.data, a.len),
					      "%zu events: frame differs (%zu/%zu bytes)",
					      sizes[k], a.len, b.len);
				ck_assert_msg(a3.len == b3.len &&
					      !memcmp(a3.data, b3.data, a3.len),
					      "%zu events, level 3: frame differs",
					      sizes[k]);
			}
			free(a.data);
			free(b.data);
			free(a3.data);
			free(b3.data);
		}
	}
	{
		/* back to a small batch after the large ones: the state's
		 * context goes back to buffered input, same bytes */
		struct buf a = encode_all(stable, ev, 126);
		struct buf b = encode_all(buffered, ev, 126);

		ck_assert_msg(a.len == b.len && !memcmp(a.data, b.data, a.len),
			      "126 events after large batches: frame differs");
		free(a.data);
		free(b.data);
	}
	free(ev);
	ops->destroy(stable);
	ops->destroy(buffered);
	ops->destroy(stable3);
	ops->destroy(buffered3);
}
END_TEST

/*
 * A batch of more msgpack than a window and a half is cut into zstd frames
 * of about that much, each ending at an event boundary, so that the
 * encoder's input buffer stays in cache (encoder.c). The buffered path and
 * a level whose window holds the whole batch keep one frame.
 */
static void check_split(void *state, const char *what, size_t split,
			const struct mt_event *ev, size_t n, size_t want_min,
			size_t want_max)
{
	struct buf b = encode_all(state, ev, n);
	size_t cap = n * MT_MSGPACK_EVENT_MAX, off = 0, at = 0, nframes = 0;
	uint8_t *raw = malloc(cap);
	uint8_t rec[MT_MSGPACK_EVENT_MAX];

	ck_assert_ptr_nonnull(raw);
	assert_frame_holds(&b, ev, n);
	while (off < b.len) {
		size_t fl = ZSTD_findFrameCompressedSize(b.data + off,
							 b.len - off);
		size_t rl, sum = 0, done;

		ck_assert_msg(!ZSTD_isError(fl), "%s", ZSTD_getErrorName(fl));
		rl = ZSTD_decompress(raw, cap, b.data + off, fl);
		ck_assert_msg(!ZSTD_isError(rl), "%s", ZSTD_getErrorName(rl));
		/* whole records: the frame ends where an event does */
		while (sum < rl && at < n) {
			sum += mt_msgpack_pack(rec, sizeof(rec), &ev[at++], 1,
					       &done);
		}
		ck_assert_msg(sum == rl,
			      "%s: zstd frame %zu (%zu bytes) ends inside event %zu",
			      what, nframes, rl, at - 1);
		off += fl;
		nframes++;
		/* all but the last: from the split to one more chunk */
		if (off < b.len) {
			ck_assert_msg(rl >= split && rl < split + ZSTD_BLOCKSIZE_MAX,
				      "%s: zstd frame %zu holds %zu bytes (split at %zu)",
				      what, nframes - 1, rl, split);
		}
	}
	ck_assert_uint_eq(at, n);
	ck_assert_msg(nframes >= want_min && nframes <= want_max,
		      "%s: %zu zstd frames, want %zu..%zu", what, nframes,
		      want_min, want_max);
	free(raw);
	free(b.data);
}

START_TEST(test_large_batch_split)
{
	size_t n = 65536, i, total = 0, done, split1, splitd, split3, split9;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	uint8_t rec[MT_MSGPACK_EVENT_MAX];
	void *dflt = new_state(NULL), *one = new_state("level=1");
	void *three = new_state("level=3"), *nine = new_state("level=9");
	void *buffered = new_buffered_state(NULL);

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
		total += mt_msgpack_pack(rec, sizeof(rec), &ev[i], 1, &done);
	}
	split1 = (size_t)3 << (ZSTD_getCParams(1, 0, 0).windowLog - 1);
	splitd = (size_t)3 << (ZSTD_getCParams(-5, 0, 0).windowLog - 1);
	split3 = (size_t)3 << (ZSTD_getCParams(3, 0, 0).windowLog - 1);
	split9 = (size_t)3 << (ZSTD_getCParams(9, 0, 0).windowLog - 1);
	ck_assert_uint_eq(split1, 768 * 1024);
	ck_assert_uint_eq(splitd, 768 * 1024);
	/* the test's own premises */
	ck_assert_uint_gt(total, 4 * split1);
	ck_assert_uint_gt(total, split3);
	ck_assert_uint_lt(total, 2 * split3);
	ck_assert_uint_lt(total, split9);
#ifdef ZSTD_c_stableInBuffer
	check_split(dflt, "default level", splitd, ev, n,
		    total / (splitd + ZSTD_BLOCKSIZE_MAX) + 1,
		    total / splitd + 1);
	check_split(one, "level 1", split1, ev, n,
		    total / (split1 + ZSTD_BLOCKSIZE_MAX) + 1,
		    total / split1 + 1);
	check_split(three, "level 3", split3, ev, n, 2, 2);
#else
	check_split(dflt, "default level", SIZE_MAX / 4, ev, n, 1, 1);
	check_split(one, "level 1", SIZE_MAX / 4, ev, n, 1, 1);
	check_split(three, "level 3", SIZE_MAX / 4, ev, n, 1, 1);
#endif
	check_split(nine, "level 9", SIZE_MAX / 4, ev, n, 1, 1);
	check_split(buffered, "buffered", SIZE_MAX / 4, ev, n, 1, 1);
	free(ev);
	ops->destroy(dflt);
	ops->destroy(one);
	ops->destroy(three);
	ops->destroy(nine);
	ops->destroy(buffered);
}
END_TEST

/* A batch refused after zstd has started on it leaves a usable state. */
START_TEST(test_bad_kind_after_blocks)
{
	size_t n = 10000, i;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct mt_frame f;
	struct buf good, fresh;
	struct collect c;
	void *state = new_state(NULL), *other = new_state(NULL);
	uint8_t kind;
	int ret;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
	}
	kind = ev[8000].kind;
	ev[8000].kind = 200;
	ck_assert_int_eq(ops->encode(state, ev, n, &f), -EINVAL);
	assert_log_has("event 8000");
	ck_assert_ptr_null(f.data);
	ev[8000].kind = kind;
	good = encode_all(state, ev, n);
	fresh = encode_all(other, ev, n);
	ck_assert_uint_eq(good.len, fresh.len);
	ck_assert(!memcmp(good.data, fresh.data, good.len));
	ret = decode_mem(state, good.data, good.len, 0, &c);
	ck_assert_msg(ret == 0, "%d %s", ret, te_last_log);
	ck_assert_uint_eq(c.n, n);
	assert_events_eq(c.ev, ev, n);
	collect_free(&c);
	free(good.data);
	free(fresh.data);
	free(ev);
	ops->destroy(state);
	ops->destroy(other);
}
END_TEST

static Suite *encoder_suite(void)
{
	Suite *s = suite_create("encoder-msgpack-zstd");
	TCase *tc = tcase_create("encode");

	/* the one timeout of the suite these tests came from */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_golden_frame);
	tcase_add_test(tc, test_default_level_frame);
	tcase_add_test(tc, test_round_trip_random);
	tcase_add_test(tc, test_round_trip_multi_frame);
	tcase_add_test(tc, test_empty_batch_and_meta);
	tcase_add_test(tc, test_bad_kind_refused);
	tcase_add_test(tc, test_frame_free_other_thread);
	tcase_add_test(tc, test_level_option);
	tcase_add_test(tc, test_stable_matches_buffered);
	tcase_add_test(tc, test_large_batch_split);
	tcase_add_test(tc, test_bad_kind_after_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return codec_test_main(encoder_suite());
}

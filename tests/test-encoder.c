/* SPDX-License-Identifier: MIT */
/*
 * test-encoder.c - the msgpack-zstd plugin against the reference vectors of
 * tests/fixtures/codspeed-format ($MT_TESTDATA) and against itself: golden
 * bytes, golden frame, decoding, round trips, options, truncated and corrupt
 * input. The plugin is used through its descriptor, as the host does; the
 * internal serializer (msgpack.c) is compiled in to check raw msgpack bytes.
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

static const struct mt_encoder_ops *ops;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

struct buf {
	uint8_t *data;
	size_t len;
};

static void buf_add(struct buf *b, const void *data, size_t len)
{
	b->data = realloc(b->data, b->len + len + 1);
	ck_assert_ptr_nonnull(b->data);
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

static struct buf read_fixture(const char *name)
{
	const char *dir = getenv("MT_TESTDATA");
	struct buf b = { NULL, 0 };
	char path[4096], chunk[4096];
	size_t n;
	FILE *f;

	ck_assert_msg(dir != NULL, "MT_TESTDATA is not set");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf_add(&b, chunk, n);
	}
	fclose(f);
	return b;
}

/* One line of events.jsonl. */
struct vector {
	struct mt_event ev;
	uint8_t msgpack[160];
	size_t msgpack_len;
};

/* The value of "key" in a flat JSON object line: number or string. */
static int json_field(const char *line, const char *key, char *out,
		      size_t outlen)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p) {
		return 0;
	}
	p += strlen(pat);
	if (*p == '"') {
		p++;
		end = strchr(p, '"');
	} else {
		end = p + strcspn(p, ",}");
	}
	ck_assert_ptr_nonnull(end);
	ck_assert_uint_lt((size_t)(end - p), outlen);
	memcpy(out, p, (size_t)(end - p));
	out[end - p] = '\0';
	return 1;
}

static int kind_by_name(const char *name)
{
	unsigned int k;

	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		if (!strcmp(name, mt_event_kind_name(k))) {
			return (int)k;
		}
	}
	return -1;
}

/* All 126 vectors; returns the count. */
static size_t load_vectors(struct vector **out)
{
	struct buf b = read_fixture("events.jsonl");
	struct vector *v = NULL;
	size_t n = 0;
	char *line, *save = NULL;

	b.data[b.len] = '\0';
	for (line = strtok_r((char *)b.data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char val[512];
		struct vector *x;
		size_t i;

		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		x = &v[n++];
		memset(x, 0, sizeof(*x));
		ck_assert(json_field(line, "pid", val, sizeof(val)));
		x->ev.pid = (int32_t)strtol(val, NULL, 10);
		ck_assert(json_field(line, "tid", val, sizeof(val)));
		x->ev.tid = (int32_t)strtol(val, NULL, 10);
		ck_assert(json_field(line, "timestamp", val, sizeof(val)));
		x->ev.timestamp = strtoull(val, NULL, 10);
		ck_assert(json_field(line, "addr", val, sizeof(val)));
		x->ev.addr = strtoull(val, NULL, 10);
		ck_assert(json_field(line, "type", val, sizeof(val)));
		ck_assert_int_ge(kind_by_name(val), 0);
		x->ev.kind = (uint8_t)kind_by_name(val);
		if (json_field(line, "size", val, sizeof(val))) {
			x->ev.size = strtoull(val, NULL, 10);
		}
		if (json_field(line, "old_addr", val, sizeof(val))) {
			x->ev.old_addr = strtoull(val, NULL, 10);
			x->ev.flags |= MT_EVF_OLD_ADDR;
		}
		ck_assert(json_field(line, "msgpack_hex", val, sizeof(val)));
		x->msgpack_len = strlen(val) / 2;
		ck_assert_uint_le(x->msgpack_len, sizeof(x->msgpack));
		for (i = 0; i < x->msgpack_len; i++) {
			unsigned int byte;

			ck_assert_int_eq(sscanf(val + 2 * i, "%2x", &byte), 1);
			x->msgpack[i] = (uint8_t)byte;
		}
	}
	free(b.data);
	ck_assert_uint_eq(n, 126);
	*out = v;
	return n;
}

static void *new_state(const char *args)
{
	void *state = NULL;
	int ret = ops->create(&te_host, args, &state);

	ck_assert_msg(ret == 0, "create(%s): %d %s", args ? args : "NULL",
		      ret, te_last_log);
	return state;
}

/* What decode() delivered. */
struct collect {
	struct mt_event *ev;
	size_t n, cap;
	size_t calls;
	unsigned int metas;
	unsigned int variant[8];
	char meta[8][64];
	size_t meta_len[8];
	size_t events_before_meta[8];
};

static int on_events(void *ctx, const struct mt_event *events, size_t count)
{
	struct collect *c = ctx;

	ck_assert_uint_gt(count, 0);
	ck_assert_uint_le(count, 4096);
	if (c->n + count > c->cap) {
		c->cap = (c->n + count) * 2;
		c->ev = realloc(c->ev, c->cap * sizeof(*c->ev));
		ck_assert_ptr_nonnull(c->ev);
	}
	memcpy(c->ev + c->n, events, count * sizeof(*events));
	c->n += count;
	c->calls++;
	return 0;
}

static int on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len)
{
	struct collect *c = ctx;

	if (c->metas < 8) {
		c->variant[c->metas] = variant;
		c->meta_len[c->metas] = len;
		memcpy(c->meta[c->metas], data, len < 64 ? len : 64);
		c->events_before_meta[c->metas] = c->n;
	}
	c->metas++;
	return 0;
}

struct pipe_writer {
	int fd;
	const uint8_t *data;
	size_t len;
};

static void *pipe_writer_main(void *arg)
{
	struct pipe_writer *w = arg;
	size_t off = 0;

	/* small writes: the reader sees many short reads */
	while (off < w->len) {
		size_t n = w->len - off < 777 ? w->len - off : 777;
		ssize_t r = write(w->fd, w->data + off, n);

		if (r <= 0) {
			break; /* reader gone: it stopped on an error */
		}
		off += (size_t)r;
	}
	close(w->fd);
	return NULL;
}

/*
 * Decode data through a temporary file or a pipe fed by a thread. Returns
 * decode()'s value; c receives the events.
 */
static int decode_mem(void *state, const void *data, size_t len,
		      int use_pipe, struct collect *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	te_last_log[0] = '\0';
	if (use_pipe) {
		struct pipe_writer w;
		pthread_t th;
		int fds[2];

		ck_assert_int_eq(pipe(fds), 0);
		w.fd = fds[1];
		w.data = data;
		w.len = len;
		ck_assert_int_eq(pthread_create(&th, NULL, pipe_writer_main,
						&w), 0);
		ret = ops->decode(state, fds[0], "test.mt", on_events,
				  on_meta, c);
		close(fds[0]);
		pthread_join(th, NULL);
	} else {
		char path[] = "/tmp/test-encoder-XXXXXX";
		int fd = mkstemp(path);

		ck_assert_int_ge(fd, 0);
		unlink(path);
		ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
		ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
		ret = ops->decode(state, fd, "test.mt", on_events, on_meta,
				  c);
		close(fd);
	}
	return ret;
}

static void collect_free(struct collect *c)
{
	free(c->ev);
	memset(c, 0, sizeof(*c));
}

/* Byte offset N of a "... byte N ..." message must be the one given. */
static void assert_log_has(const char *needle)
{
	ck_assert_msg(strstr(te_last_log, needle) != NULL,
		      "log \"%s\" lacks \"%s\"", te_last_log, needle);
}

static void assert_events_eq(const struct mt_event *a,
			     const struct mt_event *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		ck_assert_msg(!memcmp(&a[i], &b[i], sizeof(a[i])),
			      "event %zu differs: pid %d/%d tid %d/%d ts %" PRIu64 "/%" PRIu64
			      " addr %" PRIx64 "/%" PRIx64 " kind %u/%u size %" PRIu64 "/%" PRIu64
			      " old %" PRIx64 "/%" PRIx64 " flags %u/%u stack %u/%u",
			      i, a[i].pid, b[i].pid, a[i].tid, b[i].tid,
			      a[i].timestamp, b[i].timestamp, a[i].addr,
			      b[i].addr, a[i].kind, b[i].kind, a[i].size,
			      b[i].size, a[i].old_addr, b[i].old_addr,
			      a[i].flags, b[i].flags, a[i].stack_id,
			      b[i].stack_id);
	}
}

static struct buf encode_all(void *state, const struct mt_event *ev,
			     size_t n)
{
	struct mt_frame f;
	struct buf b = { NULL, 0 };
	int ret = ops->encode(state, ev, n, &f);

	ck_assert_msg(ret == 0, "encode: %d %s", ret, te_last_log);
	buf_add(&b, f.data, f.len);
	ops->frame_free(&f);
	return b;
}

/* ------------------------------------------------------------------ */
/* 1, 2: golden bytes and golden frame                                 */
/* ------------------------------------------------------------------ */

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

START_TEST(test_golden_frame)
{
	struct vector *v;
	size_t n = load_vectors(&v), i;
	struct buf golden = read_fixture("golden.mt");
	struct mt_event ev[126];
	struct buf frame;
	void *state = new_state(NULL);

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

/* ------------------------------------------------------------------ */
/* 3: decoding the reference files                                     */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* 4: round trips                                                      */
/* ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Interesting values: the boundaries of every msgpack integer form. */
static uint64_t rnd_u64(void)
{
	static const uint64_t edges[] = {
		0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffull,
		0x100000000ull, UINT64_MAX - 1, UINT64_MAX,
	};
	uint64_t r = rng();

	if (r % 3 == 0) {
		return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))];
	}
	return rng() >> (r % 64);
}

static int32_t rnd_i32(void)
{
	static const int32_t edges[] = {
		0, 1, 127, 128, -1, -32, -33, -128, -129, -32768, -32769,
		INT32_MIN, INT32_MAX, 65535, 65536,
	};
	uint64_t r = rng();

	if (r % 2 == 0) {
		return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))];
	}
	return (int32_t)(uint32_t)(rng() >> (32 + r % 32));
}

/* A random event in the canonical form decode() gives back. */
static void random_event(struct mt_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = (uint8_t)(rng() % MT_EV_KIND_COUNT);
	ev->pid = rnd_i32();
	ev->tid = rnd_i32();
	ev->timestamp = rnd_u64();
	ev->addr = rnd_u64();
	if (ev->kind != MT_EV_FREE) {
		ev->size = rnd_u64();
	}
	if (ev->kind == MT_EV_REALLOC && rng() % 2) {
		ev->flags |= MT_EVF_OLD_ADDR;
		ev->old_addr = rnd_u64();
	}
	if (rng() % 4 == 0) {
		ev->flags |= MT_EVF_STACK;
		ev->stack_id = (uint32_t)rnd_u64();
	}
}

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
	/* empty input is a clean, empty stream */
	ret = decode_mem(state, "", 0, 1, &c);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(c.n, 0);
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

/* ------------------------------------------------------------------ */
/* 5: options                                                          */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* 6, 7: truncated, corrupt, garbage, unknown type, unknown keys       */
/* ------------------------------------------------------------------ */

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
		if (boundary) {
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

START_TEST(test_truncated_multi_frame)
{
	size_t n = 30000, i, off = 0;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	struct buf all = { NULL, 0 };
	void *state = new_state(NULL);
	struct mt_frame f;

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		te_deterministic_event(i, &ev[i]);
	}
	while (off < n) {
		size_t cnt = n - off < 7000 ? n - off : 7000;
		struct buf frame = encode_all(state, ev + off, cnt);

		buf_add(&all, frame.data, frame.len);
		free(frame.data);
		off += cnt;
		ck_assert_int_eq(ops->encode_meta(state, 1, "abc", 3, &f), 0);
		buf_add(&all, f.data, f.len);
		ops->frame_free(&f);
	}
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

/* msgpack str8 key or value */
static void put_str(struct buf *b, const char *s)
{
	uint8_t h[2] = { 0xd9, (uint8_t)strlen(s) };

	if (strlen(s) < 32) {
		h[0] = (uint8_t)(0xa0 | strlen(s));
		buf_add(b, h, 1);
	} else {
		buf_add(b, h, 2);
	}
	buf_add(b, s, strlen(s));
}

static struct buf compress_buf(const struct buf *raw)
{
	struct buf z = { NULL, 0 };
	size_t cap = ZSTD_compressBound(raw->len), len;

	z.data = malloc(cap + 1);
	ck_assert_ptr_nonnull(z.data);
	len = ZSTD_compress(z.data, cap, raw->data, raw->len, 1);
	ck_assert(!ZSTD_isError(len));
	z.len = len;
	return z;
}

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

/* ------------------------------------------------------------------ */
/* Stable-input path (encoder.c) against the buffered stream           */
/* ------------------------------------------------------------------ */

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
	size_t n = 65536, i, total = 0, done, split1, split3, split9;
	struct mt_event *ev = calloc(n, sizeof(*ev));
	uint8_t rec[MT_MSGPACK_EVENT_MAX];
	void *one = new_state(NULL), *three = new_state("level=3");
	void *nine = new_state("level=9");
	void *buffered = new_buffered_state(NULL);

	ck_assert_ptr_nonnull(ev);
	for (i = 0; i < n; i++) {
		random_event(&ev[i]);
		total += mt_msgpack_pack(rec, sizeof(rec), &ev[i], 1, &done);
	}
	split1 = (size_t)3 << (ZSTD_getCParams(1, 0, 0).windowLog - 1);
	split3 = (size_t)3 << (ZSTD_getCParams(3, 0, 0).windowLog - 1);
	split9 = (size_t)3 << (ZSTD_getCParams(9, 0, 0).windowLog - 1);
	ck_assert_uint_eq(split1, 768 * 1024);
	/* the test's own premises */
	ck_assert_uint_gt(total, 4 * split1);
	ck_assert_uint_gt(total, split3);
	ck_assert_uint_lt(total, 2 * split3);
	ck_assert_uint_lt(total, split9);
#ifdef ZSTD_c_stableInBuffer
	check_split(one, "level 1", split1, ev, n,
		    total / (split1 + ZSTD_BLOCKSIZE_MAX) + 1,
		    total / split1 + 1);
	check_split(three, "level 3", split3, ev, n, 2, 2);
#else
	check_split(one, "level 1", SIZE_MAX / 4, ev, n, 1, 1);
	check_split(three, "level 3", SIZE_MAX / 4, ev, n, 1, 1);
#endif
	check_split(nine, "level 9", SIZE_MAX / 4, ev, n, 1, 1);
	check_split(buffered, "buffered", SIZE_MAX / 4, ev, n, 1, 1);
	free(ev);
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

/* ------------------------------------------------------------------ */
/* Fast reader (msgpack.c) against the generic one                     */
/* ------------------------------------------------------------------ */

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

static Suite *encoder_suite(void)
{
	Suite *s = suite_create("encoder-msgpack-zstd");
	TCase *tc = tcase_create("format");

	/* truncation sweeps decode thousands of files */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_golden_msgpack_bytes);
	tcase_add_test(tc, test_golden_frame);
	tcase_add_test(tc, test_decode_golden);
	tcase_add_test(tc, test_decode_extended);
	tcase_add_test(tc, test_round_trip_random);
	tcase_add_test(tc, test_round_trip_multi_frame);
	tcase_add_test(tc, test_empty_batch_and_meta);
	tcase_add_test(tc, test_bad_kind_refused);
	tcase_add_test(tc, test_frame_free_other_thread);
	tcase_add_test(tc, test_level_option);
	tcase_add_test(tc, test_truncated_golden);
	tcase_add_test(tc, test_truncated_multi_frame);
	tcase_add_test(tc, test_corrupt_input);
	tcase_add_test(tc, test_garbage_file);
	tcase_add_test(tc, test_unknown_type);
	tcase_add_test(tc, test_unknown_keys_skipped);
	tcase_add_test(tc, test_record_across_frames);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_stable_matches_buffered);
	tcase_add_test(tc, test_large_batch_split);
	tcase_add_test(tc, test_bad_kind_after_blocks);
	tcase_add_test(tc, test_fast_matches_generic);
	tcase_add_test(tc, test_decode_mixed_layouts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* a reader that stopped early closes the pipe under the writer */
	signal(SIGPIPE, SIG_IGN);
	if (te_load_plugin(&ops) < 0) {
		return 99;
	}
	sr = srunner_create(encoder_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

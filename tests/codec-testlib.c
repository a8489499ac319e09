/* SPDX-License-Identifier: MIT */
/*
 * codec-testlib.c - helpers of the msgpack-zstd tests (see codec-testlib.h).
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

const struct mt_encoder_ops *ops;

void buf_add(struct buf *b, const void *data, size_t len)
{
	b->data = realloc(b->data, b->len + len + 1);
	ck_assert_ptr_nonnull(b->data);
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

struct buf read_fixture(const char *name)
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

/* The value of "key" in a flat JSON object line: number or string. */
int json_field(const char *line, const char *key, char *out,
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

int kind_by_name(const char *name)
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
size_t load_vectors(struct vector **out)
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

void *new_state(const char *args)
{
	void *state = NULL;
	int ret = ops->create(&te_host, args, &state);

	ck_assert_msg(ret == 0, "create(%s): %d %s", args ? args : "NULL",
		      ret, te_last_log);
	return state;
}

int on_events(void *ctx, const struct mt_event *events, size_t count)
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

int on_meta(void *ctx, unsigned int variant, const void *data,
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

void *pipe_writer_main(void *arg)
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
int decode_mem(void *state, const void *data, size_t len,
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

void collect_free(struct collect *c)
{
	free(c->ev);
	memset(c, 0, sizeof(*c));
}

/* Byte offset N of a "... byte N ..." message must be the one given. */
void assert_log_has(const char *needle)
{
	ck_assert_msg(strstr(te_last_log, needle) != NULL,
		      "log \"%s\" lacks \"%s\"", te_last_log, needle);
}

void assert_events_eq(const struct mt_event *a,
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

struct buf encode_all(void *state, const struct mt_event *ev,
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

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Interesting values: the boundaries of every msgpack integer form. */
uint64_t rnd_u64(void)
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

int32_t rnd_i32(void)
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
void random_event(struct mt_event *ev)
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

/* msgpack str8 key or value */
void put_str(struct buf *b, const char *s)
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

struct buf compress_buf(const struct buf *raw)
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

int codec_test_main(Suite *s)
{
	SRunner *sr;
	int failed;

	/* a reader that stopped early closes the pipe under the writer */
	signal(SIGPIPE, SIG_IGN);
	if (te_load_plugin(&ops) < 0) {
		return 99;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

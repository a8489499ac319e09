/* SPDX-License-Identifier: MIT */
/*
 * codec-testlib.h - what test-msgpack, test-encoder and test-decoder share:
 * the reference vectors, a decode() that collects what it delivers, and
 * random events at the boundaries of every msgpack integer form. Failures
 * are Check assertions, so these run inside a test.
 */
#ifndef CODEC_TESTLIB_H
#define CODEC_TESTLIB_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include <memtrack/plugin.h>

/* the plugin under test, set by main() through te_load_plugin() */
extern const struct mt_encoder_ops *ops;

struct buf {
	uint8_t *data;
	size_t len;
};

/* One line of events.jsonl. */
struct vector {
	struct mt_event ev;
	uint8_t msgpack[160];
	size_t msgpack_len;
};

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

struct pipe_writer {
	int fd;
	const uint8_t *data;
	size_t len;
};

void buf_add(struct buf *b, const void *data, size_t len);

struct buf read_fixture(const char *name);

/* The value of "key" in a flat JSON object line: number or string. */
int json_field(const char *line, const char *key, char *out,
	       size_t outlen);

int kind_by_name(const char *name);

/* All 126 vectors; returns the count. */
size_t load_vectors(struct vector **out);

void *new_state(const char *args);

int on_events(void *ctx, const struct mt_event *events, size_t count);

int on_meta(void *ctx, unsigned int variant, const void *data,
	    size_t len);

void *pipe_writer_main(void *arg);

/*
 * Decode data through a temporary file or a pipe fed by a thread. Returns
 * decode()'s value; c receives the events.
 */
int decode_mem(void *state, const void *data, size_t len,
	       int use_pipe, struct collect *c);

void collect_free(struct collect *c);

/* Byte offset N of a "... byte N ..." message must be the one given. */
void assert_log_has(const char *needle);

void assert_events_eq(const struct mt_event *a,
		      const struct mt_event *b, size_t n);

struct buf encode_all(void *state, const struct mt_event *ev,
		      size_t n);

uint64_t rng(void);

/* Interesting values: the boundaries of every msgpack integer form. */
uint64_t rnd_u64(void);

int32_t rnd_i32(void);

/* A random event in the canonical form decode() gives back. */
void random_event(struct mt_event *ev);

/* msgpack str8 key or value */
void put_str(struct buf *b, const char *s);

struct buf compress_buf(const struct buf *raw);

/* Load the plugin into ops, run s, free it: main()'s exit status (99 when
 * the plugin cannot be loaded). */
int codec_test_main(Suite *s);

#endif /* CODEC_TESTLIB_H */

/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the batch pipeline, with an encoder and a sink defined here
 * so that what the pipeline does (order, bounds, errors) can be observed
 * without any codec.
 *
 * Frame format of the test encoder: three u64 (tag, count or variant,
 * payload bytes) then the payload (raw events, or the metadata bytes).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/log.h"
#include "host/pipeline.h"

#define TAG_EVENTS 1
#define TAG_META 2
#define HDR_BYTES (3 * sizeof(uint64_t))
#define MAX_BATCH_ADDRS 256

/* Instrumentation shared by the test plugins; reset by reset_counters(). */
static struct {
	int states_alive;
	int creates;
	int frames_alive;
	int frames_max;
	int inversions;   /* a batch encoded after a later one */
	int64_t last_done; /* highest first-timestamp encoded so far */
	uint64_t sink_events; /* events the sink has received */
	pthread_mutex_t lock; /* guards addrs */
	const void *addrs[MAX_BATCH_ADDRS];
	int naddrs;
	const void *states[8]; /* states encode() was called with */
	int states_used;
} ctr = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void reset_counters(void)
{
	ctr.states_alive = 0;
	ctr.creates = 0;
	ctr.frames_alive = 0;
	ctr.frames_max = 0;
	ctr.inversions = 0;
	ctr.last_done = -1;
	ctr.sink_events = 0;
	ctr.naddrs = 0;
	ctr.states_used = 0;
}

/* ------------------------------------------------------------------ */
/* Host services for the test plugins: messages go to stderr, where the   */
/* error tests count them next to the pipeline's own (host/log.c).        */
/* ------------------------------------------------------------------ */

static void test_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...) MT_PRINTF(4, 5);

static void test_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...)
{
	va_list ap;

	/* the host's own log: it counts the errors, and a plugin failure
	 * nothing explained is named by the pipeline only then */
	(void)host;
	va_start(ap, fmt);
	mt_vlog_plugin(level, plugin, fmt, ap);
	va_end(ap);
}

static const struct mt_host test_host = {
	MT_OPS_HEADER(mt_host),
	.log = test_log,
	.log_level = MT_LOG_WARN,
};

/* ------------------------------------------------------------------ */
/* Test encoder                                                        */
/* ------------------------------------------------------------------ */

struct tenc {
	const struct mt_host *host;
	long long fail_ts; /* encode fails on the batch holding it; -1: never */
};

static int tenc_create(const struct mt_host *host, const char *args,
		       void **state)
{
	struct tenc *st;
	long long fail_ts = -1;
	int fail_at = 0;
	int n;

	n = __atomic_add_fetch(&ctr.creates, 1, __ATOMIC_SEQ_CST);
	if (args && sscanf(args, "fail-create-at=%d", &fail_at) == 1) {
		if (n == fail_at) {
			host->log(host, MT_LOG_ERROR, "test-enc",
				  "bad args '%s'", args);
			return -EINVAL;
		}
	} else if (args && sscanf(args, "fail-ts=%lld", &fail_ts) != 1) {
		host->log(host, MT_LOG_ERROR, "test-enc", "bad args '%s'",
			  args);
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	st->fail_ts = fail_ts;
	__atomic_add_fetch(&ctr.states_alive, 1, __ATOMIC_SEQ_CST);
	*state = st;
	return 0;
}

static void tenc_destroy(void *state)
{
	__atomic_sub_fetch(&ctr.states_alive, 1, __ATOMIC_SEQ_CST);
	free(state);
}

static int frame_alloc(struct mt_frame *out, uint64_t tag, uint64_t n,
		       const void *payload, size_t len)
{
	uint64_t hdr[3] = { tag, n, len };
	unsigned char *buf;
	int alive, max;

	buf = malloc(HDR_BYTES + len);
	if (!buf) {
		return -ENOMEM;
	}
	memcpy(buf, hdr, HDR_BYTES);
	if (len) {
		memcpy(buf + HDR_BYTES, payload, len);
	}
	out->data = buf;
	out->len = HDR_BYTES + len;

	alive = __atomic_add_fetch(&ctr.frames_alive, 1, __ATOMIC_SEQ_CST);
	max = __atomic_load_n(&ctr.frames_max, __ATOMIC_SEQ_CST);
	while (alive > max &&
	       !__atomic_compare_exchange_n(&ctr.frames_max, &max, alive, 0,
					    __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST)) {
	}
	return 0;
}

static int note_batch(const void *state, const struct mt_event *events,
		      size_t count)
{
	int i;

	pthread_mutex_lock(&ctr.lock);
	for (i = 0; i < ctr.states_used; i++) {
		if (ctr.states[i] == state) {
			break;
		}
	}
	if (i == ctr.states_used && i < 8) {
		ctr.states[ctr.states_used++] = state;
	}
	for (i = 0; i < ctr.naddrs; i++) {
		if (ctr.addrs[i] == events) {
			break;
		}
	}
	if (i == ctr.naddrs && ctr.naddrs < MAX_BATCH_ADDRS) {
		ctr.addrs[ctr.naddrs++] = events;
	}
	if (count) {
		if ((int64_t)events[0].timestamp < ctr.last_done) {
			ctr.inversions++;
		} else {
			ctr.last_done = (int64_t)events[0].timestamp;
		}
	}
	pthread_mutex_unlock(&ctr.lock);
	return 0;
}

static int tenc_encode(void *state, const struct mt_event *events,
		       size_t count, struct mt_frame *out)
{
	struct tenc *st = state;
	size_t i;

	if (st->fail_ts >= 0) {
		for (i = 0; i < count; i++) {
			if (events[i].timestamp == (uint64_t)st->fail_ts) {
				st->host->log(st->host, MT_LOG_ERROR,
					      "test-enc",
					      "event %llu: injected failure",
					      (unsigned long long)st->fail_ts);
				return -EINVAL;
			}
		}
	}
	note_batch(state, events, count);
	return frame_alloc(out, TAG_EVENTS, count, events,
			   count * sizeof(*events));
}

static int tenc_encode_meta(void *state, unsigned int variant,
			    const void *data, size_t len,
			    struct mt_frame *out)
{
	return frame_alloc(out, TAG_META, variant, data, len);
}

static void tenc_frame_free(struct mt_frame *frame)
{
	__atomic_sub_fetch(&ctr.frames_alive, 1, __ATOMIC_SEQ_CST);
	free(frame->data);
	frame->data = NULL;
	frame->len = 0;
}

static const struct mt_encoder_ops test_encoder = {
	MT_OPS_HEADER(mt_encoder_ops),
	.create = tenc_create,
	.encode = tenc_encode,
	.frame_free = tenc_frame_free,
	.encode_meta = tenc_encode_meta,
	.destroy = tenc_destroy,
};

static const struct mt_encoder_ops test_encoder_nometa = {
	MT_OPS_HEADER(mt_encoder_ops),
	.create = tenc_create,
	.encode = tenc_encode,
	.frame_free = tenc_frame_free,
	.destroy = tenc_destroy,
};

/* ------------------------------------------------------------------ */
/* Test sink: appends to memory                                        */
/* ------------------------------------------------------------------ */

struct tsink {
	unsigned char *buf;
	size_t len;
	size_t cap;
	int writes;
	int closes;
	int fail_at;        /* write number (1-based) that fails; 0: none */
	int close_rc;
	unsigned int sleep_us;
};

static int tsink_write(void *state, const void *data, size_t len)
{
	struct tsink *s = state;
	const uint64_t *hdr = data;
	const struct mt_host *host = &test_host;
	unsigned char *nbuf;
	size_t ncap;

	__atomic_add_fetch(&s->writes, 1, __ATOMIC_SEQ_CST);
	if (s->sleep_us) {
		usleep(s->sleep_us);
	}
	if (s->writes == s->fail_at) {
		host->log(host, MT_LOG_ERROR, "test-sink", "%s: %s",
			  "mem.out", strerror(ENOSPC));
		return -ENOSPC;
	}
	if (s->len + len > s->cap) {
		ncap = s->cap ? s->cap : 4096;
		while (ncap < s->len + len) {
			ncap *= 2;
		}
		nbuf = realloc(s->buf, ncap);
		if (!nbuf) {
			return -ENOMEM;
		}
		s->buf = nbuf;
		s->cap = ncap;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	if (hdr[0] == TAG_EVENTS) {
		__atomic_add_fetch(&ctr.sink_events, hdr[1], __ATOMIC_SEQ_CST);
	}
	return 0;
}

static int tsink_close(void *state)
{
	struct tsink *s = state;

	s->closes++;
	return s->close_rc;
}

static const struct mt_sink_ops test_sink = {
	MT_OPS_HEADER(mt_sink_ops),
	.write = tsink_write,
	.close = tsink_close,
};

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static void make_event(struct mt_event *ev, uint64_t i)
{
	memset(ev, 0, sizeof(*ev));
	ev->timestamp = i;
	ev->addr = 0x10000 + i * 16;
	ev->size = i % 4099;
	ev->pid = 42;
	ev->tid = (int32_t)(i % 7);
	ev->kind = (uint8_t)(i % MT_EV_KIND_COUNT);
}

static void config_init(struct mt_pipeline_config *cfg, struct tsink *sink,
			unsigned int workers, size_t batch, size_t queue)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(sink, 0, sizeof(*sink));
	cfg->host = &test_host;
	cfg->encoder = &test_encoder;
	cfg->encoder_name = "test-enc";
	cfg->sink = &test_sink;
	cfg->sink_state = sink;
	cfg->workers = workers;
	cfg->batch_events = batch;
	cfg->queue_batches = queue;
	reset_counters();
}

/*
 * Emits events first..first+n-1 the way mt_emit() does, but keeps the
 * flush status. Returns the number emitted; *rc gets the first error.
 * inflight_max (may be NULL): most events emitted but not yet at the sink.
 */
static uint64_t emit_range(struct mt_pipeline *p, uint64_t first, uint64_t n,
			   int *rc, uint64_t *inflight_max)
{
	struct mt_emitter *em = mt_pipeline_emitter(p);
	uint64_t i, inflight;

	*rc = 0;
	for (i = 0; i < n; i++) {
		if (em->cur == em->end) {
			*rc = em->flush(em);
			if (*rc < 0) {
				break;
			}
		}
		make_event(em->cur++, first + i);
		if (inflight_max) {
			inflight = first + i + 1 -
				   __atomic_load_n(&ctr.sink_events,
						   __ATOMIC_SEQ_CST);
			if (inflight > *inflight_max) {
				*inflight_max = inflight;
			}
		}
	}
	return i;
}

/*
 * Walks the sink's output: checks every frame is well formed and that event
 * frames carry consecutive events from 0 in order. Describes the frame
 * sequence in trace ("E<count>" and "M<variant>:<data>", space separated).
 */
static uint64_t check_output(const struct tsink *s, char *trace,
			     size_t trace_cap, uint64_t *frames)
{
	const unsigned char *b = s->buf;
	size_t off = 0, tlen = 0;
	uint64_t hdr[3], expect = 0, i;
	struct mt_event ev, want;

	if (trace_cap) {
		trace[0] = '\0';
	}
	*frames = 0;
	while (off < s->len) {
		ck_assert_uint_ge(s->len - off, HDR_BYTES);
		memcpy(hdr, b + off, HDR_BYTES);
		off += HDR_BYTES;
		ck_assert_uint_le(hdr[2], s->len - off);
		if (hdr[0] == TAG_EVENTS) {
			ck_assert_uint_eq(hdr[2], hdr[1] * sizeof(ev));
			ck_assert_uint_gt(hdr[1], 0);
			for (i = 0; i < hdr[1]; i++) {
				memcpy(&ev, b + off + i * sizeof(ev),
				       sizeof(ev));
				make_event(&want, expect);
				ck_assert_msg(!memcmp(&ev, &want, sizeof(ev)),
					      "event %llu out of order "
					      "(got ts %llu)",
					      (unsigned long long)expect,
					      (unsigned long long)ev.timestamp);
				expect++;
			}
			if (trace_cap) {
				tlen += (size_t)snprintf(
					trace + tlen, trace_cap - tlen,
					"%sE%llu", tlen ? " " : "",
					(unsigned long long)hdr[1]);
			}
		} else {
			ck_assert_uint_eq(hdr[0], TAG_META);
			if (trace_cap) {
				tlen += (size_t)snprintf(
					trace + tlen, trace_cap - tlen,
					"%sM%llu:%.*s", tlen ? " " : "",
					(unsigned long long)hdr[1],
					(int)hdr[2], b + off);
			}
		}
		ck_assert_uint_lt(tlen, trace_cap ? trace_cap : 1);
		off += hdr[2];
		(*frames)++;
	}
	return expect;
}

/* Sleeps a pseudo-random time derived from seq, so that workers finish
 * out of order; max_us comes through the hook context. */
static void random_delay(uint64_t seq, void *ctx)
{
	unsigned int max_us = *(unsigned int *)ctx;
	uint64_t h = (seq + 1) * 0x9e3779b97f4a7c15ull;

	h ^= h >> 29;
	if (max_us) {
		usleep((useconds_t)(h % (max_us + 1)));
	}
}

/* Sleeps *ctx microseconds before every batch. */
static void fixed_delay(uint64_t seq, void *ctx)
{
	(void)seq;
	usleep(*(unsigned int *)ctx);
}

static void *no_op(void *arg)
{
	return arg;
}

static int count_threads(void)
{
	static bool settled;
	char line[256];
	int n = -1;
	FILE *f;
	pthread_t t;

	if (!settled) {
		/* ThreadSanitizer starts a thread of its own with the first
		 * pthread_create(): let that happen before any baseline */
		settled = true;
		if (pthread_create(&t, NULL, no_op, NULL) == 0) {
			pthread_join(t, NULL);
		}
	}
	f = fopen("/proc/self/status", "r");
	if (!f) {
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Threads: %d", &n) == 1) {
			break;
		}
	}
	fclose(f);
	return n;
}

/*
 * The thread count once it has come down to want, or what it is after a
 * second. pthread_join() returns when the kernel clears the thread's tid,
 * before the thread has left its group: /proc/self/status may count it a
 * little longer (seen under ThreadSanitizer in CI: 4 where 3 were left).
 * A thread that was not joined stays counted, and the test fails.
 */
static int threads_down_to(int want)
{
	int n = count_threads();

	for (int i = 0; i < 1000 && n > want; i++) {
		usleep(1000);
		n = count_threads();
	}
	return n;
}

/* stderr capture, to count what reaches the user. */
static int saved_stderr = -1;
static FILE *captured;

static void capture_stderr(void)
{
	fflush(stderr);
	captured = tmpfile();
	ck_assert_ptr_nonnull(captured);
	saved_stderr = dup(2);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_ge(dup2(fileno(captured), 2), 0);
}

/* Returns the number of lines written to stderr; copies the first. */
static int end_capture(char *first, size_t cap)
{
	char line[512];
	int n = 0;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(captured);
	first[0] = '\0';
	while (fgets(line, sizeof(line), captured)) {
		if (!n) {
			snprintf(first, cap, "%s", line);
		}
		fputs(line, stderr);
		n++;
	}
	fclose(captured);
	return n;
}

static void add_frame(char *buf, size_t cap, size_t *len, uint64_t events)
{
	*len += (size_t)snprintf(buf + *len, cap - *len, "%sE%llu",
				 *len ? " " : "", (unsigned long long)events);
	ck_assert_uint_lt(*len, cap);
}

/*
 * The frame sizes pipeline.c documents for n events in default batches of
 * 65536: with 2 workers or more the first batches are 1024, 2048, ...,
 * 32768 events, then 65536; with one worker 16384, 32768, then 65536. A
 * batch is handed over when the next event comes, so the last one is
 * never empty; with several workers, once batches went to them, it is cut
 * into up to 2 x workers equal slices of at least 1024 events.
 * Writes them as check_output() describes frames ("E1024 E2048 ...") and
 * returns their number.
 */
static uint64_t expected_frames(uint64_t n, unsigned int workers, char *buf,
				size_t cap)
{
	uint64_t fill = workers > 1 ? 1024 : 16384, frames = 0, slices, per;
	size_t len = 0;

	buf[0] = '\0';
	while (n > fill) {
		add_frame(buf, cap, &len, fill);
		n -= fill;
		fill = fill * 2 < 65536 ? fill * 2 : 65536;
		frames++;
	}
	if (!n) {
		return frames;
	}
	slices = workers > 1 && frames ? 2 * (uint64_t)workers : 1;
	if (slices > n / 1024) {
		slices = n / 1024 ? n / 1024 : 1;
	}
	per = (n + slices - 1) / slices;
	while (n) {
		add_frame(buf, cap, &len, n < per ? n : per);
		n -= n < per ? n : per;
		frames++;
	}
	return frames;
}

static unsigned int default_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (unsigned int)n;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/* 1. Every event exactly once and in order, whatever the tail. */
static const uint64_t tail_counts[] = { 0, 1, 65535, 65536, 65537, 200003 };

START_TEST(test_tail)
{
	uint64_t n = tail_counts[_i], frames, got;
	unsigned int workers = (unsigned int)(_i % 3);
	struct mt_pipeline_config cfg;
	struct mt_pipeline_stats st;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	char trace[512], want[512];
	int rc;

	/* workers 0 and batch 0: the defaults (online CPUs, 65536) */
	config_init(&cfg, &sink, workers, 0, 0);
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, n, &rc, NULL), n);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);

	got = check_output(&sink, trace, sizeof(trace), &frames);
	ck_assert_uint_eq(got, n);
	ck_assert_uint_eq(frames,
			  expected_frames(n, workers ? workers :
						       default_workers(),
					  want, sizeof(want)));
	ck_assert_str_eq(trace, want);
	ck_assert_int_eq(sink.writes, (int)frames);
	ck_assert_int_eq(sink.closes, 1);

	mt_pipeline_get_stats(p, &st);
	ck_assert_uint_eq(st.events, n);
	ck_assert_uint_eq(st.frames, frames);
	ck_assert_uint_eq(st.bytes_in, n * sizeof(struct mt_event));
	ck_assert_uint_eq(st.bytes_out, sink.len);

	mt_pipeline_destroy(p);
	ck_assert_int_eq(sink.closes, 1);
	ck_assert_int_eq(ctr.states_alive, 0);
	ck_assert_int_eq(ctr.frames_alive, 0);
	free(sink.buf);
}
END_TEST

/*
 * 1b. What a short trace costs: a trace that fits in the first batch is
 * encoded and written by the producer, with no thread started; buffers are
 * made as batches are needed; the first batches ramp up, and with two
 * workers 100,000 events are 6 frames and the last batch in 4 slices,
 * encoded by both and, as the trace ends before any is ready, written by
 * the producer.
 */
START_TEST(test_short_trace)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	char trace[256];
	uint64_t frames;
	unsigned int delay_us = 100000;
	int before, threads, rc;

	before = count_threads();
	ck_assert_int_gt(before, 0);

	/* one worker, 16000 events: one frame, no thread ever */
	config_init(&cfg, &sink, 1, 0, 0);
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 16000, &rc, NULL), 16000);
	ck_assert_int_eq(count_threads(), before);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_int_eq(count_threads(), before);
	ck_assert_uint_eq(check_output(&sink, trace, sizeof(trace), &frames),
			  16000);
	ck_assert_str_eq(trace, "E16000");
	ck_assert_int_eq(ctr.naddrs, 1);
	mt_pipeline_destroy(p);
	free(sink.buf);

	/* one worker, 100000 events: a quarter batch first, then doubling */
	config_init(&cfg, &sink, 1, 0, 0);
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 100000, &rc, NULL), 100000);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, trace, sizeof(trace), &frames),
			  100000);
	ck_assert_str_eq(trace, "E16384 E32768 E50848");
	ck_assert_int_eq(ctr.states_used, 1);
	mt_pipeline_destroy(p);
	free(sink.buf);

	/* two workers, 100000 events: the ramp; each batch takes 100 ms, so
	 * both states must be at work */
	config_init(&cfg, &sink, 2, 0, 0);
	cfg.before_encode = fixed_delay;
	cfg.hook_ctx = &delay_us;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 100000, &rc, NULL), 100000);
	/* the two workers; and the writer when a frame was ready before the
	 * last event was handed over: not on a quick machine (100 ms per
	 * batch), but under ThreadSanitizer on a loaded one, yes */
	threads = count_threads();
	ck_assert_int_ge(threads, before + 2);
	ck_assert_int_le(threads, before + 3);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, trace, sizeof(trace), &frames),
			  100000);
	ck_assert_str_eq(trace, "E1024 E2048 E4096 E8192 E16384 E32768 "
				"E8872 E8872 E8872 E8872");
	ck_assert_int_eq(ctr.states_used, 2);
	mt_pipeline_destroy(p);
	ck_assert_int_eq(ctr.states_alive, 0);
	/* finish() lets idle threads leave by themselves; destroy() has
	 * reaped them all */
	ck_assert_int_eq(threads_down_to(before), before);
	free(sink.buf);
}
END_TEST

/*
 * 1c. Frames reach the sink while the trace goes on, without a sync: the
 * writer starts with the first frame ready, however long the producer
 * then stays quiet.
 */
START_TEST(test_written_while_running)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	uint64_t frames;
	int before, rc, i;

	before = count_threads();
	config_init(&cfg, &sink, 2, 100, 0);
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 250, &rc, NULL), 250);
	ck_assert_int_eq(rc, 0);
	/* two full batches handed over, the producer idle from here */
	for (i = 0; i < 2000 && __atomic_load_n(&sink.writes,
						__ATOMIC_SEQ_CST) < 2; i++) {
		usleep(1000);
	}
	ck_assert_int_eq(__atomic_load_n(&sink.writes, __ATOMIC_SEQ_CST), 2);
	ck_assert_int_eq(count_threads(), before + 3);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 250);
	ck_assert_uint_eq(frames, 3);
	mt_pipeline_destroy(p);
	ck_assert_int_eq(threads_down_to(before), before);
	free(sink.buf);
}
END_TEST

/* 2. Output order is exact although workers finish out of order. */
START_TEST(test_order_random_delays)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	unsigned int max_us = 3000;
	uint64_t frames;
	int rc;

	config_init(&cfg, &sink, 4, 100, 0);
	cfg.before_encode = random_delay;
	cfg.hook_ctx = &max_us;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 50000, &rc, NULL), 50000);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 50000);
	ck_assert_uint_eq(frames, 500);
	/* Otherwise the test proves nothing about reordering. */
	ck_assert_int_gt(ctr.inversions, 0);
	mt_pipeline_destroy(p);
	free(sink.buf);
}
END_TEST

/* 3. No deadlock and no loss for any worker count and queue depth. */
START_TEST(test_shapes)
{
	static const unsigned int workers[] = { 1, 2, 3, 8 };
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p;
	struct tsink sink;
	unsigned int max_us;
	uint64_t n, frames;
	size_t w, q;
	int rc;

	for (w = 0; w < sizeof(workers) / sizeof(workers[0]); w++) {
		for (q = 1; q <= 4; q++) {
			p = NULL;
			n = 3001 + w * 7 + q;
			/* Alternate between no delay and short random ones
			 * to vary the interleavings. */
			max_us = (w + q) % 2 ? 200 : 0;
			config_init(&cfg, &sink, workers[w], 7, q);
			cfg.before_encode = random_delay;
			cfg.hook_ctx = &max_us;
			ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
			ck_assert_uint_eq(emit_range(p, 0, n, &rc, NULL), n);
			ck_assert_int_eq(rc, 0);
			ck_assert_int_eq(mt_pipeline_finish(p), 0);
			ck_assert_uint_eq(check_output(&sink, NULL, 0,
						       &frames), n);
			ck_assert_uint_eq(frames, (n + 6) / 7);
			mt_pipeline_destroy(p);
			ck_assert_int_eq(ctr.frames_alive, 0);
			free(sink.buf);
		}
	}
}
END_TEST

/* 4. The sink fails on its 3rd frame: one error, one message. */
START_TEST(test_sink_failure)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct mt_emitter *em;
	struct tsink sink;
	char first[512];
	uint64_t frames, emitted;
	int rc, lines;

	config_init(&cfg, &sink, 4, 100, 0);
	sink.fail_at = 3;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);

	capture_stderr();
	/* Far more than the pipeline can hold: the error must surface. */
	emitted = emit_range(p, 0, 100000000, &rc, NULL);
	ck_assert_int_eq(rc, -ENOSPC);
	em = mt_pipeline_emitter(p);
	ck_assert_ptr_null(mt_emit(em));
	ck_assert_ptr_null(mt_emit(em));
	ck_assert_int_eq(mt_pipeline_meta(p, 1, "x", 1), -ENOSPC);
	ck_assert_int_eq(mt_pipeline_finish(p), -ENOSPC);
	ck_assert_int_eq(mt_pipeline_finish(p), -ENOSPC);
	mt_pipeline_destroy(p);
	lines = end_capture(first, sizeof(first));

	ck_assert_uint_lt(emitted, 100000000);
	ck_assert_int_eq(lines, 1);
	ck_assert_ptr_nonnull(strstr(first, "No space left on device"));
	ck_assert_int_eq(sink.writes, 3);
	ck_assert_int_eq(sink.closes, 1);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 200);
	ck_assert_uint_eq(frames, 2);
	ck_assert_int_eq(ctr.frames_alive, 0);
	ck_assert_int_eq(ctr.states_alive, 0);
	free(sink.buf);
}
END_TEST

/* 5. An encoder fails on one batch: same first-error behaviour. */
START_TEST(test_encoder_failure)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	char first[512];
	uint64_t frames, got, emitted;
	int rc, lines;

	config_init(&cfg, &sink, 4, 100, 0);
	cfg.encoder_args = "fail-ts=1234"; /* the 13th batch */
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);

	capture_stderr();
	emitted = emit_range(p, 0, 100000000, &rc, NULL);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_int_eq(mt_pipeline_finish(p), -EINVAL);
	mt_pipeline_destroy(p);
	lines = end_capture(first, sizeof(first));

	ck_assert_uint_lt(emitted, 100000000);
	ck_assert_int_eq(lines, 1);
	ck_assert_ptr_nonnull(strstr(first, "injected failure"));
	/* What was written is an intact prefix that stops before the
	 * failed batch. */
	got = check_output(&sink, NULL, 0, &frames);
	ck_assert_uint_le(got, 1200);
	ck_assert_uint_eq(got, frames * 100);
	ck_assert_int_eq(sink.closes, 1);
	ck_assert_int_eq(ctr.frames_alive, 0);
	ck_assert_int_eq(ctr.states_alive, 0);
	free(sink.buf);
}
END_TEST

/* Holds the batch that will fail to encode until the sink has failed. */
static void wait_for_sink_failure(uint64_t seq, void *ctx)
{
	struct tsink *sink = ctx;
	int i;

	if (seq != 12) {
		return;
	}
	for (i = 0; i < 5000; i++) {
		if (__atomic_load_n(&sink->writes, __ATOMIC_SEQ_CST) >=
		    sink->fail_at) {
			break;
		}
		usleep(1000);
	}
	/* The sink's write has returned -ENOSPC or is about to; the writer
	 * records it right after. Give it ample time on a loaded machine
	 * before this batch's encoder failure races it. */
	usleep(200000);
}

/* Two failures in a known order: the first one is what callers see. */
START_TEST(test_first_error_wins)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	char first[512];
	uint64_t frames;
	int rc;

	config_init(&cfg, &sink, 4, 100, 0);
	cfg.encoder_args = "fail-ts=1234"; /* seq 12 */
	cfg.before_encode = wait_for_sink_failure;
	cfg.hook_ctx = &sink;
	sink.fail_at = 3;
	sink.close_rc = -EIO;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	capture_stderr();
	emit_range(p, 0, 100000000, &rc, NULL);
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_eq(mt_pipeline_finish(p), -ENOSPC);
	mt_pipeline_destroy(p);
	end_capture(first, sizeof(first));
	ck_assert_ptr_nonnull(strstr(first, "No space left on device"));
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 200);
	free(sink.buf);
}
END_TEST

/* 6. Bad encoder args: create fails, nothing runs, the sink stays open. */
START_TEST(test_create_failure)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = (struct mt_pipeline *)&cfg;
	struct tsink sink;
	int before;

	before = count_threads();
	ck_assert_int_gt(before, 0);

	config_init(&cfg, &sink, 4, 100, 0);
	cfg.encoder_args = "fail-create-at=3";
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), -EINVAL);
	ck_assert_ptr_eq(p, (struct mt_pipeline *)&cfg);
	ck_assert_int_eq(ctr.creates, 3);
	ck_assert_int_eq(ctr.states_alive, 0);
	ck_assert_int_eq(sink.closes, 0);
	ck_assert_int_eq(threads_down_to(before), before);

	config_init(&cfg, &sink, 2, 100, 0);
	cfg.encoder_args = "no-such-option";
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), -EINVAL);
	ck_assert_int_eq(ctr.states_alive, 0);
	ck_assert_int_eq(sink.closes, 0);
	ck_assert_int_eq(threads_down_to(before), before);
}
END_TEST

/* 7. Metadata frames land exactly where they were queued. */
START_TEST(test_meta_order)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	unsigned int max_us = 2000;
	char trace[256];
	uint64_t frames;
	int rc;

	config_init(&cfg, &sink, 4, 100, 0);
	cfg.before_encode = random_delay;
	cfg.hook_ctx = &max_us;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 0, "start", 5), 0);
	emit_range(p, 0, 250, &rc, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 1, "A", 1), 0);
	emit_range(p, 250, 50, &rc, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 2, "B", 1), 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 3, "", 0), 0);
	emit_range(p, 300, 100, &rc, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 15, "end", 3), 0);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);

	ck_assert_uint_eq(check_output(&sink, trace, sizeof(trace), &frames),
			  400);
	ck_assert_str_eq(trace,
			 "M0:start E100 E100 E50 M1:A E50 M2:B M3: E100 "
			 "M15:end");
	mt_pipeline_destroy(p);
	free(sink.buf);
}
END_TEST

START_TEST(test_meta_unsupported)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;

	config_init(&cfg, &sink, 1, 100, 0);
	cfg.encoder = &test_encoder_nometa;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_int_eq(mt_pipeline_meta(p, 1, "A", 1), -ENOTSUP);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(sink.len, 0);
	mt_pipeline_destroy(p);
}
END_TEST

/*
 * 8. Memory stays bounded with a slow sink and a fast producer. The bounds
 * are the ones pipeline.c documents, for Q = queue_batches, N = workers:
 * W = Q + 2N sequence numbers (frames) in flight, B = Q + N + 1 batches.
 */
START_TEST(test_bounded_memory)
{
	const unsigned int nw = 2;
	const size_t q = 3, batch = 50;
	const size_t window = q + 2 * nw, nbatches = q + nw + 1;
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	uint64_t frames, inflight_max = 0;
	int rc;

	int before = count_threads();

	config_init(&cfg, &sink, nw, batch, q);
	sink.sleep_us = 500;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 20000, &rc, &inflight_max), 20000);
	ck_assert_int_eq(rc, 0);
	/* far more frames than the window: the writer runs */
	ck_assert_int_eq(count_threads(), before + (int)nw + 1);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 20000);

	/* The batch being filled plus the window. */
	ck_assert_uint_le(inflight_max, (window + 1) * batch);
	ck_assert_int_le(ctr.frames_max, (int)window);
	ck_assert_int_le(ctr.naddrs, (int)nbatches);
	mt_pipeline_destroy(p);
	ck_assert_int_eq(threads_down_to(before), before);
	free(sink.buf);
}
END_TEST

/* destroy() without finish(): stops, drops queued work, closes the sink. */
START_TEST(test_abort)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	uint64_t frames;
	int rc;

	config_init(&cfg, &sink, 3, 10, 2);
	sink.sleep_us = 2000;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 1000, &rc, NULL), 1000);
	ck_assert_int_eq(rc, 0);
	mt_pipeline_destroy(p);
	ck_assert_int_eq(sink.closes, 1);
	ck_assert_int_eq(ctr.frames_alive, 0);
	ck_assert_int_eq(ctr.states_alive, 0);
	/* Not everything was written, but what was is intact. */
	ck_assert_uint_lt(check_output(&sink, NULL, 0, &frames), 1000);
	free(sink.buf);
}
END_TEST

/* A close error is the error when nothing failed before. */
START_TEST(test_close_error)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	uint64_t frames;
	int rc;

	config_init(&cfg, &sink, 2, 100, 0);
	sink.close_rc = -EIO;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	emit_range(p, 0, 1000, &rc, NULL);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(mt_pipeline_finish(p), -EIO);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 1000);
	mt_pipeline_destroy(p);
	ck_assert_int_eq(sink.closes, 1);
	free(sink.buf);
}
END_TEST

/* sync: everything emitted so far is at the sink, and the sink stays open
 * for more (a control 'drain', the summary written after it). */
START_TEST(test_sync)
{
	struct mt_pipeline_config cfg;
	struct mt_pipeline_stats st;
	struct mt_pipeline *p = NULL;
	struct tsink sink;
	uint64_t frames;
	int rc;

	unsigned int max_us = 2000;

	config_init(&cfg, &sink, 3, 100, 2);
	cfg.before_encode = random_delay;
	cfg.hook_ctx = &max_us;
	ck_assert_int_eq(mt_pipeline_create(&cfg, &p), 0);
	ck_assert_uint_eq(emit_range(p, 0, 1050, &rc, NULL), 1050);
	ck_assert_int_eq(mt_pipeline_sync(p), 0);
	/* 10 full batches and the partial one, all written, in order. */
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 1050);
	ck_assert_uint_eq(frames, 11);
	mt_pipeline_get_stats(p, &st);
	ck_assert_uint_eq(st.events, 1050);
	ck_assert_uint_eq(st.bytes_out, sink.len);
	ck_assert_int_eq(sink.closes, 0);
	/* A second sync with nothing new returns at once. */
	ck_assert_int_eq(mt_pipeline_sync(p), 0);
	ck_assert_uint_eq(emit_range(p, 1050, 30, &rc, NULL), 30);
	ck_assert_int_eq(mt_pipeline_finish(p), 0);
	ck_assert_uint_eq(check_output(&sink, NULL, 0, &frames), 1080);
	ck_assert_uint_eq(frames, 12);
	ck_assert_int_eq(sink.closes, 1);
	mt_pipeline_destroy(p);
	free(sink.buf);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("core");

	/* A deadlock shows up as a timeout, not a hung test run. */
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_tail, 0,
			    sizeof(tail_counts) / sizeof(tail_counts[0]));
	tcase_add_test(tc, test_short_trace);
	tcase_add_test(tc, test_written_while_running);
	tcase_add_test(tc, test_order_random_delays);
	tcase_add_test(tc, test_shapes);
	tcase_add_test(tc, test_sink_failure);
	tcase_add_test(tc, test_encoder_failure);
	tcase_add_test(tc, test_first_error_wins);
	tcase_add_test(tc, test_create_failure);
	tcase_add_test(tc, test_meta_order);
	tcase_add_test(tc, test_meta_unsupported);
	tcase_add_test(tc, test_bounded_memory);
	tcase_add_test(tc, test_abort);
	tcase_add_test(tc, test_close_error);
	tcase_add_test(tc, test_sync);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pipeline_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench-write - how fast events become a memtrack artifact.
 *
 * For each trace size it measures, in one run:
 *   floor      ZSTD at the encoder's default level (-5), one shot, over
 *              the msgpack bytes of the trace serialized up front: the
 *              cost of the format itself, the least any writer of it pays;
 *   1 / N      the whole write path with 1 and N (online CPUs) workers: a
 *              producer calling mt_emit() per event, the batch pipeline, the
 *              real msgpack-zstd plugin loaded with mt_plugin_load(), and a
 *              sink that drops the frames (the floor writes nothing either);
 * and checks two goals: 1 worker >= 0.85 x floor, N workers >= 1.6 x 1
 * worker. Between the two, rows that split the difference into its parts,
 * so that a miss says where the time goes:
 *   floor xN   the floor cut in N pieces compressed by N threads at once:
 *              what this machine's cores can give in parallel at best;
 *   pack       the encoder's msgpack serializer alone, 64 KiB at a time;
 *   stream     zstd's buffered streaming (a frame per batch, 64 KiB
 *              steps) over the packed bytes, no allocation: the encoder's
 *              fallback where zstd lacks stable input, and what that
 *              input saves (the encoder reads its own buffer in place
 *              and ends a zstd frame every ~768 KiB, see encoder.c);
 *   encode     the plugin's encode() called directly on batches, one
 *              thread, no pipeline (pack + compression + its frame
 *              allocation).
 *
 * The events are synthetic but shaped like a real heap trace (see gen_*):
 * what zstd finds to compress depends on that, so uniform random values
 * would measure the wrong thing. The PRNG is seeded with a constant, so
 * every run sees the same bytes.
 *
 * Usage:
 *   bench-write [-r REPS] [-w WORKERS] [-n EVENTS]... [-c CASE]
 *   bench-write --write FILE [EVENTS]   write a trace through the pipeline
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include <memtrack/plugin.h>

#include "host/host.h"
#include "host/pipeline.h"
#include "host/plugin.h"
#include "msgpack.h"

#define ENCODER_NAME "msgpack-zstd"
/* the encoder's default level (encoder.c: MZ_DEFAULT_LEVEL), which the
 * pipeline and encode() cases run at: the floor does the same work */
#define FLOOR_LEVEL (-5)

/* Events per batch: the pipeline's and memtrack's default, passed
 * explicitly so that the breakdown rows cut frames where the pipeline does. */
#define BATCH_EVENTS 65536
/* The encoder's compression step (MZ_CHUNK in its encoder.c). */
#define CHUNK_BYTES (64 * 1024)
#define MAX_WORKERS 64

#define GOAL_ONE_VS_FLOOR 0.85
#define GOAL_N_VS_ONE 1.6

#define MAX_SIZES 8

static const size_t default_sizes[] = { 10000, 100000, 500000, 1000000 };

/* ------------------------------------------------------------------ */
/* Synthetic trace                                                     */
/* ------------------------------------------------------------------ */

/* splitmix64: tiny, fast, and good enough that the kinds and sizes come
 * out in the intended proportions. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rng_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(s) % (hi - lo + 1);
}

struct block {
	uint64_t addr;
	uint64_t size;
};

#define LIVE_MAX 32768  /* live heap blocks tracked */
#define REUSE_MAX 256   /* recently freed addresses, like a tcache */
#define MAPS_MAX 64     /* live mappings */

struct gen {
	uint64_t rng;
	uint64_t now;       /* ns */
	uint64_t brk;       /* next fresh heap address */
	uint64_t mmap_top;  /* mappings grow down from here */
	struct block live[LIVE_MAX];
	size_t nlive;
	uint64_t reuse[REUSE_MAX];
	size_t nreuse;
	struct block maps[MAPS_MAX];
	size_t nmaps;
	unsigned int thread; /* index into threads[] */
};

/* A few processes, the first with several threads (a server and two
 * helpers). */
static const struct {
	int32_t pid;
	int32_t tid;
} threads[] = {
	{ 48211, 48211 }, { 48211, 48214 }, { 48211, 48215 },
	{ 48211, 48219 }, { 48230, 48230 }, { 48236, 48236 },
	{ 48236, 48240 },
};

#define NTHREADS (sizeof(threads) / sizeof(threads[0]))

/* Mostly small blocks, with a long tail, as malloc sees them. */
static uint64_t gen_size(struct gen *g)
{
	uint64_t r = rng_next(&g->rng) % 1000;

	if (r < 600) {
		return 8 * rng_range(&g->rng, 1, 8);       /* 8..64 */
	}
	if (r < 850) {
		return rng_range(&g->rng, 65, 512);
	}
	if (r < 970) {
		return rng_range(&g->rng, 513, 8192);
	}
	if (r < 995) {
		return rng_range(&g->rng, 8193, 256 * 1024);
	}
	return rng_range(&g->rng, 256 * 1024, 16 * 1024 * 1024);
}

/* A heap address: a recently freed one (allocators reuse them LIFO) or
 * fresh memory past the last block, 16-byte aligned. */
static uint64_t gen_heap_addr(struct gen *g, uint64_t size)
{
	uint64_t addr;

	if (g->nreuse && rng_next(&g->rng) % 100 < 60) {
		return g->reuse[--g->nreuse];
	}
	addr = g->brk;
	g->brk += (size + 16 + 15) & ~(uint64_t)15;
	return addr;
}

static void gen_remember(struct gen *g, uint64_t addr, uint64_t size)
{
	size_t i;

	if (g->nlive < LIVE_MAX) {
		i = g->nlive++;
	} else {
		/* full: forget one, as a leak would */
		i = rng_next(&g->rng) % LIVE_MAX;
	}
	g->live[i].addr = addr;
	g->live[i].size = size;
}

/* Takes a random live block out of the table. */
static struct block gen_take(struct gen *g)
{
	size_t i = rng_next(&g->rng) % g->nlive;
	struct block b = g->live[i];

	g->live[i] = g->live[--g->nlive];
	return b;
}

static void gen_forget_addr(struct gen *g, uint64_t addr)
{
	if (g->nreuse < REUSE_MAX) {
		g->reuse[g->nreuse++] = addr;
	}
}

static void gen_init(struct gen *g)
{
	memset(g, 0, sizeof(*g));
	g->rng = 0x6d656d747261636bull; /* "memtrack" */
	g->now = 12345678901234ull;     /* ~3.4 h of uptime */
	g->brk = 0x555555559000ull;     /* a PIE's heap */
	g->mmap_top = 0x7f3a4c000000ull;
}

/*
 * One event. Kinds per mille: 450 Malloc, 450 Free, 50 Realloc, 40 Calloc,
 * 5 Mmap, 5 Munmap (a Free with nothing live becomes a Malloc, and so on,
 * so the proportions are approximate).
 */
static void gen_event(struct gen *g, struct mt_event *ev)
{
	uint64_t r;
	struct block b;

	memset(ev, 0, sizeof(*ev));

	/* Threads run in bursts rather than strictly interleaved. */
	if (rng_next(&g->rng) % 32 == 0) {
		g->thread = (unsigned int)(rng_next(&g->rng) % NTHREADS);
	}
	ev->pid = threads[g->thread].pid;
	ev->tid = threads[g->thread].tid;

	/* Allocator calls come tens to hundreds of ns apart, with pauses. */
	if (rng_next(&g->rng) % 64 == 0) {
		g->now += rng_range(&g->rng, 1000, 50000);
	} else {
		g->now += rng_range(&g->rng, 15, 400);
	}
	ev->timestamp = g->now;

	r = rng_next(&g->rng) % 1000;
	if (r >= 450 && r < 900 && g->nlive) {
		b = gen_take(g);
		ev->kind = MT_EV_FREE;
		ev->addr = b.addr;
		gen_forget_addr(g, b.addr);
	} else if (r >= 900 && r < 950 && g->nlive) {
		b = gen_take(g);
		ev->kind = MT_EV_REALLOC;
		ev->flags = MT_EVF_OLD_ADDR;
		ev->old_addr = b.addr;
		ev->size = gen_size(g);
		if (ev->size <= b.size || rng_next(&g->rng) % 4 == 0) {
			ev->addr = b.addr; /* grown or shrunk in place */
		} else {
			ev->addr = gen_heap_addr(g, ev->size);
			gen_forget_addr(g, b.addr);
		}
		gen_remember(g, ev->addr, ev->size);
	} else if (r >= 990 && r < 995 && g->nmaps < MAPS_MAX) {
		ev->kind = MT_EV_MMAP;
		ev->size = 4096 * rng_range(&g->rng, 16, 4096);
		g->mmap_top -= ev->size;
		ev->addr = g->mmap_top;
		g->maps[g->nmaps].addr = ev->addr;
		g->maps[g->nmaps].size = ev->size;
		g->nmaps++;
	} else if (r >= 995 && g->nmaps) {
		b = g->maps[--g->nmaps];
		ev->kind = MT_EV_MUNMAP;
		ev->addr = b.addr;
		ev->size = b.size;
	} else {
		ev->kind = r >= 950 && r < 990 ? MT_EV_CALLOC : MT_EV_MALLOC;
		ev->size = gen_size(g);
		ev->addr = gen_heap_addr(g, ev->size);
		gen_remember(g, ev->addr, ev->size);
	}
}

static struct mt_event *gen_trace(size_t n)
{
	struct mt_event *events;
	struct gen *g;
	size_t i;

	events = malloc(n * sizeof(*events));
	g = malloc(sizeof(*g));
	if (!events || !g) {
		free(events);
		free(g);
		return NULL;
	}
	gen_init(g);
	for (i = 0; i < n; i++) {
		gen_event(g, &events[i]);
	}
	free(g);
	return events;
}

/* The msgpack bytes of the trace, exactly as the encoder produces them (the
 * same serializer), with the byte offset where each batch ends. */
struct packed {
	uint8_t *buf;
	size_t len;
	size_t *batch_end; /* nbatches offsets */
	size_t nbatches;
};

static void packed_free(struct packed *pk)
{
	free(pk->buf);
	free(pk->batch_end);
	memset(pk, 0, sizeof(*pk));
}

static int pack_trace(const struct mt_event *events, size_t n,
		      struct packed *pk)
{
	size_t cap = n * MT_MSGPACK_EVENT_MAX + MT_MSGPACK_EVENT_MAX;
	size_t i = 0, b, done, stop;

	memset(pk, 0, sizeof(*pk));
	pk->nbatches = (n + BATCH_EVENTS - 1) / BATCH_EVENTS;
	pk->buf = malloc(cap);
	pk->batch_end = calloc(pk->nbatches, sizeof(size_t));
	if (!pk->buf || !pk->batch_end) {
		packed_free(pk);
		return -ENOMEM;
	}
	for (b = 0; b < pk->nbatches; b++) {
		stop = i + BATCH_EVENTS < n ? i + BATCH_EVENTS : n;
		while (i < stop) {
			pk->len += mt_msgpack_pack(pk->buf + pk->len,
						   cap - pk->len, events + i,
						   stop - i, &done);
			if (!done) {
				fprintf(stderr,
					"bench-write: event %zu cannot be packed\n",
					i);
				packed_free(pk);
				return -EINVAL;
			}
			i += done;
		}
		pk->batch_end[b] = pk->len;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* A sink defined here                                                 */
/* ------------------------------------------------------------------ */

/*
 * fd < 0: count and drop (a /dev/null without the syscalls, so that the
 * pipeline is compared with a floor that writes nothing); otherwise write
 * to fd, for --write.
 */
struct bench_sink {
	int fd;
	uint64_t bytes;
};

static int bench_sink_open(const struct mt_host *host, const char *args,
			   void **state)
{
	return -ENOTSUP; /* the bench opens its sink itself */
}

static int bench_sink_write(void *state, const void *data, size_t len)
{
	struct bench_sink *s = state;
	const char *p = data;

	s->bytes += len;
	while (s->fd >= 0 && len) {
		ssize_t w = write(s->fd, p, len);

		if (w < 0) {
			if (errno == EINTR) {
				continue;
			}
			fprintf(stderr, "bench-write: write: %s\n",
				strerror(errno));
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int bench_sink_close(void *state)
{
	struct bench_sink *s = state;
	int fd = s->fd;

	s->fd = -1;
	if (fd >= 0 && close(fd) < 0) {
		return -errno;
	}
	return 0;
}

static const struct mt_sink_ops bench_sink_ops = {
	MT_OPS_HEADER(mt_sink_ops),
	.open = bench_sink_open,
	.write = bench_sink_write,
	.close = bench_sink_close,
};

/* ------------------------------------------------------------------ */
/* Measurements                                                        */
/* ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct sample {
	double secs;
	uint64_t bytes_out;
};

/* What every case may need, made before any timing. */
struct bench_ctx {
	const struct mt_encoder_ops *enc;
	const struct mt_event *events;
	size_t n;
	const struct packed *pk;
	unsigned int workers;
	ZSTD_CCtx *cctx; /* stream case, warm across runs */
	uint8_t *zdst; /* ZSTD_compressBound(pk->len), faulted in */
	size_t zcap;
	uint8_t *scratch; /* pack case: the encoder's chunk buffer */
	void *enc_state;  /* encode case */
};

/*
 * The whole write path for events[0..n): pipeline creation (encoder states,
 * threads) to the last frame handed to the sink, as a source drives it.
 * Creation is counted because a short trace pays it too.
 */
static int run_pipeline(const struct mt_encoder_ops *enc,
			const struct mt_event *events, size_t n,
			unsigned int workers, int fd, struct sample *out)
{
	struct bench_sink sink = { .fd = fd };
	struct mt_pipeline_config cfg = {
		.host = mt_host_get(),
		.encoder = enc,
		.encoder_name = ENCODER_NAME,
		.sink = &bench_sink_ops,
		.sink_state = &sink,
		.workers = workers,
		.batch_events = BATCH_EVENTS,
	};
	struct mt_pipeline_stats st;
	struct mt_pipeline *p;
	struct mt_emitter *em;
	struct mt_event *ev;
	double t0;
	size_t i;
	int rc;

	t0 = now_s();
	rc = mt_pipeline_create(&cfg, &p);
	if (rc < 0) {
		bench_sink_close(&sink);
		return rc;
	}
	em = mt_pipeline_emitter(p);
	for (i = 0; i < n; i++) {
		ev = mt_emit(em);
		if (!ev) {
			break; /* finish() returns the reason */
		}
		*ev = events[i];
	}
	rc = mt_pipeline_finish(p);
	out->secs = now_s() - t0;
	mt_pipeline_get_stats(p, &st);
	mt_pipeline_destroy(p);
	if (rc < 0) {
		fprintf(stderr, "bench-write: pipeline failed: %s\n",
			strerror(-rc));
		return rc;
	}
	if (st.events != n || st.bytes_out != sink.bytes) {
		fprintf(stderr,
			"bench-write: pipeline lost data: %llu of %zu events, %llu of %llu bytes\n",
			(unsigned long long)st.events, n,
			(unsigned long long)st.bytes_out,
			(unsigned long long)sink.bytes);
		return -EIO;
	}
	out->bytes_out = st.bytes_out;
	return 0;
}

/* The floor: plain ZSTD_compress(), which makes and frees its context on
 * every call, as the pipeline makes its encoder states on every run. The
 * destination is made (and faulted in) beforehand: it is the caller's. */
static int compress_once(void *dst, size_t cap, const void *src, size_t len,
			 uint64_t *out)
{
	size_t r = ZSTD_compress(dst, cap, src, len, FLOOR_LEVEL);

	if (ZSTD_isError(r)) {
		fprintf(stderr, "bench-write: ZSTD_compress: %s\n",
			ZSTD_getErrorName(r));
		return -EIO;
	}
	*out = r;
	return 0;
}

static int run_floor(struct bench_ctx *c, struct sample *out)
{
	double t0 = now_s();
	int rc = compress_once(c->zdst, c->zcap, c->pk->buf, c->pk->len,
			       &out->bytes_out);

	out->secs = now_s() - t0;
	return rc;
}

struct par_piece {
	pthread_t thread;
	const uint8_t *src;
	size_t len;
	uint8_t *dst;
	size_t cap;
	uint64_t out;
	int rc;
};

static void *par_main(void *arg)
{
	struct par_piece *pc = arg;

	pc->rc = compress_once(pc->dst, pc->cap, pc->src, pc->len, &pc->out);
	return NULL;
}

/* The floor split in `workers` pieces compressed at once, thread creation
 * included (the pipeline pays it too). The destination is cut in pieces of
 * the whole input's bound, which covers each piece's own bound. */
static int run_floor_par(struct bench_ctx *c, struct sample *out)
{
	struct par_piece pcs[MAX_WORKERS];
	unsigned int w = c->workers, i, started;
	size_t per = (c->pk->len + w - 1) / w, off = 0;
	size_t dper = c->zcap / w;
	double t0;
	int rc = 0;

	memset(pcs, 0, sizeof(pcs));
	for (i = 0; i < w; i++) {
		pcs[i].src = c->pk->buf + off;
		pcs[i].len = off + per <= c->pk->len ? per : c->pk->len - off;
		pcs[i].dst = c->zdst + i * dper;
		pcs[i].cap = dper;
		off += pcs[i].len;
	}
	t0 = now_s();
	for (started = 0; started < w; started++) {
		if (pthread_create(&pcs[started].thread, NULL, par_main,
				   &pcs[started])) {
			rc = -EAGAIN;
			break;
		}
	}
	out->bytes_out = 0;
	for (i = 0; i < started; i++) {
		pthread_join(pcs[i].thread, NULL);
		if (pcs[i].rc < 0) {
			rc = pcs[i].rc;
		}
		out->bytes_out += pcs[i].out;
	}
	out->secs = now_s() - t0;
	return rc;
}

/* The serializer alone, as encode() runs it: into a chunk-sized buffer
 * that stays in cache. */
static int run_pack(struct bench_ctx *c, struct sample *out)
{
	size_t cap = CHUNK_BYTES + MT_MSGPACK_EVENT_MAX;
	size_t i = 0, done;
	uint64_t bytes = 0;
	double t0 = now_s();

	while (i < c->n) {
		bytes += mt_msgpack_pack(c->scratch, cap, c->events + i,
					 c->n - i, &done);
		if (!done) {
			return -EINVAL;
		}
		i += done;
	}
	out->secs = now_s() - t0;
	out->bytes_out = bytes;
	return 0;
}

/* Buffered streaming, the way encode() drives zstd without stable input:
 * per batch a session reset, 64 KiB steps with ZSTD_e_continue, then
 * ZSTD_e_end; but over bytes packed beforehand and into one preallocated
 * buffer. */
static int run_stream(struct bench_ctx *c, struct sample *out)
{
	ZSTD_outBuffer ob = { c->zdst, c->zcap, 0 };
	ZSTD_inBuffer ib;
	size_t b, start = 0, end, step, r;
	double t0 = now_s();

	for (b = 0; b < c->pk->nbatches; b++) {
		end = c->pk->batch_end[b];
		ZSTD_CCtx_reset(c->cctx, ZSTD_reset_session_only);
		while (start < end) {
			step = end - start < CHUNK_BYTES ? end - start :
							   CHUNK_BYTES;
			ib.src = c->pk->buf + start;
			ib.size = step;
			ib.pos = 0;
			while (ib.pos < ib.size) {
				r = ZSTD_compressStream2(c->cctx, &ob, &ib,
							 ZSTD_e_continue);
				if (ZSTD_isError(r)) {
					goto zerror;
				}
			}
			start += step;
		}
		ib.src = NULL;
		ib.size = 0;
		ib.pos = 0;
		do {
			r = ZSTD_compressStream2(c->cctx, &ob, &ib,
						 ZSTD_e_end);
			if (ZSTD_isError(r)) {
				goto zerror;
			}
		} while (r);
	}
	out->secs = now_s() - t0;
	out->bytes_out = ob.pos;
	return 0;
zerror:
	fprintf(stderr, "bench-write: ZSTD_compressStream2: %s\n",
		ZSTD_getErrorName(r));
	return -EIO;
}

/* The plugin's encode() on each batch in turn, frames freed as the writer
 * would: the encoder's whole cost with no pipeline around it. */
static int run_encode(struct bench_ctx *c, struct sample *out)
{
	struct mt_frame frame;
	size_t i, cnt;
	uint64_t bytes = 0;
	double t0 = now_s();
	int rc;

	for (i = 0; i < c->n; i += cnt) {
		cnt = c->n - i < BATCH_EVENTS ? c->n - i : BATCH_EVENTS;
		rc = c->enc->encode(c->enc_state, c->events + i, cnt, &frame);
		if (rc < 0) {
			return rc;
		}
		bytes += frame.len;
		c->enc->frame_free(&frame);
	}
	out->secs = now_s() - t0;
	out->bytes_out = bytes;
	return 0;
}

enum bench_case {
	CASE_FLOOR,
	CASE_FLOOR_PAR,
	CASE_PACK,
	CASE_STREAM,
	CASE_ENCODE,
	CASE_ONE,
	CASE_N,
	CASE_COUNT
};

static const char *const case_names[CASE_COUNT] = {
	[CASE_FLOOR] = "floor", [CASE_FLOOR_PAR] = "floor-par",
	[CASE_PACK] = "pack", [CASE_STREAM] = "stream",
	[CASE_ENCODE] = "encode", [CASE_ONE] = "1", [CASE_N] = "n",
};

static int run_case(struct bench_ctx *c, enum bench_case k,
		    struct sample *out)
{
	switch (k) {
	case CASE_FLOOR:
		return run_floor(c, out);
	case CASE_FLOOR_PAR:
		return run_floor_par(c, out);
	case CASE_PACK:
		return run_pack(c, out);
	case CASE_STREAM:
		return run_stream(c, out);
	case CASE_ENCODE:
		return run_encode(c, out);
	case CASE_ONE:
		return run_pipeline(c->enc, c->events, c->n, 1, -1, out);
	case CASE_N:
		return run_pipeline(c->enc, c->events, c->n, c->workers, -1,
				    out);
	default:
		return -EINVAL;
	}
}

static int cmp_sample(const void *a, const void *b)
{
	double x = ((const struct sample *)a)->secs;
	double y = ((const struct sample *)b)->secs;

	return x < y ? -1 : x > y;
}

struct summary {
	double best;
	double median;
	uint64_t bytes_out;
};

/* best and median of reps samples (sorted in place) */
static void summarize(struct sample *s, unsigned int reps,
		      struct summary *out)
{
	qsort(s, reps, sizeof(*s), cmp_sample);
	out->best = s[0].secs;
	out->median = reps % 2 ? s[reps / 2].secs :
				 (s[reps / 2 - 1].secs + s[reps / 2].secs) / 2;
	out->bytes_out = s[0].bytes_out;
}

struct size_result {
	size_t n;
	size_t msgpack_len;
	bool ran[CASE_COUNT];
	struct summary sum[CASE_COUNT];
};

/* Throughput of case a over case b: > 1 when a is faster. */
static double speed_ratio(const struct size_result *r, enum bench_case a,
			  enum bench_case b)
{
	return r->sum[b].best / r->sum[a].best;
}

static void print_row(const struct size_result *r, enum bench_case c,
		      unsigned int workers)
{
	const struct summary *s = &r->sum[c];
	double secs = s->best;
	char label[32];

	switch (c) {
	case CASE_FLOOR_PAR:
		snprintf(label, sizeof(label), "floor x%u", workers);
		break;
	case CASE_ONE:
		snprintf(label, sizeof(label), "1 worker");
		break;
	case CASE_N:
		snprintf(label, sizeof(label), "%u workers", workers);
		break;
	default:
		snprintf(label, sizeof(label), "%s", case_names[c]);
		break;
	}
	printf("%9zu  %-10s %8.3f %8.3f %7.2f %8.1f %8.1f %6.2f", r->n, label,
	       s->best * 1e3, s->median * 1e3, (double)r->n / secs / 1e6,
	       (double)r->msgpack_len / secs / 1e6,
	       (double)s->bytes_out / secs / 1e6,
	       (double)s->bytes_out / (double)r->n);
	if (c != CASE_FLOOR && r->ran[CASE_FLOOR]) {
		printf(" %7.2f", speed_ratio(r, c, CASE_FLOOR));
	} else {
		printf(" %7s", "");
	}
	if (c == CASE_N && r->ran[CASE_ONE]) {
		printf(" %7.2f", speed_ratio(r, CASE_N, CASE_ONE));
	}
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: bench-write [-r REPS] [-w WORKERS] [-n EVENTS]... [-c CASE]\n"
		"       bench-write --write FILE [EVENTS]\n"
		"  -r REPS     runs per measurement (default 5 from 500K events, else 11)\n"
		"  -w WORKERS  the N of the N-worker case (default: online CPUs)\n"
		"  -n EVENTS   trace size, repeatable, K/M suffixes (default 10K 100K 500K 1M)\n"
		"  -c CASE     only this case, for a profiler: floor, floor-par, pack,\n"
		"              stream, encode, 1 or n; no goal check\n"
		"  --write     encode a synthetic trace of EVENTS (1M) events into FILE\n");
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0) {
		return -EINVAL;
	}
	if (*end == 'K' || *end == 'k') {
		v *= 1000;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		v *= 1000000;
		end++;
	}
	if (*end || v > SIZE_MAX / 256) {
		return -EINVAL;
	}
	*out = (size_t)v;
	return 0;
}

/*
 * Every case runs R times in this process and keeps the best: a steady
 * state, where memory freed by one run is there, faulted in, for the next,
 * as in a long-lived writer. glibc only partly does that on its own: it
 * gives memory back to the kernel once the free top of a heap exceeds a
 * threshold that it moves with the sizes it has seen, so whether a run
 * starts warm depended on each case's allocation sizes (measured: 7 page
 * faults per run for 10K events with 1 worker, 293 with 2 workers, the
 * same bytes written). These two settings keep freed memory for every
 * case alike, the floor's ZSTD_compress() context included.
 */
static void steady_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

/* bench-write lives in bench/, where mt_plugin_load()'s build-tree rule
 * (only for programs at the top of the build tree) does not apply. */
static int load_encoder(struct mt_plugin **plugin)
{
	if (!getenv("MEMTRACK_PLUGIN_PATH")) {
		setenv("MEMTRACK_PLUGIN_PATH", MT_ABS_BUILDDIR "/plugins/.libs",
		       1);
	}
	return mt_plugin_load(MT_PLUGIN_ENCODER, ENCODER_NAME, plugin);
}

static int write_trace(const struct mt_encoder_ops *enc, const char *path,
		       size_t n)
{
	struct mt_event *events = gen_trace(n);
	struct sample s;
	int fd, rc;

	if (!events) {
		fprintf(stderr, "bench-write: out of memory\n");
		return 1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "bench-write: %s: %s\n", path, strerror(errno));
		free(events);
		return 1;
	}
	rc = run_pipeline(enc, events, n, 0, fd, &s);
	free(events);
	if (rc < 0) {
		return 1;
	}
	printf("%s: %zu events, %llu bytes\n", path, n,
	       (unsigned long long)s.bytes_out);
	return 0;
}

static void goal_line(const char *name, double goal,
		      const struct size_result *res, size_t nres,
		      enum bench_case a, enum bench_case b)
{
	char misses[256] = "";
	size_t i, len = 0;
	double r;

	for (i = 0; i < nres; i++) {
		r = speed_ratio(&res[i], a, b);
		if (r < goal && len < sizeof(misses) - 1) {
			len += (size_t)snprintf(misses + len,
						sizeof(misses) - len,
						" %zu (%.2f)", res[i].n, r);
		}
	}
	if (!len) {
		printf("PASS: %s >= %.2f at every size\n", name, goal);
	} else {
		printf("MISS: %s >= %.2f missed at:%s\n", name, goal, misses);
	}
}

/* Measures every case (or only one) on the first n events. */
static int bench_size(struct bench_ctx *c, size_t n, unsigned int reps,
		      int only, struct sample *samples,
		      struct size_result *sr)
{
	struct packed pk;
	unsigned int k, r;
	int rc;

	memset(sr, 0, sizeof(*sr));
	sr->n = n;
	rc = pack_trace(c->events, n, &pk);
	if (rc < 0) {
		return rc;
	}
	c->n = n;
	c->pk = &pk;
	c->zcap = ZSTD_compressBound(pk.len);
	c->zdst = malloc(c->zcap);
	if (!c->zdst) {
		rc = -ENOMEM;
		goto out;
	}
	/* fault the destination in: the floor times compression only */
	memset(c->zdst, 0, c->zcap);
	sr->msgpack_len = pk.len;

	/*
	 * Rounds of every case in turn rather than every run of one case,
	 * then the next: this machine's speed drifts by several percent over
	 * seconds (other guests, frequency), and a ratio is only fair when
	 * both of its cases saw the same drift.
	 */
	for (r = 0; r < reps; r++) {
		for (k = 0; k < CASE_COUNT; k++) {
			if (only >= 0 && (int)k != only) {
				continue;
			}
			rc = run_case(c, (enum bench_case)k,
				      &samples[k * reps + r]);
			if (rc < 0) {
				goto out;
			}
		}
	}
	for (k = 0; k < CASE_COUNT; k++) {
		if (only < 0 || (int)k == only) {
			summarize(samples + k * reps, reps, &sr->sum[k]);
			sr->ran[k] = true;
		}
	}
	for (k = 0; k < CASE_COUNT; k++) {
		if (sr->ran[k]) {
			print_row(sr, (enum bench_case)k, c->workers);
		}
	}
	fflush(stdout);
out:
	free(c->zdst);
	c->zdst = NULL;
	c->pk = NULL;
	packed_free(&pk);
	return rc;
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES], nsizes = 0, i, max_n = 0;
	struct size_result res[MAX_SIZES];
	struct bench_ctx c;
	unsigned int reps = 0, workers = 0, k;
	int only = -1;
	struct mt_plugin *plugin = NULL;
	struct mt_event *events = NULL;
	struct sample *samples = NULL;
	long ncpu;
	int opt, ret = 1;

	if (argc >= 3 && !strcmp(argv[1], "--write")) {
		size_t n = 1000000;

		if (argc > 4 || (argc == 4 && parse_size(argv[3], &n) < 0)) {
			usage(stderr);
			return 2;
		}
		if (load_encoder(&plugin) < 0) {
			return 1;
		}
		ret = write_trace(&plugin->ops.encoder, argv[2], n);
		mt_plugin_close(plugin);
		return ret;
	}

	while ((opt = getopt(argc, argv, "r:w:n:c:h")) != -1) {
		switch (opt) {
		case 'r':
			reps = (unsigned int)atoi(optarg);
			if (reps < 1 || reps > 1000) {
				usage(stderr);
				return 2;
			}
			break;
		case 'w':
			workers = (unsigned int)atoi(optarg);
			if (workers < 1 || workers > MAX_WORKERS) {
				usage(stderr);
				return 2;
			}
			break;
		case 'n':
			if (nsizes == MAX_SIZES ||
			    parse_size(optarg, &sizes[nsizes]) < 0) {
				usage(stderr);
				return 2;
			}
			nsizes++;
			break;
		case 'c':
			for (k = 0; k < CASE_COUNT; k++) {
				if (!strcmp(optarg, case_names[k])) {
					only = (int)k;
				}
			}
			if (only < 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!nsizes) {
		nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
		memcpy(sizes, default_sizes, sizeof(default_sizes));
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (!workers) {
		workers = ncpu < 1 ? 1 : ncpu > MAX_WORKERS ? MAX_WORKERS :
							    (unsigned int)ncpu;
	}
	for (i = 0; i < nsizes; i++) {
		if (sizes[i] > max_n) {
			max_n = sizes[i];
		}
	}

	steady_malloc();
	if (load_encoder(&plugin) < 0) {
		return 1;
	}
	memset(&c, 0, sizeof(c));
	c.enc = &plugin->ops.encoder;
	c.workers = workers;

	/* One trace; the smaller sizes are its prefixes. */
	events = gen_trace(max_n);
	samples = calloc(1000 * CASE_COUNT, sizeof(*samples));
	c.scratch = malloc(CHUNK_BYTES + MT_MSGPACK_EVENT_MAX);
	if (!events || !samples || !c.scratch) {
		fprintf(stderr, "bench-write: out of memory\n");
		goto out;
	}
	c.events = events;
	/* the streaming API's level, as the encoder sets it */
	c.cctx = ZSTD_createCCtx();
	if (!c.cctx || ZSTD_isError(ZSTD_CCtx_setParameter(c.cctx,
						ZSTD_c_compressionLevel,
						FLOOR_LEVEL))) {
		fprintf(stderr, "bench-write: out of memory\n");
		goto out;
	}
	if (c.enc->create(mt_host_get(), NULL, &c.enc_state) < 0) {
		goto out;
	}

	printf("bench-write: %s encoder (%s), zstd %s, level %d, %d events per batch\n"
	       "N = %u workers, %ld online CPU(s); times: best and median of R runs,\n"
	       "rates from the best, MB = 10^6 bytes, \"in\" = msgpack bytes;\n"
	       "x floor, x 1w: speed relative to the floor and to 1 worker\n\n",
	       ENCODER_NAME, plugin->path, ZSTD_versionString(), FLOOR_LEVEL,
	       BATCH_EVENTS, workers, ncpu);
	printf("%9s  %-10s %8s %8s %7s %8s %8s %6s %7s %7s\n", "events",
	       "case", "best ms", "med ms", "Mev/s", "MB/s in", "MB/s out",
	       "B/ev", "x floor", "x 1w");

	for (i = 0; i < nsizes; i++) {
		unsigned int nrep = reps ? reps : sizes[i] >= 500000 ? 5 : 11;

		if (bench_size(&c, sizes[i], nrep, only, samples, &res[i]) < 0) {
			goto out;
		}
		if (i + 1 < nsizes) {
			printf("\n");
		}
	}

	ret = 0;
	if (only < 0) {
		char name[64];

		printf("\n");
		goal_line("1 worker / floor", GOAL_ONE_VS_FLOOR, res, nsizes,
			  CASE_ONE, CASE_FLOOR);
		snprintf(name, sizeof(name), "%u workers / 1 worker", workers);
		goal_line(name, GOAL_N_VS_ONE, res, nsizes, CASE_N, CASE_ONE);
	}
out:
	if (c.enc_state) {
		c.enc->destroy(c.enc_state);
	}
	ZSTD_freeCCtx(c.cctx);
	free(c.scratch);
	free(samples);
	free(events);
	mt_plugin_close(plugin);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * encoder.c - the msgpack-zstd encoder plugin: events -> MessagePack maps ->
 * one zstd frame per batch (several for a large one, see below),
 * byte-compatible with the CodSpeed memtrack artifact format
 * (tests/fixtures/codspeed-format/README.md).
 *
 * Args: NULL, "" or "level=N" (zstd level, negative allowed, default
 * MZ_DEFAULT_LEVEL).
 *
 * Speed: zstd's streaming API copies every input byte into its own window
 * buffer before compressing it; that copy cost ~15% of the encoder's time.
 * So the batch is serialized into one per-state buffer (kept across calls)
 * that zstd reads in place (ZSTD_c_stableInBuffer): MZ_CHUNK bytes are
 * serialized at a time and the buffer is handed to zstd grown by that much
 * while the new bytes are still in cache; zstd compresses whole blocks
 * straight from it into the frame buffer, which is sized with
 * ZSTD_compressBound so that it never goes through zstd's own output
 * buffer either. Where zstd refuses the parameter, the chunks go through a
 * buffered stream as before (also taken when the environment has
 * MEMTRACK_MSGPACK_ZSTD_NO_STABLE set, for tests and comparisons).
 *
 * zstd holds on to every byte of a stable input until its frame ends, so
 * one frame per batch would need the batch's whole msgpack in the buffer:
 * ~4 MiB for 65,536 events, more than a core's L2 (2 MiB here), written
 * over cold lines for every batch. Instead a zstd frame ends at the first
 * event boundary past st->split, a window and a half of msgpack (768 KiB
 * at levels -5 and 1), and the next one starts over at the top of the
 * buffer, still in cache. The buffer stays under 1 MiB whatever the
 * batch; a batch is one or more zstd frames, all in its mt_frame (readers
 * take concatenated frames as one stream). Matches never reach back further
 * than a window anyway, so the output does not grow (bench-write, 100,000
 * events: 10.86 -> 10.83 bytes each), and encoding them takes 10.6 ms
 * instead of 11.0.
 *
 * Compatibility: every chunk goes in with ZSTD_e_continue and the frame is
 * closed by a separate ZSTD_e_end without new input, which is what the
 * reference's streaming writer does. (A first call with ZSTD_e_end would let
 * zstd take the single-pass shortcut: content size in the header and
 * parameters tuned to the size, i.e. different bytes.) zstd buffers input to
 * whole blocks, so the chunking does not change the output. A stable-input
 * stream does the same once a whole block (ZSTD_BLOCKSIZE_MAX) is there, but
 * a frame smaller than that would be started by the e_end, with the content
 * size: such batches (the 126-event golden frame among them) go through the
 * buffered stream (the same context, switched to buffered input between
 * frames: input_mode()). From one zstd window up (512 KiB at levels -5
 * and 1) the two streams may pick different matches, so the compressed
 * bytes of a large frame can differ from the reference writer's; its
 * msgpack bytes never do.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "msgpack.h"

/* msgpack bytes per compression step: with zstd's own 128 KiB block buffer
 * and level 1 tables this stays within L2. */
#define MZ_CHUNK (64 * 1024)

#define MZ_SKIPPABLE_MAGIC 0x184D2A50u

/*
 * The CodSpeed runner's own writer compresses at -5 (COMPRESSION_LEVEL in
 * crates/runner-shared/src/artifacts/memtrack/writer.rs, since 2026-07),
 * so by default a file costs what the reference's does. Measured here
 * with one worker (README, "The encoder's level"): on a heap-shaped trace
 * -5 encodes in 3/4 of level 1's time into a file 1.5 times as large; on
 * a tight malloc/free loop, in the same time into 3 times the bytes. Any
 * level decodes to the same msgpack bytes.
 */
#define MZ_DEFAULT_LEVEL (-5)

static int parse_args(struct mz_state *st, const char *args)
{
	const char *p = args;

	st->level = MZ_DEFAULT_LEVEL;
	if (!args) {
		return 0;
	}
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len >= 6 && !strncmp(p, "level=", 6)) {
			char num[32], *stop;
			long v;

			if (len - 6 >= sizeof(num)) {
				goto bad_level;
			}
			memcpy(num, p + 6, len - 6);
			num[len - 6] = '\0';
			errno = 0;
			v = strtol(num, &stop, 10);
			if (errno || *stop || stop == num ||
			    v < ZSTD_minCLevel() || v > ZSTD_maxCLevel()) {
				goto bad_level;
			}
			st->level = (int)v;
		} else if (len > 0) {
			mz_log(st, MT_LOG_ERROR,
			       "unknown option \"%.*s\" (known: level=N)",
			       (int)len, p);
			return -EINVAL;
		}
		p += len;
		if (*p == ',') {
			p++;
		}
		continue;
bad_level:
		mz_log(st, MT_LOG_ERROR,
		       "bad option \"%.*s\": level must be an integer from %d to %d",
		       (int)len, p, ZSTD_minCLevel(), ZSTD_maxCLevel());
		return -EINVAL;
	}
	return 0;
}

/*
 * The state's big buffers come from malloc: only what a batch writes is
 * ever touched (zstd writes ~1/10 of the output bound, the msgpack ~1/2 of
 * its worst case), and memory the allocator keeps comes back warm. (Huge
 * pages advised with MADV_HUGEPAGE were tried: a first touch could stall
 * for milliseconds in compaction, and a short trace zeroed 2 MiB for the
 * 100 KiB it wrote.) The old content is dead when a buffer grows, so it
 * is replaced, not copied.
 */
static int big_reserve(uint8_t **buf, size_t *cap, size_t want)
{
	if (*cap >= want) {
		return 0;
	}
	free(*buf);
	*cap = 0;
	*buf = malloc(want);
	if (!*buf) {
		return -ENOMEM;
	}
	*cap = want;
	return 0;
}

static void mz_destroy(void *state)
{
	struct mz_state *st = state;

	if (!st) {
		return;
	}
	ZSTD_freeCCtx(st->cctx);
	free(st->scratch);
	free(st->batch);
	free(st->out);
	free(st);
}

static int mz_create(const struct mt_host *host, const char *args,
		     void **state)
{
	struct mz_state *st;
	int ret;

	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	/* the level is checked against zstd's range here; the context
	 * comes with the first frame */
	ret = parse_args(st, args);
	if (ret < 0) {
		mz_destroy(st);
		return ret;
	}
#ifdef ZSTD_c_stableInBuffer
	/* for tests and comparisons, the environment can ask for the
	 * buffered path whatever zstd has (read now, not when the context
	 * is made) */
	st->stable_ok = getenv("MEMTRACK_MSGPACK_ZSTD_NO_STABLE") == NULL;
#endif
	/* a window and a half: see the top of the file */
	st->split = (size_t)3
		    << (ZSTD_getCParams(st->level, 0, 0).windowLog - 1);
	*state = st;
	return 0;
}

/*
 * The state's one zstd context, made on first use (ZSTD_createCCtx() costs
 * ~12 us in a VM: zstd runs CPUID, which traps) and again after a frame
 * was abandoned half-way. NULL after logging why not.
 */
static ZSTD_CCtx *get_cctx(struct mz_state *st)
{
	size_t zr;

	if (st->cctx && !st->cctx_stale) {
		return st->cctx;
	}
	ZSTD_freeCCtx(st->cctx);
	st->in_stable = 0;
	st->cctx_stale = 0;
	st->cctx = ZSTD_createCCtx();
	if (!st->cctx) {
		mz_log(st, MT_LOG_ERROR, "cannot make a zstd context: %s",
		       strerror(ENOMEM));
		return NULL;
	}
	zr = ZSTD_CCtx_setParameter(st->cctx, ZSTD_c_compressionLevel,
				    st->level);
	if (ZSTD_isError(zr)) {
		mz_log(st, MT_LOG_ERROR, "cannot set zstd level %d: %s",
		       st->level, ZSTD_getErrorName(zr));
		ZSTD_freeCCtx(st->cctx);
		st->cctx = NULL;
	}
	return st->cctx;
}

/*
 * Between two frames, switch the context to stable input (which zstd
 * reads in place) or back to buffered input (which it copies into its
 * window). One context does both: a second one cost another CPUID trap
 * and ~1 MiB of workspace per state, for the small frames alone. Returns
 * 0, or -1 when this libzstd refuses stable input: st->stable_ok is then
 * cleared, for good.
 */
static int input_mode(struct mz_state *st, int stable)
{
#ifdef ZSTD_c_stableInBuffer
	size_t zr;

	if (st->in_stable == stable) {
		return 0;
	}
	zr = ZSTD_CCtx_setParameter(st->cctx, ZSTD_c_stableInBuffer, stable);
	if (ZSTD_isError(zr)) {
		mz_log(st, MT_LOG_DEBUG,
		       "zstd refuses stable input (%s): buffered streaming",
		       ZSTD_getErrorName(zr));
		st->stable_ok = 0;
		return -1;
	}
	st->in_stable = stable;
	return 0;
#else
	return stable ? -1 : 0;
#endif
}

/* Run one zstd step to completion: all input consumed (continue) or the
 * frame finished (end). The output buffer holds ZSTD_compressBound of the
 * whole frame, so running out of it is a bug, reported as -EIO. */
static int compress_step(struct mz_state *st, ZSTD_CCtx *cctx,
			 ZSTD_outBuffer *ob, ZSTD_inBuffer *ib,
			 ZSTD_EndDirective mode)
{
	size_t r;

	for (;;) {
		size_t before_in = ib->pos, before_out = ob->pos;

		r = ZSTD_compressStream2(cctx, ob, ib, mode);
		if (ZSTD_isError(r)) {
			mz_log(st, MT_LOG_ERROR, "zstd compression failed: %s",
			       ZSTD_getErrorName(r));
			return -EIO;
		}
		if (mode == ZSTD_e_end ? r == 0 : ib->pos == ib->size) {
			return 0;
		}
		if (ib->pos == before_in && ob->pos == before_out) {
			mz_log(st, MT_LOG_ERROR,
			       "zstd made no progress (output buffer of %zu bytes full)",
			       ob->size);
			return -EIO;
		}
	}
}

/* The state's output buffer holds at least bound bytes. */
static int reserve_out(struct mz_state *st, size_t bound)
{
	return big_reserve(&st->out, &st->out_cap, bound);
}

/* The state's batch buffer holds at least cap bytes. */
static int reserve_batch(struct mz_state *st, size_t cap)
{
	return big_reserve(&st->batch, &st->batch_cap, cap);
}

static int bad_kind(struct mz_state *st, const struct mt_event *events,
		    size_t i)
{
	mz_log(st, MT_LOG_ERROR, "event %zu of the batch has unknown kind %u",
	       i, events[i].kind);
	return -EINVAL;
}

/*
 * The buffered stream: MZ_CHUNK bytes of msgpack at a time through
 * st->scratch, which zstd copies into its window. Where stable input is
 * not to be had.
 */
static int encode_chunked(struct mz_state *st, const struct mt_event *events,
			  size_t count, ZSTD_outBuffer *ob)
{
	ZSTD_CCtx *cctx = st->cctx;
	ZSTD_inBuffer ib;
	size_t i = 0, n, done;
	int ret;

	input_mode(st, 0);
	if (!st->scratch) {
		/* first use */
		st->scratch = malloc(MZ_CHUNK + MT_MSGPACK_EVENT_MAX);
		if (!st->scratch) {
			return -ENOMEM;
		}
		st->scratch_cap = MZ_CHUNK + MT_MSGPACK_EVENT_MAX;
	}
	st->raw_len = 0;
	while (i < count) {
		n = mt_msgpack_pack(st->scratch, st->scratch_cap, events + i,
				    count - i, &done);
		if (done == 0) {
			/* the scratch always fits one event: bad kind */
			return bad_kind(st, events, i);
		}
		i += done;
		st->raw_len += n;
		ib.src = st->scratch;
		ib.size = n;
		ib.pos = 0;
		ret = compress_step(st, cctx, ob, &ib, ZSTD_e_continue);
		if (ret < 0) {
			return ret;
		}
	}
	ib.src = NULL;
	ib.size = 0;
	ib.pos = 0;
	return compress_step(st, cctx, ob, &ib, ZSTD_e_end);
}

/*
 * Stable input: the batch is serialized MZ_CHUNK bytes at a time into
 * st->batch, and zstd sees the buffer grow and reads it in place. zstd is
 * only called once a whole block is there (see the top of the file); a
 * batch that never gets there goes through the buffered stream, from the
 * same buffer.
 */
static int encode_stable(struct mz_state *st, const struct mt_event *events,
			 size_t count, ZSTD_outBuffer *ob)
{
	ZSTD_inBuffer ib;
	size_t i = 0, len = 0, n, done, cap, want;
	int ret, started = 0, ended = 0;

	/* every event fits whatever the others took: no regrowing (zstd
	 * holds on to the buffer's address until the frame ends); a frame
	 * ends at the first event boundary past st->split */
	want = count * MT_MSGPACK_RECORD_MAX + MT_MSGPACK_EVENT_MAX;
	if (want > st->split + MZ_CHUNK + MT_MSGPACK_EVENT_MAX) {
		want = st->split + MZ_CHUNK + MT_MSGPACK_EVENT_MAX;
	}
	ret = reserve_batch(st, want);
	if (ret < 0) {
		return ret;
	}
	ib.src = st->batch;
	ib.size = 0;
	ib.pos = 0;
	while (i < count) {
		cap = st->batch_cap - len;
		if (cap > MZ_CHUNK + MT_MSGPACK_EVENT_MAX) {
			cap = MZ_CHUNK + MT_MSGPACK_EVENT_MAX;
		}
		n = mt_msgpack_pack(st->batch + len, cap, events + i, count - i,
				    &done);
		if (done == 0) {
			/* cap always fits one more event: bad kind */
			ret = bad_kind(st, events, i);
			goto fail;
		}
		i += done;
		len += n;
		st->raw_len += n;
		if (len < ZSTD_BLOCKSIZE_MAX) {
			continue;
		}
		started = 1;
		ib.size = len;
		ret = compress_step(st, st->cctx, ob, &ib, ZSTD_e_continue);
		if (ret < 0) {
			goto fail;
		}
		if (len >= st->split && i < count) {
			/* this frame is done: the next starts over at the
			 * top of the buffer, which is still in cache */
			ret = compress_step(st, st->cctx, ob, &ib,
					    ZSTD_e_end);
			if (ret < 0) {
				goto fail;
			}
			ZSTD_CCtx_reset(st->cctx, ZSTD_reset_session_only);
			ended = 1;
			started = 0;
			len = 0;
			ib.size = 0;
			ib.pos = 0;
		}
	}
	if (!started && ended) {
		/* a last frame under a block: zstd compresses it in one
		 * pass, with its content size (the reference writer has no
		 * such frame: nothing to match byte for byte) */
		ib.size = len;
	} else if (!started) {
		/* as encode_chunked would (an empty batch has no continue:
		 * that frame is empty with a content size of 0) */
		input_mode(st, 0);
		ib.size = len;
		ret = len ? compress_step(st, st->cctx, ob, &ib,
					  ZSTD_e_continue) : 0;
		if (ret < 0) {
			return ret;
		}
		ib.src = NULL;
		ib.size = 0;
		ib.pos = 0;
		return compress_step(st, st->cctx, ob, &ib, ZSTD_e_end);
	}
	/* no new input: the rest of the last block, and the epilogue */
	ret = compress_step(st, st->cctx, ob, &ib, ZSTD_e_end);
fail:
	/*
	 * zstd 1.5.4's ZSTD_CCtx_reset() leaves a stable-input stream's
	 * count of pending bytes behind: a frame abandoned half-way would
	 * make the next one read through stale offsets (it crashes). A new
	 * context is the sure way; failures are rare.
	 */
	if (ret < 0 && (started || ended)) {
		st->cctx_stale = 1;
	}
	return ret;
}

static int mz_encode(void *state, const struct mt_event *events, size_t count,
		     struct mt_frame *out)
{
	struct mz_state *st = state;
	ZSTD_outBuffer ob;
	size_t bound;
	int ret;

	out->data = NULL;
	out->len = 0;
	st->raw_len = 0;
	if (count > (SIZE_MAX / 2) / MT_MSGPACK_RECORD_MAX) {
		mz_log(st, MT_LOG_ERROR, "batch of %zu events is too large",
		       count);
		return -E2BIG;
	}
	/*
	 * zstd compresses straight into the output only when it has
	 * ZSTD_compressBound room; a fresh buffer of that size per frame
	 * would cost page faults on every call, so the state keeps one and
	 * the frame gets an exact copy (level -5 output is ~1/4 of the
	 * input or less, level 1 ~1/6).
	 */
	bound = ZSTD_compressBound(count * MT_MSGPACK_RECORD_MAX);
	ret = reserve_out(st, bound);
	if (ret < 0) {
		return ret;
	}
	ob.dst = st->out;
	ob.size = bound;
	ob.pos = 0;
	if (!get_cctx(st)) {
		return -ENOMEM; /* tried again next time */
	}
	/* a previous encode() may have failed half-way (buffered input;
	 * a stable frame left half-way made the context stale) */
	ZSTD_CCtx_reset(st->cctx, ZSTD_reset_session_only);
	if (st->stable_ok && input_mode(st, 1) == 0) {
		ret = encode_stable(st, events, count, &ob);
	} else {
		ret = encode_chunked(st, events, count, &ob);
	}
	if (ret < 0) {
		return ret;
	}

	out->data = malloc(ob.pos);
	if (!out->data) {
		return -ENOMEM;
	}
	memcpy(out->data, ob.dst, ob.pos);
	out->len = ob.pos;
	out->raw_len = st->raw_len;
	return 0;
}

static void mz_frame_free(struct mt_frame *frame)
{
	if (!frame) {
		return;
	}
	free(frame->data);
	frame->data = NULL;
	frame->len = 0;
}

/* A zstd skippable frame: readers of the format skip it, ours reports it. */
static int mz_encode_meta(void *state, unsigned int variant, const void *data,
			  size_t len, struct mt_frame *out)
{
	struct mz_state *st = state;
	uint32_t magic = MZ_SKIPPABLE_MAGIC + variant;
	uint8_t *buf;

	out->data = NULL;
	out->len = 0;
	if (variant > 15) {
		mz_log(st, MT_LOG_ERROR,
		       "skippable frame variant %u is not in 0..15", variant);
		return -EINVAL;
	}
	if (len > UINT32_MAX) {
		mz_log(st, MT_LOG_ERROR,
		       "metadata of %zu bytes exceeds a skippable frame's 4 GiB",
		       len);
		return -E2BIG;
	}
	buf = malloc(8 + len);
	if (!buf) {
		return -ENOMEM;
	}
	/* both fields little-endian, whatever the host's byte order */
	buf[0] = (uint8_t)magic;
	buf[1] = (uint8_t)(magic >> 8);
	buf[2] = (uint8_t)(magic >> 16);
	buf[3] = (uint8_t)(magic >> 24);
	buf[4] = (uint8_t)len;
	buf[5] = (uint8_t)(len >> 8);
	buf[6] = (uint8_t)(len >> 16);
	buf[7] = (uint8_t)(len >> 24);
	if (len) {
		memcpy(buf + 8, data, len);
	}
	out->data = buf;
	out->len = 8 + len;
	return 0;
}

static const struct mt_encoder_ops mz_ops = {
	MT_OPS_HEADER(mt_encoder_ops),
	.create = mz_create,
	.encode = mz_encode,
	.frame_free = mz_frame_free,
	.encode_meta = mz_encode_meta,
	.destroy = mz_destroy,
	.decode = mz_decode,
};

static const struct mt_plugin_desc mz_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_ENCODER,
	.name = MZ_NAME,
	.description = "CodSpeed memtrack format: MessagePack maps in zstd frames",
	.version = PACKAGE_VERSION,
	.ops.encoder = &mz_ops,
};

MT_PLUGIN_DEFINE(mz_desc)

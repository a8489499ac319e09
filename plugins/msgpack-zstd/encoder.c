/* SPDX-License-Identifier: MIT */
/*
 * encoder.c - the msgpack-zstd encoder plugin: events -> MessagePack maps ->
 * one zstd frame per batch, byte-compatible with the CodSpeed memtrack
 * artifact format (tests/fixtures/codspeed-format/README.md).
 *
 * Args: NULL, "" or "level=N" (zstd level, negative allowed, default 1).
 *
 * Speed: the events are serialized MZ_CHUNK bytes at a time into a per-state
 * scratch buffer and handed to zstd while still in cache; zstd compresses
 * straight into the frame buffer, which is sized with ZSTD_compressBound so
 * that it never goes through its own output buffer.
 *
 * Compatibility: every chunk goes in with ZSTD_e_continue and the frame is
 * closed by a separate ZSTD_e_end without input, which is what the
 * reference's streaming writer does. (A first call with ZSTD_e_end would let
 * zstd take the single-pass shortcut: content size in the header and
 * parameters tuned to the size, i.e. different bytes.) zstd buffers input to
 * whole blocks, so the chunking does not change the output.
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

static int parse_args(struct mz_state *st, const char *args)
{
	const char *p = args;

	st->level = 1;
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

static void mz_destroy(void *state)
{
	struct mz_state *st = state;

	if (!st) {
		return;
	}
	ZSTD_freeCCtx(st->cctx);
	free(st->scratch);
	free(st->out);
	free(st);
}

static int mz_create(const struct mt_host *host, const char *args,
		     void **state)
{
	struct mz_state *st;
	size_t zr;
	int ret;

	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	ret = parse_args(st, args);
	if (ret < 0) {
		goto error;
	}
	st->cctx = ZSTD_createCCtx();
	st->scratch_cap = MZ_CHUNK + MT_MSGPACK_EVENT_MAX;
	st->scratch = malloc(st->scratch_cap);
	if (!st->cctx || !st->scratch) {
		ret = -ENOMEM;
		goto error;
	}
	zr = ZSTD_CCtx_setParameter(st->cctx, ZSTD_c_compressionLevel,
				    st->level);
	if (ZSTD_isError(zr)) {
		mz_log(st, MT_LOG_ERROR, "cannot set zstd level %d: %s",
		       st->level, ZSTD_getErrorName(zr));
		ret = -EINVAL;
		goto error;
	}
	*state = st;
	return 0;
error:
	mz_destroy(st);
	return ret;
}

/* Run one zstd step to completion: all input consumed (continue) or the
 * frame finished (end). The output buffer holds ZSTD_compressBound of the
 * whole frame, so running out of it is a bug, reported as -EIO. */
static int compress_step(struct mz_state *st, ZSTD_outBuffer *ob,
			 ZSTD_inBuffer *ib, ZSTD_EndDirective mode)
{
	size_t r;

	for (;;) {
		size_t before_in = ib->pos, before_out = ob->pos;

		r = ZSTD_compressStream2(st->cctx, ob, ib, mode);
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
	void *bigger;

	if (st->out_cap >= bound) {
		return 0;
	}
	/* no realloc: the old content is dead, copying it is waste */
	free(st->out);
	st->out_cap = 0;
	bigger = malloc(bound);
	if (!bigger) {
		st->out = NULL;
		return -ENOMEM;
	}
	st->out = bigger;
	st->out_cap = bound;
	return 0;
}

static int mz_encode(void *state, const struct mt_event *events, size_t count,
		     struct mt_frame *out)
{
	struct mz_state *st = state;
	ZSTD_outBuffer ob;
	ZSTD_inBuffer ib;
	size_t i = 0, n, done, bound;
	int ret;

	out->data = NULL;
	out->len = 0;
	if (count > (SIZE_MAX / 2) / MT_MSGPACK_RECORD_MAX) {
		mz_log(st, MT_LOG_ERROR, "batch of %zu events is too large",
		       count);
		return -E2BIG;
	}
	/*
	 * zstd compresses straight into the output only when it has
	 * ZSTD_compressBound room; a fresh buffer of that size per frame
	 * would cost page faults on every call, so the state keeps one and
	 * the frame gets an exact copy (level 1 output is ~1/5 of the input).
	 */
	bound = ZSTD_compressBound(count * MT_MSGPACK_RECORD_MAX);
	ret = reserve_out(st, bound);
	if (ret < 0) {
		return ret;
	}
	ob.dst = st->out;
	ob.size = bound;
	ob.pos = 0;
	/* a previous encode() may have failed half-way */
	ZSTD_CCtx_reset(st->cctx, ZSTD_reset_session_only);

	while (i < count) {
		n = mt_msgpack_pack(st->scratch, st->scratch_cap, events + i,
				    count - i, &done);
		if (done == 0) {
			/* the scratch always fits one event: bad kind */
			mz_log(st, MT_LOG_ERROR,
			       "event %zu of the batch has unknown kind %u",
			       i, events[i].kind);
			return -EINVAL;
		}
		i += done;
		ib.src = st->scratch;
		ib.size = n;
		ib.pos = 0;
		ret = compress_step(st, &ob, &ib, ZSTD_e_continue);
		if (ret < 0) {
			return ret;
		}
	}
	ib.src = NULL;
	ib.size = 0;
	ib.pos = 0;
	ret = compress_step(st, &ob, &ib, ZSTD_e_end);
	if (ret < 0) {
		return ret;
	}

	out->data = malloc(ob.pos);
	if (!out->data) {
		return -ENOMEM;
	}
	memcpy(out->data, ob.dst, ob.pos);
	out->len = ob.pos;
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

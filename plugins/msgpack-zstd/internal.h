/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what encoder.c and decoder.c of the msgpack-zstd plugin
 * share. Not installed, not exported from the .so.
 */
#ifndef MT_MSGPACK_ZSTD_INTERNAL_H
#define MT_MSGPACK_ZSTD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
/* ZSTD_c_stableInBuffer (encoder.c) is in zstd's experimental section */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <memtrack/plugin.h>

#define MZ_NAME "msgpack-zstd"

/*
 * One state per worker, used by one thread at a time (see mt_encoder_ops):
 * nothing in it is shared, so encode() needs no lock. decode() only
 * borrows host and allocates the rest per call.
 */
struct mz_state {
	const struct mt_host *host;
	int level;
	ZSTD_CCtx *cctx;    /* made on first use (encoder.c: get_cctx()) */
	int cctx_stale;     /* left mid-frame with stable input: remake it */
	int in_stable;      /* cctx takes stable input (ZSTD_c_stableInBuffer)
			     * now, else buffered */
	int stable_ok;      /* stable input for large batches: this libzstd
			     * has it and MEMTRACK_MSGPACK_ZSTD_NO_STABLE was
			     * not set at create */
	size_t split;       /* stable path: msgpack bytes after which a zstd
			     * frame ends (at the next event boundary) */
	size_t raw_len;     /* msgpack bytes of the frame being encoded */
	uint8_t *scratch;   /* fallback: msgpack of the chunk being compressed */
	size_t scratch_cap; /* bytes, including the writer's slack */
	uint8_t *batch;     /* stable path: msgpack of the whole batch */
	size_t batch_cap;   /* bytes, including the writer's slack */
	uint8_t *out;       /* compressed frame before its exact copy */
	size_t out_cap;
};

/* host->log when the host provides one; plugin name added here. */
#define mz_log(st, lvl, ...)                                             \
	do {                                                             \
		const struct mt_host *h_ = (st) ? (st)->host : NULL;     \
		if (h_ && h_->log) {                                     \
			h_->log(h_, (lvl), MZ_NAME, __VA_ARGS__);        \
		}                                                        \
	} while (0)

/* decoder.c: mt_encoder_ops.decode */
int mz_decode(void *state, int fd, const char *name, mt_event_cb on_events,
	      mt_meta_cb on_meta, void *ctx);

#endif /* MT_MSGPACK_ZSTD_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/meta.h - metadata records (MTKT stacks, MTKM
 * mappings) put back together from their chunks in the event ring: the
 * consumer's reassembly (meta.c, whose opening comment has the protocol
 * and its invariants). The chunk codec both sides use is ../meta-chunk.h.
 */
#ifndef MT_PRELOAD_META_H
#define MT_PRELOAD_META_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "meta-chunk.h"

/*
 * The bounds of reassembly (meta.c says why these values). Whatever the
 * traced processes write, memtrack holds at most PL_META_INFLIGHT_MAX
 * records in progress and PL_META_INFLIGHT_BYTES of their data, and each
 * chunk costs O(1).
 */
#define PL_META_RECORD_MAX (16u << 20)     /* bytes of one record */
#define PL_META_INFLIGHT_MAX 16384u        /* records in progress */
#define PL_META_INFLIGHT_BYTES (64u << 20) /* their buffers, in all */

/* What reassembly did, for the source's summary and --stats. Each chunk
 * or record dropped is counted once, under one reason. */
struct pl_meta_stats {
	uint64_t records;     /* records handed to em->meta() */
	/* chunks dropped */
	uint64_t orphans;     /* no record of their id in progress (its
			       * start was lost, or the record dropped) */
	uint64_t malformed;   /* a length pl_meta_cut() never writes (0,
			       * over PL_META_CHUNK, or short and not LAST);
			       * the record it was part of is dropped too */
	/* records dropped before their end */
	uint64_t reused;      /* their id began again */
	uint64_t oversized;   /* longer than PL_META_RECORD_MAX */
	uint64_t evicted;     /* the oldest, to stay within the bounds */
	/* now */
	uint64_t in_progress; /* records being reassembled */
	uint64_t bytes;       /* what their buffers take */
};

struct pl_meta_part; /* a record being reassembled */

/* Zeroed before first use; nothing is allocated before a record of more
 * than one chunk arrives. */
struct pl_meta_rx {
	struct pl_meta_part *parts; /* pool, linked by index */
	uint32_t *buckets;          /* id hash -> first part, by index */
	uint32_t npool;             /* parts allocated */
	uint32_t free;              /* free list, by index */
	uint32_t oldest, newest;    /* records in progress, by age */
	uint64_t seed;              /* the hash's key: ids are hostile */
	int unsupported;            /* the encoder refused metadata: said once */
	struct pl_meta_stats st;
};

/*
 * Take the chunk in slot (its kind is PL_META_KIND); when it completes a
 * record, hand the record to em->meta(). A chunk that breaks the
 * protocol is dropped and counted (pl_meta_get_stats), never an error.
 * Returns 0, or a negative errno from the emitter or from memtrack's own
 * allocations (-ENOMEM; -ENOTSUP from the emitter is not an error: it is
 * said once through log and the record dropped). log may be NULL.
 */
int pl_meta_take(struct pl_meta_rx *rx, const struct mt_event *slot,
		 struct mt_emitter *em,
		 void (*log)(void *ctx, const char *msg), void *ctx);

/* The counters so far, and the records in progress now. Any thread that
 * excludes pl_meta_take() (the source's, after the poller stopped). */
void pl_meta_get_stats(const struct pl_meta_rx *rx,
		       struct pl_meta_stats *out);

/*
 * Chunks and records dropped so far: orphans + malformed + reused +
 * oversized + evicted. Not 0 means some stack or mapping record is
 * missing from the recording: a process of the traced tree wrote what the
 * protocol does not allow, or (evicted only, in a tree that lost more
 * than PL_META_INFLIGHT_MAX writers halfway) records of dead writers
 * were let go.
 */
uint64_t pl_meta_dropped(const struct pl_meta_rx *rx);

/* Free the records left incomplete (their writer died) and the tables.
 * Returns how many records there were. */
size_t pl_meta_rx_free(struct pl_meta_rx *rx);

#endif /* MT_PRELOAD_META_H */

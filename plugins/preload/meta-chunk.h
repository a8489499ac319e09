/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/meta-chunk.h - a metadata record (MTKT stacks, MTKM
 * mappings, notices, hellos) as chunks of the event ring (shm.h,
 * PL_META_*): the codec both sides use. The interposer cuts and packs
 * (interposer/interpose.c, interpose-stacks.c), the source unpacks and
 * puts records back together (source/meta.c, whose opening comment has
 * the protocol and its invariants).
 */
#ifndef MT_PRELOAD_META_CHUNK_H
#define MT_PRELOAD_META_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <memtrack/event.h>

#include "shm.h"

/* Fill ev as chunk `flags` of record id with len (<= PL_META_CHUNK)
 * bytes of data. Async-signal-safe. */
static inline void pl_meta_pack(struct mt_event *ev, uint32_t id,
				unsigned flags, const void *data, size_t len)
{
	memset(ev, 0, sizeof(*ev));
	memcpy(ev, data, len < 40 ? len : 40);
	if (len > 40) {
		memcpy(&ev->reserved[1], (const char *)data + 40, len - 40);
	}
	ev->kind = PL_META_KIND;
	ev->flags = (uint8_t)flags;
	ev->reserved0 = (uint16_t)len;
	ev->stack_id = id;
}

/* The data of a chunk into out (PL_META_CHUNK bytes of room); returns
 * its length. */
static inline size_t pl_meta_unpack(const struct mt_event *ev, void *out)
{
	size_t len = ev->reserved0 > PL_META_CHUNK ? PL_META_CHUNK :
						     ev->reserved0;

	memcpy(out, ev, len < 40 ? len : 40);
	if (len > 40) {
		memcpy((char *)out + 40, &ev->reserved[1], len - 40);
	}
	return len;
}

/*
 * Cut the sealed payload data[0..len) into chunks of record id and hand
 * each, in order, to put (which returns 0, or < 0 to stop: returned).
 * Async-signal-safe when put is.
 */
static inline int pl_meta_cut(uint32_t id, const void *data, size_t len,
			      int (*put)(const struct mt_event *ev, void *ctx),
			      void *ctx)
{
	struct mt_event ev;
	size_t off = 0;
	int err;

	while (off < len) {
		size_t n = len - off < PL_META_CHUNK ? len - off :
						       PL_META_CHUNK;
		unsigned flags = (off == 0 ? PL_META_FIRST : 0) |
				 (off + n == len ? PL_META_LAST : 0);

		pl_meta_pack(&ev, id, flags, (const char *)data + off, n);
		err = put(&ev, ctx);
		if (err < 0) {
			return err;
		}
		off += n;
	}
	return 0;
}

#endif /* MT_PRELOAD_META_CHUNK_H */

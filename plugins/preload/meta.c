/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/meta.c - metadata through the event ring: the MTKT
 * (stack) and MTKM (mapping) payloads the interposer writes with
 * --stacks (interpose-stacks.c) reach memtrack in the same ring as the
 * events, cut into 64-byte slots (shm.h, PL_META_*), and are put back
 * together here and handed to em->meta() at their place in the ring.
 *
 * Why the event ring and not a second one: the rules to keep are about
 * order (a stack's record before the first event that uses its id,
 * mappings before the stacks that need them, in the recording too), and
 * one ring has one order. A second ring would need a sequence number
 * tying each record to an event position, and its own space protocol;
 * chunks reuse the event ring's, with its waits, its liveness argument
 * and its recovery from dead writers (ring.c), unchanged.
 *
 * Protocol (producer: pl_stk_put_record() in interpose-stacks.c):
 *   - A record gets an id from shm->next_meta_id (unique across the
 *     traced tree); its payload, sealed (header, count, checksum), is cut
 *     into chunks of PL_META_CHUNK bytes, FIRST on the first, LAST on the
 *     last (both on a record of one chunk), each put with pl_ring_put()
 *     like an event, in order, by one thread.
 *   - The consumer appends each chunk to the record of its id and, at
 *     LAST, calls em->meta() with the payload.
 *
 * Invariants:
 *   M1. No claim is held between two chunks (each is a whole
 *       pl_ring_put): a record as long as the ring, or longer, passes,
 *       since the consumer frees each chunk's slot as it reads it. Tens
 *       of KiB of MTKM cost ~1,400 slots of the 16 MiB default ring.
 *   M2. Chunks of different records may interleave (other threads, other
 *       processes, a signal handler on top of a writer that is between
 *       two chunks); the id keys the reassembly, so they never mix.
 *   M3. A record is emitted when its LAST chunk is read: after every
 *       slot before that chunk, before every slot after it. The writer of
 *       a new stack puts its MTKT record before mtpl_stack_publish() and
 *       its event after; other threads use the id only after publish. So
 *       every event with a stack id is behind the whole record of that
 *       id. MTKM records are written under the mappings lock, and a thread
 *       that finds the mappings unchanged under that lock puts its MTKT
 *       record after the holder's LAST chunk: mappings reach em->meta()
 *       before the stacks that need them. Each em->meta() call is one
 *       whole payload, so an MTKT payload is closed before any MTKM
 *       record that follows it.
 *   M4. Lossless as events are: chunks are never dropped by producers
 *       (they wait for room). Only a writer killed between two chunks
 *       leaves a record unfinished; nothing of it is emitted (a stack
 *       whose record is cut was never published, so no event uses it);
 *       its parts are counted and freed at destroy.
 *   M5. The producer side is async-signal-safe (memcpy and pl_ring_put);
 *       a signal handler that interrupts its thread inside pl_ring_put
 *       writes no metadata (ring.c, I4): its event goes without a stack.
 *
 * Memory (consumer): one growing buffer per record in flight; at most one
 * record is in flight per writing thread (two with a handler on top), so
 * the bound is that times the largest payload (the MTKM of a process).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

struct pl_meta_part {
	uint32_t id;
	unsigned char *data;
	size_t len, cap;
};

static struct pl_meta_part *find_part(struct pl_meta_rx *rx, uint32_t id)
{
	size_t i;

	for (i = 0; i < rx->nparts; i++) {
		if (rx->parts[i].id == id) {
			return &rx->parts[i];
		}
	}
	return NULL;
}

static struct pl_meta_part *new_part(struct pl_meta_rx *rx, uint32_t id)
{
	struct pl_meta_part *p;

	if (rx->nparts == rx->cap) {
		size_t cap = rx->cap ? rx->cap * 2 : 8;

		p = realloc(rx->parts, cap * sizeof(*p));
		if (!p) {
			return NULL;
		}
		rx->parts = p;
		rx->cap = cap;
	}
	p = &rx->parts[rx->nparts++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	return p;
}

static void drop_part(struct pl_meta_rx *rx, struct pl_meta_part *p)
{
	free(p->data);
	*p = rx->parts[--rx->nparts];
}

static int append(struct pl_meta_part *p, const void *data, size_t len)
{
	if (p->len + len > p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		unsigned char *d;

		while (cap < p->len + len) {
			cap *= 2;
		}
		d = realloc(p->data, cap);
		if (!d) {
			return -ENOMEM;
		}
		p->data = d;
		p->cap = cap;
	}
	memcpy(p->data + p->len, data, len);
	p->len += len;
	return 0;
}

static int deliver(struct pl_meta_rx *rx, const void *data, size_t len,
		   struct mt_emitter *em,
		   void (*log)(void *ctx, const char *msg), void *ctx)
{
	int err = em->meta ? em->meta(em, data, len) : -ENOTSUP;

	if (err == -ENOTSUP) {
		if (!rx->unsupported && log) {
			log(ctx, "the encoder cannot store metadata: stacks are recorded as ids only");
		}
		rx->unsupported = 1;
		return 0;
	}
	if (!err) {
		rx->records++;
	}
	return err;
}

int pl_meta_take(struct pl_meta_rx *rx, const struct mt_event *slot,
		 struct mt_emitter *em,
		 void (*log)(void *ctx, const char *msg), void *ctx)
{
	unsigned char chunk[PL_META_CHUNK];
	size_t len = pl_meta_unpack(slot, chunk);
	struct pl_meta_part *p = find_part(rx, slot->stack_id);
	int err;

	if ((slot->flags & PL_META_FIRST) && p) {
		drop_part(rx, p); /* an id seen again: the old one is dead */
		p = NULL;
	}
	if (!p) {
		if (!(slot->flags & PL_META_FIRST)) {
			rx->orphans++;
			return 0;
		}
		if (slot->flags & PL_META_LAST) {
			/* one chunk: no copy to keep */
			return deliver(rx, chunk, len, em, log, ctx);
		}
		p = new_part(rx, slot->stack_id);
		if (!p) {
			return -ENOMEM;
		}
	}
	err = append(p, chunk, len);
	if (err || !(slot->flags & PL_META_LAST)) {
		return err;
	}
	err = deliver(rx, p->data, p->len, em, log, ctx);
	drop_part(rx, p);
	return err;
}

size_t pl_meta_rx_free(struct pl_meta_rx *rx)
{
	size_t i, n = rx->nparts;

	for (i = 0; i < rx->nparts; i++) {
		free(rx->parts[i].data);
	}
	free(rx->parts);
	rx->parts = NULL;
	rx->nparts = rx->cap = 0;
	return n;
}

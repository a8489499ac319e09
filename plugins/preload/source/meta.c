/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/meta.c - metadata through the event ring: the MTKT
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
 * and its recovery from dead writers (ring.h), unchanged.
 *
 * Protocol (producer: put_record() in interposer/interpose.c,
 * for interposer/interpose-stacks.c):
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
 *       writes no metadata (ring.h, I4): its event goes without a stack.
 *
 * Memory and time (consumer): the ring is written by the traced
 * processes, so every chunk is hostile input. A process that only ever
 * sends FIRST chunks, each under a new id, must not grow memtrack
 * without bound, nor slow it down. So:
 *   - A record is at most PL_META_RECORD_MAX (16 MiB) long. The longest
 *     legitimate ones are a process's MTKM (stack-maps.c: per executable
 *     segment 32 bytes, a build-id, the path: 100 KiB for a thousand
 *     libraries; 16 MiB is some 50,000 of them at typical paths), an MTKT
 *     is 16 + 12 + 8 * 127 = 1,044 bytes. It is also the largest metadata
 *     frame the reader accepts (plugins/msgpack-zstd/decoder.c,
 *     MZ_META_MAX): a longer record could not be read back anyway.
 *   - At most PL_META_INFLIGHT_MAX (16,384) records are in progress, and
 *     their buffers take at most PL_META_INFLIGHT_BYTES (64 MiB: four
 *     records of the largest size). A legitimate writer has one record
 *     in flight per thread (two with a handler on top), so thousands of
 *     threads stopped halfway at once by a full ring still fit. When a
 *     new record or a longer buffer would pass a bound, the oldest
 *     records in progress are dropped (their writers are the likeliest
 *     dead) and counted.
 *   - Records in progress are found by id through a hash table whose key
 *     is random (a writer cannot choose ids that collide), kept in a list
 *     by age: every chunk costs O(1), eviction included.
 *   - A chunk that breaks the protocol (a length pl_meta_cut never
 *     writes, a continuation of no record in progress, a FIRST of an id
 *     in progress) is dropped and counted, with what it makes unusable,
 *     and nothing else: the records around it come out whole.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "meta.h"

#define NIL UINT32_MAX
/* twice PL_META_INFLIGHT_MAX: chains of one entry, on average half */
#define BUCKETS_LOG2 15
#define POOL_MIN 64u
#define BUF_MIN 256u

struct pl_meta_part {
	uint32_t id;
	uint32_t next;         /* in its bucket's chain, or the free list */
	uint32_t older, newer; /* the age list */
	unsigned char *data;
	size_t len, cap;
};

static uint32_t bucket_of(const struct pl_meta_rx *rx, uint32_t id)
{
	/* multiply-shift with a random odd key: universal, so colliding ids
	 * cannot be chosen without knowing the key */
	return (uint32_t)(((uint64_t)id * rx->seed) >> (64 - BUCKETS_LOG2));
}

static int rx_init(struct pl_meta_rx *rx)
{
	uint64_t seed = 0;
	struct timespec ts;
	uint32_t i;

	rx->buckets = malloc(sizeof(*rx->buckets) << BUCKETS_LOG2);
	if (!rx->buckets) {
		return -ENOMEM;
	}
	for (i = 0; i < 1u << BUCKETS_LOG2; i++) {
		rx->buckets[i] = NIL;
	}
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(seed)) {
		/* no entropy yet: still not known to the writers */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
		       (uint64_t)(uintptr_t)rx ^ (uint64_t)ts.tv_sec << 32;
	}
	rx->seed = seed | 1;
	rx->parts = NULL;
	rx->npool = 0;
	rx->free = rx->oldest = rx->newest = NIL;
	return 0;
}

static uint32_t find_part(const struct pl_meta_rx *rx, uint32_t id)
{
	uint32_t i;

	if (!rx->buckets) {
		return NIL;
	}
	for (i = rx->buckets[bucket_of(rx, id)]; i != NIL;
	     i = rx->parts[i].next) {
		if (rx->parts[i].id == id) {
			return i;
		}
	}
	return NIL;
}

static void drop_part(struct pl_meta_rx *rx, uint32_t i)
{
	struct pl_meta_part *p = &rx->parts[i];
	uint32_t *link = &rx->buckets[bucket_of(rx, p->id)];

	while (*link != i) {
		link = &rx->parts[*link].next;
	}
	*link = p->next;
	if (p->older != NIL) {
		rx->parts[p->older].newer = p->newer;
	} else {
		rx->oldest = p->newer;
	}
	if (p->newer != NIL) {
		rx->parts[p->newer].older = p->older;
	} else {
		rx->newest = p->older;
	}
	rx->st.bytes -= p->cap;
	rx->st.in_progress--;
	free(p->data);
	p->data = NULL;
	p->next = rx->free;
	rx->free = i;
}

/* Drop the oldest record in progress but keep: one less in memory. */
static void evict_oldest(struct pl_meta_rx *rx, uint32_t keep)
{
	uint32_t i = rx->oldest;

	if (i == keep) {
		i = rx->parts[i].newer;
	}
	drop_part(rx, i);
	rx->st.evicted++;
}

static int grow_pool(struct pl_meta_rx *rx)
{
	uint32_t n = rx->npool ? rx->npool * 2 : POOL_MIN, i;
	struct pl_meta_part *p;

	if (n > PL_META_INFLIGHT_MAX) {
		n = PL_META_INFLIGHT_MAX;
	}
	p = realloc(rx->parts, n * sizeof(*p)); /* linked by index */
	if (!p) {
		return -ENOMEM;
	}
	rx->parts = p;
	for (i = n; i-- > rx->npool;) {
		p[i].data = NULL;
		p[i].next = rx->free;
		rx->free = i;
	}
	rx->npool = n;
	return 0;
}

/* A new record in progress under id (not in progress), the newest; NIL
 * if memory ran out. */
static uint32_t new_part(struct pl_meta_rx *rx, uint32_t id)
{
	struct pl_meta_part *p;
	uint32_t i, *head;

	if (!rx->buckets && rx_init(rx)) {
		return NIL;
	}
	if (rx->st.in_progress >= PL_META_INFLIGHT_MAX) {
		evict_oldest(rx, NIL);
	}
	if (rx->free == NIL && grow_pool(rx)) {
		return NIL;
	}
	i = rx->free;
	p = &rx->parts[i];
	rx->free = p->next;
	head = &rx->buckets[bucket_of(rx, id)];
	p->id = id;
	p->next = *head;
	*head = i;
	p->older = rx->newest;
	p->newer = NIL;
	if (rx->newest != NIL) {
		rx->parts[rx->newest].newer = i;
	} else {
		rx->oldest = i;
	}
	rx->newest = i;
	p->data = NULL;
	p->len = p->cap = 0;
	rx->st.in_progress++;
	return i;
}

/* Append to record i, whose length stays within PL_META_RECORD_MAX: its
 * buffer grows within PL_META_INFLIGHT_BYTES, older records making way. */
static int append(struct pl_meta_rx *rx, uint32_t i, const void *data,
		  size_t len)
{
	struct pl_meta_part *p = &rx->parts[i];

	if (p->len + len > p->cap) {
		size_t cap = p->cap ? p->cap * 2 : BUF_MIN;
		unsigned char *d;

		while (cap < p->len + len) {
			cap *= 2;
		}
		if (cap > PL_META_RECORD_MAX) {
			cap = PL_META_RECORD_MAX;
		}
		/* ends: this one alone is within the bound */
		while (rx->st.bytes - p->cap + cap > PL_META_INFLIGHT_BYTES) {
			evict_oldest(rx, i);
		}
		d = realloc(p->data, cap);
		if (!d) {
			return -ENOMEM;
		}
		rx->st.bytes += cap - p->cap;
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
		rx->st.records++;
	}
	return err;
}

/* The lengths pl_meta_cut() writes: every chunk but the last is full. */
static int chunk_ok(const struct mt_event *slot)
{
	unsigned len = slot->reserved0;

	if (len == 0 || len > PL_META_CHUNK) {
		return 0;
	}
	return (slot->flags & PL_META_LAST) || len == PL_META_CHUNK;
}

int pl_meta_take(struct pl_meta_rx *rx, const struct mt_event *slot,
		 struct mt_emitter *em,
		 void (*log)(void *ctx, const char *msg), void *ctx)
{
	unsigned char chunk[PL_META_CHUNK];
	uint32_t i = find_part(rx, slot->stack_id);
	size_t len;
	int err;

	if (!chunk_ok(slot)) {
		/* the record it belongs to has a hole now */
		if (i != NIL) {
			drop_part(rx, i);
		}
		rx->st.malformed++;
		return 0;
	}
	len = pl_meta_unpack(slot, chunk);
	if (slot->flags & PL_META_FIRST) {
		if (i != NIL) {
			drop_part(rx, i);
			rx->st.reused++;
		}
		if (slot->flags & PL_META_LAST) {
			/* one chunk: no copy to keep */
			return deliver(rx, chunk, len, em, log, ctx);
		}
		i = new_part(rx, slot->stack_id);
		if (i == NIL) {
			return -ENOMEM;
		}
	} else if (i == NIL) {
		rx->st.orphans++;
		return 0;
	}
	if (rx->parts[i].len + len > PL_META_RECORD_MAX) {
		drop_part(rx, i);
		rx->st.oversized++;
		return 0;
	}
	err = append(rx, i, chunk, len);
	if (err || !(slot->flags & PL_META_LAST)) {
		return err;
	}
	err = deliver(rx, rx->parts[i].data, rx->parts[i].len, em, log, ctx);
	drop_part(rx, i);
	return err;
}

void pl_meta_get_stats(const struct pl_meta_rx *rx,
		       struct pl_meta_stats *out)
{
	*out = rx->st;
}

uint64_t pl_meta_dropped(const struct pl_meta_rx *rx)
{
	return rx->st.orphans + rx->st.malformed + rx->st.reused +
	       rx->st.oversized + rx->st.evicted;
}

size_t pl_meta_rx_free(struct pl_meta_rx *rx)
{
	size_t n = rx->st.in_progress;
	uint32_t i;

	for (i = 0; i < rx->npool; i++) {
		free(rx->parts[i].data);
	}
	free(rx->parts);
	free(rx->buckets);
	rx->parts = NULL;
	rx->buckets = NULL;
	rx->npool = 0;
	rx->st.in_progress = 0;
	rx->st.bytes = 0;
	return n;
}

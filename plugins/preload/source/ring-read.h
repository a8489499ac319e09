/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/ring-read.h - the consumer's side of the shared
 * event ring (ring.h: the protocol), in the source: memtrack's poller
 * thread, the one reader. ring-read.c has the rules by which it trusts
 * nothing the traced processes wrote.
 */
#ifndef MT_PRELOAD_RING_READ_H
#define MT_PRELOAD_RING_READ_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* Lay out an empty ring of nslots (a power of two) slots at slots_offset
 * in shm, whose other fields the caller sets. The slots must be zero (a
 * fresh memfd or anonymous mapping): they are not written. */
void pl_ring_init(struct pl_shm *shm, uint64_t nslots, uint64_t slots_offset);

struct pl_tsc;

struct pl_reader {
	struct pl_shm *shm;
	struct pl_tsc *tsc;   /* shm->tsc: turns timestamps into ns */
	struct mt_event *slots;
	uint64_t nslots;      /* the geometry, copied before the command ran */
	uint64_t mask;
	uint32_t shift;
	uint64_t tail;        /* the next position to read */
	uint64_t stall_pos;   /* a claimed slot waited for since ... */
	uint64_t stall_since; /* ... this time (ns), 0: none */
	uint64_t abandoned;   /* slots skipped: their writer died */
	uint64_t corrupt;     /* slots skipped: their state word could not
			       * be one the protocol writes (a stray write) */
	uint64_t published;   /* the tail as last published (the watcher
			       * puts it back if a process overwrote it) */
	/* an event tagged with another pid namespace (reserved[1]):
	 * its ids into memtrack's (pidns.h); NULL: left as they are */
	void (*xlate)(void *ctx, uint64_t ns, struct mt_event *ev);
	void *xlate_ctx;
};

/* With shm->tsc, tsc converts the events' timestamps as they are first
 * seen (the slot is then PL_READY); NULL otherwise. The geometry is read
 * from shm now, before any traced process could have written it. */
void pl_reader_init(struct pl_reader *rd, struct pl_shm *shm,
		    struct pl_tsc *tsc);

/* The committed event at the tail, or NULL (empty, or the slot at the tail
 * is still being written). */
const struct mt_event *pl_ring_peek(struct pl_reader *rd);

/* The committed event i positions past the tail, or NULL: what
 * pl_ring_peek() returns after i advances, without taking them. */
const struct mt_event *pl_ring_peek_at(struct pl_reader *rd, uint64_t i);

/* Give the slot pl_ring_peek() returned back to the producers. */
void pl_ring_advance(struct pl_reader *rd);

/* The event e that pl_ring_peek() returned, copied to out (reserved[]
 * zeroed: the slot's state word is no part of the event), and its slot
 * given back. Returns 0, or -1 when the copy is no event a producer
 * writes (an unknown kind or flag: a stray write, T3 in ring-read.c), which
 * is counted in rd->corrupt and must not be emitted. */
int pl_ring_take(struct pl_reader *rd, const struct mt_event *e,
		 struct mt_event *out);

struct mt_emitter;

/* Where the metadata chunks of the ring go (meta.c's pl_meta_take()
 * through the source). */
typedef int (*pl_ring_meta_fn)(void *ctx, const struct mt_event *slot,
			       struct mt_emitter *em);

/* The metadata chunk e that pl_ring_peek() returned, handed to take and
 * its slot given back; on take's error the tail is published and the
 * error returned. */
int pl_ring_take_meta(struct pl_reader *rd, const struct mt_event *e,
		      pl_ring_meta_fn take, void *ctx, struct mt_emitter *em);

/* Publish the tail and wake producers waiting for room. */
void pl_ring_publish(struct pl_reader *rd);

/*
 * Nothing committed at the tail: skip the slot and return 1 when it cannot
 * become readable: claimed for stall_ns by a writer that is dead (killed
 * between claim and commit: rd->abandoned), or in a state the protocol
 * never leaves a slot in (a stray write: rd->corrupt, at once, or after
 * stall_ns for a free slot that head has passed). 0 otherwise (empty, or a
 * writer alive: it will commit).
 */
int pl_ring_unstall(struct pl_reader *rd, uint64_t now, uint64_t stall_ns);

/* Positions written (claimed) and not read yet: at most nslots, whatever
 * a process wrote over head. */
uint64_t pl_ring_unread(const struct pl_reader *rd);

#endif /* MT_PRELOAD_RING_READ_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/ring.h - the shared event ring of the preload source:
 * many producers (every thread of every traced process, signal handlers
 * included), one consumer (memtrack's poller thread). See ring.c for the
 * protocol and why it cannot deadlock.
 */
#ifndef MT_PRELOAD_RING_H
#define MT_PRELOAD_RING_H

#include <stddef.h>
#include <stdint.h>

#include "shm.h"

/* Lay out an empty ring of nslots (a power of two) slots at slots_offset
 * in shm, whose other fields the caller sets. The slots must be zero (a
 * fresh memfd or anonymous mapping): they are not written. */
void pl_ring_init(struct pl_shm *shm, uint64_t nslots, uint64_t slots_offset);

/* ---- producers (the interposer) ---- */

/*
 * A producer's own view of the ring: the geometry copied from the header
 * once and checked against the mapping (pl_ring_attach), so that another
 * process that overwrites the header cannot make this one write outside
 * the ring.
 */
struct pl_ring {
	struct pl_shm *shm;
	struct mt_event *slots;
	uint64_t nslots;
	uint64_t mask;
	uint64_t wakeup_at;
	uint32_t shift;
	/* 1: make no system call but the clock's (the process runs under a
	 * seccomp filter, which may kill it for one it never makes):
	 * wake-ups are left to the consumer's watcher, and a wait for room
	 * spins instead of sleeping on a futex */
	uint32_t quiet;
};

/* Fill r from shm, a mapping of map_size bytes. Returns 0, or -1 when the
 * header's geometry does not fit the mapping (nothing may be put then). */
int pl_ring_attach(struct pl_ring *r, struct pl_shm *shm, uint64_t map_size);

/*
 * Put one event (reserved[0] is overwritten; reserved0 and reserved[1]
 * are copied: 0 for events, data for metadata chunks). Waits while the
 * ring is full: spins briefly, then sleeps on shm->space_seq, waking the
 * consumer through shm->doorbell first. Async-signal-safe, takes no lock,
 * never allocates. Returns 0, or -1 when the consumer has gone (the
 * caller goes on untraced). tid: the caller's thread id.
 */
int pl_ring_put_r(const struct pl_ring *r, const struct mt_event *ev,
		  uint32_t tid);

/* pl_ring_put_r() on a view made from shm's own map_size (tests, and
 * callers that put once). */
int pl_ring_put(struct pl_shm *shm, const struct mt_event *ev, uint32_t tid);

/* pl_ring_put()'s result when called with nowait and the ring is full */
#define PL_RING_FULL (-2)

/*
 * pl_ring_put_r() for a thread whose signal handlers may put too (I4 in
 * ring.c): *claiming is non-zero from just before the claim until the
 * commit (restored to its value on entry after), so that a handler knows
 * whether its thread holds a claim. With nowait, a full ring returns
 * PL_RING_FULL at once instead of waiting for room: what a handler that
 * interrupted a claim must do, since only that write can make room.
 */
int pl_ring_put_ex(const struct pl_ring *r, const struct mt_event *ev,
		   uint32_t tid, int *claiming, int nowait);

/* ---- the consumer (the source) ---- */

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
 * writes (an unknown kind or flag: a stray write, P5 in ring.c), which
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

uint64_t pl_now_ns(void);

#endif /* MT_PRELOAD_RING_H */

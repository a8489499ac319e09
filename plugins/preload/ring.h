/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/ring.h - the protocol of the event ring that every
 * traced process (the producers: interposer/ring-put.c, in the
 * interposer) shares with memtrack's poller thread (the consumer:
 * source/ring-read.c, in the source plugin). Both programs are built from
 * this header and shm.h; neither includes the other's half.
 *
 * Layout: nslots 64-byte slots, each one struct mt_event whose
 * reserved[0] is the slot's state word (lap, state, tid: shm.h). A
 * position p (a 64-bit count that never wraps) lives in slot p & mask, lap
 * p >> shift. head is the next position to claim, the consumer's tail the
 * next to read.
 *
 * Protocol of a slot, for position p of lap L:
 *   FREE(L) --producer CAS--> CLAIMED(L, tid) --producer store-->
 *   COMMITTED(L, tid) --consumer store--> FREE(L + 1)
 * and, for a dead writer only, CLAIMED(L, tid) --consumer CAS--> FREE(L+1).
 * With TSC timestamps (tsc.h) the consumer converts an event's timestamp
 * the first time it sees it, in place, and marks it so:
 * COMMITTED(L, tid) --consumer store--> READY(L, tid); producers treat
 * READY as COMMITTED (a slot of their lap that is not free).
 * A producer claims the slot at head with a CAS on the slot's word (the
 * claim is the reservation: there is no moment where a position is taken
 * and nobody is named as its owner), then moves head on with a CAS; any
 * producer that finds the slot at head claimed moves head on for it, so a
 * producer stopped (or killed) between the two CASes blocks nobody; a
 * slot the consumer skipped (I3) before head passed it is moved past the
 * same way, by the consumer and by any producer that finds it there.
 *
 * Invariants:
 *   I1. Only the producer that claimed a slot writes its event, between
 *       its claim and its commit; it does no system call, takes no lock
 *       and waits for nothing in between, so a live writer commits within
 *       a bounded number of its own steps.
 *   I2. The consumer reads positions in order and frees a slot only after
 *       copying it; a producer only claims a slot that is FREE for the
 *       lap of its position. So no event is overwritten before it is read.
 *   I3. The consumer skips a claimed slot only when its writer's thread no
 *       longer exists (/proc/TID gone, or a zombie): a dead thread runs no
 *       more code, so no late write can land in a slot already given to
 *       the next lap. A writer alive but slow (stopped by a debugger or by
 *       SIGSTOP) is waited for.
 *   I4. A signal handler interrupting its thread between claim and commit
 *       (pl_ring_put_ex's *claiming) never waits for room: that room only
 *       the interrupted write can make. It puts without waiting (its
 *       positions come after the claimed one, so the thread's order is
 *       kept); only when the ring is full at that moment does
 *       interposer/interpose.c keep its events in the thread's pending
 *       buffer, put after the commit. A handler that interrupts anything else (its thread
 *       waiting for room, or between events) puts as any producer does:
 *       handlers that follow each other back to back, faster than their
 *       thread gets to run, must not pile up in a buffer of fixed size.
 *       Its events may then come before the interrupted thread's: that
 *       one is of an allocation the handler cannot know yet, or of a free
 *       whose block is not given back yet (frees are recorded before the
 *       call), as when the handler comes just before the thread's put.
 *
 * Memory bound: the mapping is fixed when memtrack starts (--ring-size,
 * plus a page of header and notices); nothing grows. Each thread holds at
 * most one claimed slot plus a few pending events of its own (I4).
 *
 * Liveness: a producer waits only for room, i.e. for the consumer. It
 * stops waiting when the consumer has gone: destroy() sets shm->dead and
 * wakes every waiter; a consumer killed outright stops its heartbeat
 * (shm->beat, bumped every PL_BEAT_MS by its watcher thread), and a
 * waiter that sees the beat stand still for PL_GONE_MS of its own time
 * takes it for gone (and counts itself in shm->gave_up, which a memtrack
 * that was only frozen reports). Not the consumer's pid: it means nothing
 * in another pid namespace, and may be another process's by then. The
 * producer then goes on untraced; the program always finishes. The
 * consumer waits for nothing but a claimed slot (I1: a live writer
 * commits; I3: a dead one is skipped), and only between polls (it never
 * blocks on a slot). There is no cycle: producers wait for the consumer,
 * the consumer for no producer, and no producer waits while it holds a
 * claim (the wait is before the claim).
 *
 * Wake-ups: the consumer reads on its poll tick; it is woken earlier when
 * it said it sleeps (shm->sleeping) and the ring holds wakeup_at unread
 * positions, or when a producer starts waiting for room: the producer
 * bumps shm->doorbell and wakes the futex on it, on which the consumer's
 * watcher thread sleeps (it then wakes the poller through memtrack's own
 * eventfd, which no traced process holds). A producer under a seccomp
 * filter (pl_ring.quiet) makes no such call: the watcher also looks at
 * the ring every PL_BEAT_MS. A lost wake-up (both are racy on purpose)
 * costs at most a tick.
 *
 * Trust: every word of the mapping can be written by any traced process,
 * by a stray pointer or on purpose, so each side keeps rules of its own
 * against the others' writes: the reader's (T1..T6) at the top of
 * source/ring-read.c, the producers' (W1..W3) at the top of
 * interposer/ring-put.c. A stray write costs the events it hit, never a
 * wait without end, never a store outside the ring.
 */
#ifndef MT_PRELOAD_RING_H
#define MT_PRELOAD_RING_H

#include <stdint.h>
#include <time.h>

#include "shm.h"

/* The state word of a slot (shm.h: lap, state, tid). */
static inline uint64_t *pl_slot_word(struct mt_event *slot)
{
	return &slot->reserved[0];
}

/* CLOCK_MONOTONIC in ns: the vDSO's, no system call (a program under a
 * seccomp allow-list may not make one). */
static inline uint64_t pl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* MT_PRELOAD_RING_H */

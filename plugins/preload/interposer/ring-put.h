/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/ring-put.h - the producers' side of the
 * shared event ring (ring.h: the protocol), in the interposer: every
 * thread of every traced process, signal handlers included.
 */
#ifndef MT_PRELOAD_RING_PUT_H
#define MT_PRELOAD_RING_PUT_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

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
 * ring.h): *claiming is non-zero from just before the claim until the
 * commit (restored to its value on entry after), so that a handler knows
 * whether its thread holds a claim. With nowait, a full ring returns
 * PL_RING_FULL at once instead of waiting for room: what a handler that
 * interrupted a claim must do, since only that write can make room.
 */
int pl_ring_put_ex(const struct pl_ring *r, const struct mt_event *ev,
		   uint32_t tid, int *claiming, int nowait);

/*
 * After putting hello number seq: wake the consumer and wait until it has
 * answered (shm.h, PL_HELLO_TAG), PL_HELLO_WAIT_MS at most, and not at all
 * for a quiet producer or a consumer gone. Returns 0 when answered.
 */
int pl_ring_hello_wait(const struct pl_ring *r, uint32_t seq);

#endif /* MT_PRELOAD_RING_PUT_H */

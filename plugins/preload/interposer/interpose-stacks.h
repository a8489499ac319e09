/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/interpose-stacks.h - call stacks in the
 * interposer (--stacks): what interpose.c calls. It calls nothing of
 * interpose.c back: the one way out, a record into the event path, is
 * handed in at attach. Everything here is hidden inside
 * libmemtrack-preload.so.
 */
#ifndef MT_PRELOAD_INTERPOSE_STACKS_H
#define MT_PRELOAD_INTERPOSE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include <memtrack/event.h>

#include "shm.h"

/* 1 once pl_stk_attach() has set stacks up; read on every allocation. */
extern int pl_stk_on;

/*
 * Put payload[0..len) into the ring as one metadata record under a fresh
 * id (meta-chunk.h; source/meta.c, M1..M5), through the caller's event
 * path (its handlers' pending events, the consumer gone). Returns 0, or
 * -1: the process is untraced now. Async-signal-safe.
 */
typedef int (*pl_stk_put_fn)(const void *payload, size_t len);

/*
 * With shm->stack_depth set, set the stack machinery up (libunwind, the
 * stack table, the mappings), register its fork handlers and send the
 * exec record and the mappings of this process; every record goes out
 * through put. Called once per process image by attach(), after the
 * process is attached and before pl_stk_on can be seen set. Without
 * stacks it returns at once and nothing of libunwind runs. Returns 0 or
 * a negative errno (stacks stay off).
 */
int pl_stk_attach(struct pl_shm *shm, int32_t pid, pl_stk_put_fn put);

/*
 * The calling allocation's stack: unwound, interned, and, if it is new,
 * its record (after any mappings not sent yet) put in the ring. Returns
 * the id to put in the event, or 0 for none. Call it at the outermost
 * allocator entry, before calling the real allocator (so before any lock
 * of the allocator's: the fork gate may hold us), with the thread's depth
 * raised (a reentrant allocation goes untraced), never while the thread
 * is inside pl_ring_put (a signal handler that interrupted it), and never
 * in a vfork child (it would fill its parent's tables, which it shares).
 * Async-signal-safe otherwise.
 */
uint32_t pl_stk_capture(void);

#endif /* MT_PRELOAD_INTERPOSE_STACKS_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/ring.c - the event ring shared by the traced processes
 * (producers, interpose.c) and memtrack's poller thread (the consumer,
 * source.c).
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
 *       kept); only when the ring is full at that moment does interpose.c
 *       keep its events in the thread's pending buffer, put after the
 *       commit. A handler that interrupts anything else (its thread
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
 * wakes every waiter; a consumer killed outright is seen through a pidfd
 * of memtrack (readable once it has exited) or, without pidfd_open, by
 * kill(pid, 0) failing, checked at least every PL_WAIT_SLICE_MS while
 * waiting. The producer then goes on untraced; the program always
 * finishes. The consumer waits for nothing but a claimed slot (I1: a live
 * writer commits; I3: a dead one is skipped), and only between polls (it
 * never blocks on a slot). There is no cycle: producers wait for the
 * consumer, the consumer for no producer, and no producer waits while it
 * holds a claim (the wait is before the claim).
 *
 * Wake-ups: the consumer reads on its poll tick; it is woken earlier
 * through the eventfd when it said it sleeps (shm->sleeping) and the ring
 * holds wakeup_at unread positions, or when a producer starts waiting for
 * room. A lost wake-up (both are racy on purpose) costs at most a tick.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "ring.h"
#include "tsc.h"

/* spins before sleeping; each is a pause instruction's worth */
#define PL_SPINS 200
/* longest futex sleep: how often a waiting producer checks the consumer */
#define PL_WAIT_SLICE_MS 100

uint64_t pl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

static uint64_t *slot_word(struct mt_event *slot)
{
	return &slot->reserved[0];
}

void pl_ring_init(struct pl_shm *shm, uint64_t nslots, uint64_t slots_offset)
{
	shm->nslots = nslots;
	shm->shift = (uint32_t)__builtin_ctzll(nslots);
	shm->slots_offset = slots_offset;
	/* like the eBPF source: wake the reader at 1/8, else its tick */
	shm->wakeup_at = nslots / 8 ? nslots / 8 : 1;
	shm->head = shm->tail = 0;
	/* The reader has not read yet: it waits on the eventfd until the
	 * first wake-up or tick. Left 0, no producer would wake it, and a
	 * program that allocates fast filled the ring while the reader's
	 * core idled (2M events: the first 50 ms of the run). */
	shm->sleeping = 1;
	/* zero memory (ring.h): every slot is FREE for lap 0 already.
	 * Writing the words would fault the whole ring in (16 MiB, 4096
	 * pages by default) before the command starts; its producers touch
	 * each page when they first reach it instead. */
	_Static_assert(PL_FREE == 0, "a zero word is a free slot of lap 0");
}

/* ------------------------------------------------------------------ */
/* Producers                                                           */
/* ------------------------------------------------------------------ */

static void wake_consumer(struct pl_shm *shm, int efd)
{
	uint64_t one = 1;
	ssize_t n;

	if (!__atomic_load_n(&shm->sleeping, __ATOMIC_RELAXED) ||
	    !__atomic_exchange_n(&shm->sleeping, 0, __ATOMIC_ACQ_REL)) {
		return;
	}
	/* errors: the poll tick reads anyway */
	n = write(efd, &one, sizeof(one));
	(void)n;
}

/* Has memtrack gone? Async-signal-safe: system calls only. */
static int consumer_gone(struct pl_shm *shm)
{
	pid_t pid = shm->consumer_pid;
	struct pollfd pfd;
	int fd, gone;

	if (__atomic_load_n(&shm->dead, __ATOMIC_ACQUIRE)) {
		return 1;
	}
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		/* readable once it has exited, zombie or not */
		pfd.fd = fd;
		pfd.events = POLLIN;
		gone = poll(&pfd, 1, 0) > 0;
		close(fd);
		return gone;
	}
	if (errno == ESRCH) {
		return 1;
	}
#endif
	(void)pfd;
	(void)gone;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

static long futex_wait(uint32_t *word, uint32_t val, int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	/* not FUTEX_PRIVATE: the word is shared between processes */
	return syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* The slot of position h still holds the previous lap: the ring is full. */
static int full(struct mt_event *slot, uint32_t lap)
{
	uint64_t w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);

	return pl_word_lap(w) == lap - 1;
}

/* Wait until the slot of position h is free again or the consumer has
 * gone (-1). */
static int wait_for_room(struct pl_shm *shm, int efd, struct mt_event *slot,
			 uint32_t lap)
{
	uint64_t t0;
	int i, ret = 0;

	for (i = 0; i < PL_SPINS; i++) {
		cpu_relax();
		if (!full(slot, lap)) {
			return 0;
		}
	}
	t0 = pl_now_ns();
	__atomic_fetch_add(&shm->waiters, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t seq = __atomic_load_n(&shm->space_seq,
					       __ATOMIC_SEQ_CST);

		if (!full(slot, lap)) {
			break;
		}
		if (consumer_gone(shm)) {
			ret = -1;
			break;
		}
		/* it may sleep until its tick: tell it we wait */
		__atomic_store_n(&shm->sleeping, 1, __ATOMIC_RELAXED);
		wake_consumer(shm, efd);
		futex_wait(&shm->space_seq, seq, PL_WAIT_SLICE_MS);
	}
	__atomic_fetch_sub(&shm->waiters, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&shm->waits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->wait_ns, pl_now_ns() - t0, __ATOMIC_RELAXED);
	return ret;
}

/* The thread's handlers read *claiming: the compiler must keep the stores
 * to it around the claim and the commit, in program order (a signal fence:
 * the same thread, no instruction). */
static inline void set_claiming(int *claiming, int v)
{
	if (claiming) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(claiming, v, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

int pl_ring_put(struct pl_shm *shm, int efd, const struct mt_event *ev,
		uint32_t tid)
{
	return pl_ring_put_ex(shm, efd, ev, tid, NULL, 0);
}

int pl_ring_put_ex(struct pl_shm *shm, int efd, const struct mt_event *ev,
		   uint32_t tid, int *claiming, int nowait)
{
	struct mt_event *slots = pl_slots(shm);
	uint64_t mask = shm->nslots - 1, h, w;
	uint32_t shift = shm->shift;
	int was = claiming ? *claiming : 0;

	for (;;) {
		struct mt_event *slot;
		uint32_t lap;

		h = __atomic_load_n(&shm->head, __ATOMIC_ACQUIRE);
		slot = &slots[h & mask];
		lap = (uint32_t)(h >> shift);
		w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);
		if (pl_word_lap(w) == lap && pl_word_state(w) == PL_FREE) {
			uint64_t pos = h;

			set_claiming(claiming, 1);
			if (!__atomic_compare_exchange_n(
				    slot_word(slot), &w,
				    pl_word(lap, PL_CLAIMED, tid), 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				set_claiming(claiming, was);
				continue;
			}
			/* ours: move head on (or somebody did it for us) */
			__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			slot->timestamp = ev->timestamp;
			slot->addr = ev->addr;
			slot->size = ev->size;
			slot->old_addr = ev->old_addr;
			slot->pid = ev->pid;
			slot->tid = ev->tid;
			slot->kind = ev->kind;
			slot->flags = ev->flags;
			slot->reserved0 = ev->reserved0;
			slot->stack_id = ev->stack_id;
			/* events carry 0 there, metadata chunks data */
			slot->reserved[1] = ev->reserved[1];
			__atomic_store_n(slot_word(slot),
					 pl_word(lap, PL_COMMITTED, tid),
					 __ATOMIC_RELEASE);
			set_claiming(claiming, was);
			/* the tail's line is the consumer's: look at it once
			 * every 16 events only */
			if (!(pos & 15) &&
			    pos - __atomic_load_n(&shm->tail,
						  __ATOMIC_RELAXED) >=
				    shm->wakeup_at) {
				wake_consumer(shm, efd);
			}
			return 0;
		}
		if (pl_word_lap(w) == lap) {
			/* claimed by another: help it move head on */
			__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			continue;
		}
		if (pl_word_lap(w) == lap - 1) {
			if (nowait) {
				return PL_RING_FULL;
			}
			if (wait_for_room(shm, efd, slot, lap) < 0) {
				return -1;
			}
			continue;
		}
		if ((int32_t)(pl_word_lap(w) - lap) > 0 &&
		    pl_word_state(w) == PL_FREE) {
			/* the consumer skipped this position (its writer died
			 * between claim and moving head on): move head on */
			__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
		}
		/* head moved on since we read it: again */
	}
}

/* ------------------------------------------------------------------ */
/* The consumer                                                        */
/* ------------------------------------------------------------------ */

void pl_reader_init(struct pl_reader *rd, struct pl_shm *shm,
		    struct pl_tsc *tsc)
{
	memset(rd, 0, sizeof(*rd));
	rd->shm = shm;
	rd->tsc = shm->tsc ? tsc : NULL;
	rd->slots = pl_slots(shm);
	rd->mask = shm->nslots - 1;
	rd->tail = __atomic_load_n(&shm->tail, __ATOMIC_ACQUIRE);
}

const struct mt_event *pl_ring_peek(struct pl_reader *rd)
{
	return pl_ring_peek_at(rd, 0);
}

const struct mt_event *pl_ring_peek_at(struct pl_reader *rd, uint64_t i)
{
	uint64_t pos = rd->tail + i;
	struct mt_event *slot = &rd->slots[pos & rd->mask];
	uint32_t lap = (uint32_t)(pos >> rd->shm->shift);
	uint64_t w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);

	if (w == pl_word(lap, PL_READY, pl_word_tid(w))) {
		return slot;
	}
	if (w != pl_word(lap, PL_COMMITTED, pl_word_tid(w))) {
		return NULL;
	}
	if (rd->tsc) {
		/* once: peek_at() may see the slot again */
		if (slot->kind != PL_META_KIND) {
			slot->timestamp = pl_tsc_ns(rd->tsc, slot->timestamp);
		}
		__atomic_store_n(slot_word(slot),
				 pl_word(lap, PL_READY, pl_word_tid(w)),
				 __ATOMIC_RELAXED);
	}
	return slot;
}

void pl_ring_advance(struct pl_reader *rd)
{
	struct mt_event *slot = &rd->slots[rd->tail & rd->mask];
	uint32_t lap = (uint32_t)(rd->tail >> rd->shm->shift);

	__atomic_store_n(slot_word(slot), pl_word(lap + 1, PL_FREE, 0),
			 __ATOMIC_RELEASE);
	rd->tail++;
	rd->stall_since = 0;
}

void pl_ring_take(struct pl_reader *rd, const struct mt_event *e,
		  struct mt_event *out)
{
	memcpy(out, e, sizeof(*out));
	out->reserved[0] = 0;
	out->reserved[1] = 0;
	pl_ring_advance(rd);
}

int pl_ring_take_meta(struct pl_reader *rd, const struct mt_event *e,
		      pl_ring_meta_fn take, void *ctx, struct mt_emitter *em)
{
	int err = take(ctx, e, em);

	pl_ring_advance(rd);
	if (err) {
		pl_ring_publish(rd);
	}
	return err;
}

void pl_ring_publish(struct pl_reader *rd)
{
	struct pl_shm *shm = rd->shm;

	__atomic_store_n(&shm->tail, rd->tail, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&shm->waiters, __ATOMIC_SEQ_CST)) {
		__atomic_fetch_add(&shm->space_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &shm->space_seq, FUTEX_WAKE, INT_MAX, NULL,
			NULL, 0);
	}
}

/* Does thread tid still run code? A zombie (a dead thread group leader)
 * does not. */
static int thread_alive(uint32_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* ENOENT: gone; anything else: cannot tell, assume alive */
		return errno != ENOENT;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0; /* it went away while we read */
	}
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold anything */
	if (!p || p[1] != ' ') {
		return 1;
	}
	return p[2] != 'Z' && p[2] != 'X';
}

int pl_ring_unstall(struct pl_reader *rd, uint64_t now, uint64_t stall_ns)
{
	struct mt_event *slot = &rd->slots[rd->tail & rd->mask];
	uint32_t lap = (uint32_t)(rd->tail >> rd->shm->shift);
	uint64_t w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);

	if (pl_word_lap(w) != lap || pl_word_state(w) != PL_CLAIMED) {
		rd->stall_since = 0;
		return 0;
	}
	if (!rd->stall_since || rd->stall_pos != rd->tail) {
		rd->stall_pos = rd->tail;
		rd->stall_since = now;
		return 0;
	}
	if (now - rd->stall_since < stall_ns ||
	    thread_alive(pl_word_tid(w))) {
		return 0;
	}
	/* I3: the writer is dead; a CAS, in case it committed just now */
	if (!__atomic_compare_exchange_n(slot_word(slot), &w,
					 pl_word(lap + 1, PL_FREE, 0), 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		return 0;
	}
	/* its writer may have died before moving head past it */
	{
		uint64_t h = rd->tail;

		__atomic_compare_exchange_n(&rd->shm->head, &h, h + 1, 0,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
	rd->tail++;
	rd->abandoned++;
	rd->stall_since = 0;
	return 1;
}

uint64_t pl_ring_unread(const struct pl_reader *rd)
{
	return __atomic_load_n(&rd->shm->head, __ATOMIC_ACQUIRE) - rd->tail;
}

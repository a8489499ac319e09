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
 * Trust (P5): every word of the mapping can be written by any traced
 * process, by a stray pointer or on purpose. Neither side reads the
 * geometry from the header after it started (pl_ring_attach, the reader's
 * copy), so no write there moves anybody's stores outside the ring. A
 * slot word the protocol never leaves where it is found (another lap's, a
 * free word at a position head has passed, the previous lap's where the
 * consumer has read that position) is a stray one: the consumer skips it
 * and counts it (rd->corrupt); a producer that finds one at head, head
 * standing still for PL_ODD_SPINS looks, claims the slot over it with a
 * CAS (the consumer then finds the next lap's word there, and skips that
 * position). head out of [tail, tail + nslots] is put back to the tail.
 * So a stray write costs the events it hit, never a wait without end: no
 * word can make the reader stop, and none can make a producer wait for a
 * room the consumer has already made.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
/* looks at an impossible slot word, head standing still, before a
 * producer takes the slot over it (P5) */
#define PL_ODD_SPINS 4096

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

int pl_ring_attach(struct pl_ring *r, struct pl_shm *shm, uint64_t map_size)
{
	/* each field read once: the checks and the use see the same value */
	uint64_t n = __atomic_load_n(&shm->nslots, __ATOMIC_RELAXED);
	uint64_t off = __atomic_load_n(&shm->slots_offset, __ATOMIC_RELAXED);
	uint64_t wake = __atomic_load_n(&shm->wakeup_at, __ATOMIC_RELAXED);
	uint32_t shift = __atomic_load_n(&shm->shift, __ATOMIC_RELAXED);

	memset(r, 0, sizeof(*r));
	if (n < 2 || (n & (n - 1)) || shift != (uint32_t)__builtin_ctzll(n) ||
	    off < sizeof(*shm) || off % PL_CACHELINE || off > map_size ||
	    n > (map_size - off) / sizeof(struct mt_event)) {
		return -1;
	}
	r->shm = shm;
	r->slots = (struct mt_event *)((char *)shm + off);
	r->nslots = n;
	r->mask = n - 1;
	r->shift = shift;
	r->wakeup_at = wake && wake <= n ? wake : n / 8;
	return 0;
}

static void futex_wake(uint32_t *word, int n)
{
	/* not FUTEX_PRIVATE: the word is shared between processes */
	syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
}

static long futex_wait(uint32_t *word, uint32_t val, int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	return syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* Ring the consumer's doorbell if it said it sleeps. Its watcher thread
 * waits on the word; a quiet producer leaves it to the watcher's tick. */
static void wake_consumer(const struct pl_ring *r)
{
	struct pl_shm *shm = r->shm;

	if (r->quiet || !__atomic_load_n(&shm->sleeping, __ATOMIC_RELAXED) ||
	    !__atomic_exchange_n(&shm->sleeping, 0, __ATOMIC_ACQ_REL)) {
		return;
	}
	__atomic_fetch_add(&shm->doorbell, 1, __ATOMIC_SEQ_CST);
	futex_wake(&shm->doorbell, 1);
}

/* Has memtrack gone? Its heartbeat, not its pid: a pid means nothing in
 * another pid namespace, and may belong to another process by now. The
 * beat is compared with itself over the waiter's own time, so a time
 * namespace's offsets do not matter either. */
struct watch {
	uint32_t beat;
	uint64_t since; /* ns, the waiter's clock; 0: not started */
};

static int consumer_gone(struct pl_shm *shm, struct watch *w, uint64_t now)
{
	uint32_t b;

	if (__atomic_load_n(&shm->dead, __ATOMIC_ACQUIRE) == PL_DEAD) {
		return 1;
	}
	b = __atomic_load_n(&shm->beat, __ATOMIC_ACQUIRE);
	if (!w->since || b != w->beat) {
		w->beat = b;
		w->since = now;
		return 0;
	}
	if (now - w->since < (uint64_t)PL_GONE_MS * 1000000u) {
		return 0;
	}
	/* if memtrack was only frozen, it says how many gave up */
	__atomic_fetch_add(&shm->gave_up, 1, __ATOMIC_RELAXED);
	return 1;
}

/* The slot of position h (lap) holds w, the previous lap's event, which
 * the consumer has not read yet: the ring is full. The previous lap's word
 * where the consumer says it has read that position is a stray one. */
static int is_full(const struct pl_ring *r, uint64_t h, uint64_t w,
		   uint32_t lap)
{
	return pl_word_lap(w) == lap - 1 && pl_word_state(w) != PL_FREE &&
	       h >= r->nslots &&
	       __atomic_load_n(&r->shm->tail, __ATOMIC_ACQUIRE) <= h - r->nslots;
}

static int full(const struct pl_ring *r, uint64_t h, struct mt_event *slot,
		uint32_t lap)
{
	return is_full(r, h,
		       __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE), lap);
}

/* Wait until the slot of position h is free again or the consumer has
 * gone (-1). */
static int wait_for_room(const struct pl_ring *r, uint64_t h,
			 struct mt_event *slot, uint32_t lap)
{
	struct pl_shm *shm = r->shm;
	struct watch gone = { 0, 0 };
	uint64_t t0;
	int i, ret = 0;

	for (i = 0; i < PL_SPINS; i++) {
		cpu_relax();
		if (!full(r, h, slot, lap)) {
			return 0;
		}
	}
	t0 = pl_now_ns();
	__atomic_fetch_add(&shm->waiters, 1, __ATOMIC_SEQ_CST);
	for (i = 0;; i++) {
		uint32_t seq = __atomic_load_n(&shm->space_seq,
					       __ATOMIC_SEQ_CST);

		if (!full(r, h, slot, lap)) {
			break;
		}
		if (r->quiet) {
			/* no futex: spin, and look at the clock now and
			 * then (the vDSO's: no system call) */
			cpu_relax();
			if (i % 1024 || !consumer_gone(shm, &gone,
						       pl_now_ns())) {
				continue;
			}
			ret = -1;
			break;
		}
		if (consumer_gone(shm, &gone, pl_now_ns())) {
			ret = -1;
			break;
		}
		/* it may sleep until its tick: tell it we wait */
		__atomic_store_n(&shm->sleeping, 1, __ATOMIC_RELAXED);
		wake_consumer(r);
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

int pl_ring_put(struct pl_shm *shm, const struct mt_event *ev, uint32_t tid)
{
	struct pl_ring r;

	if (pl_ring_attach(&r, shm, shm->map_size)) {
		return -1;
	}
	return pl_ring_put_ex(&r, ev, tid, NULL, 0);
}

int pl_ring_put_r(const struct pl_ring *r, const struct mt_event *ev,
		  uint32_t tid)
{
	return pl_ring_put_ex(r, ev, tid, NULL, 0);
}

/*
 * The word w of the slot of position h (lap) is none that the protocol
 * leaves there while head is h: a stray write went over it (P5). True
 * when it stayed so, with head at h, for PL_ODD_SPINS looks: then the
 * caller may claim the slot over it.
 */
static int stray_word(const struct pl_ring *r, uint64_t h, uint64_t w,
		      uint32_t *odd)
{
	if (++*odd < PL_ODD_SPINS) {
		cpu_relax();
		return 0;
	}
	*odd = 0;
	return __atomic_load_n(&r->shm->head, __ATOMIC_ACQUIRE) == h &&
	       __atomic_load_n(slot_word(&r->slots[h & r->mask]),
			       __ATOMIC_ACQUIRE) == w;
}

int pl_ring_put_ex(const struct pl_ring *r, const struct mt_event *ev,
		   uint32_t tid, int *claiming, int nowait)
{
	struct pl_shm *shm = r->shm;
	struct mt_event *slots = r->slots;
	uint64_t mask = r->mask, h, w;
	uint32_t shift = r->shift, odd = 0;
	int was = claiming ? *claiming : 0;

	for (;;) {
		struct mt_event *slot;
		uint32_t lap, wl;
		int ours = 0;

		h = __atomic_load_n(&shm->head, __ATOMIC_ACQUIRE);
		slot = &slots[h & mask];
		lap = (uint32_t)(h >> shift);
		w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);
		wl = pl_word_lap(w);
		if (wl == lap && pl_word_state(w) == PL_FREE) {
			ours = 1;
		} else if (wl == lap) {
			/* claimed by another: help it move head on */
			__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			continue;
		} else if (is_full(r, h, w, lap)) {
			if (nowait) {
				return PL_RING_FULL;
			}
			if (wait_for_room(r, h, slot, lap) < 0) {
				return -1;
			}
			continue;
		} else if ((int32_t)(wl - lap) > 0 &&
			   pl_word_state(w) == PL_FREE) {
			/* the consumer skipped this position (its writer died
			 * between claim and moving head on): move head on */
			__atomic_compare_exchange_n(&shm->head, &h, h + 1, 0,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			continue;
		} else if (stray_word(r, h, w, &odd)) {
			/* a word no writer of the protocol left (P5), or the
			 * previous lap's where the consumer says it has read
			 * that position already: take the slot over it */
			ours = 1;
		}
		if (!ours) {
			continue; /* head moved on since we read it: again */
		}
		{
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
				    r->wakeup_at) {
				wake_consumer(r);
			}
			return 0;
		}
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
	rd->nslots = shm->nslots;
	rd->mask = shm->nslots - 1;
	rd->shift = shm->shift;
	rd->tail = __atomic_load_n(&shm->tail, __ATOMIC_ACQUIRE);
	rd->published = rd->tail;
}

const struct mt_event *pl_ring_peek(struct pl_reader *rd)
{
	return pl_ring_peek_at(rd, 0);
}

const struct mt_event *pl_ring_peek_at(struct pl_reader *rd, uint64_t i)
{
	uint64_t pos = rd->tail + i;
	struct mt_event *slot = &rd->slots[pos & rd->mask];
	uint32_t lap = (uint32_t)(pos >> rd->shift);
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
	uint32_t lap = (uint32_t)(rd->tail >> rd->shift);

	__atomic_store_n(slot_word(slot), pl_word(lap + 1, PL_FREE, 0),
			 __ATOMIC_RELEASE);
	rd->tail++;
	rd->stall_since = 0;
}

int pl_ring_take(struct pl_reader *rd, const struct mt_event *e,
		 struct mt_event *out)
{
	uint64_t ns;

	/* one copy, then checks on the copy: the slot may change under us */
	memcpy(out, e, sizeof(*out));
	ns = out->reserved[1]; /* a producer's pid namespace, if not ours */
	out->reserved[0] = 0;
	out->reserved[1] = 0;
	pl_ring_advance(rd);
	if (out->kind >= MT_EV_KIND_COUNT || out->reserved0 ||
	    (out->flags & ~(MT_EVF_OLD_ADDR | MT_EVF_STACK))) {
		/* not an event a producer writes (P5) */
		rd->corrupt++;
		return -1;
	}
	if (__builtin_expect(ns != 0, 0) && rd->xlate) {
		rd->xlate(rd->xlate_ctx, ns, out);
	}
	return 0;
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
	__atomic_store_n(&rd->published, rd->tail, __ATOMIC_RELEASE);
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

/* Give up the slot at the tail: FREE for the next lap when its word is
 * still w (else whoever changed it keeps it), and move past it. */
static void skip(struct pl_reader *rd, struct mt_event *slot, uint64_t w,
		 uint32_t lap)
{
	uint64_t h = rd->tail;

	__atomic_compare_exchange_n(slot_word(slot), &w,
				    pl_word(lap + 1, PL_FREE, 0), 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	/* its writer may have died before moving head past it */
	__atomic_compare_exchange_n(&rd->shm->head, &h, h + 1, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	rd->tail++;
	rd->stall_since = 0;
}

/* Has the slot at the tail been in this state since stall_ns? */
static int stalled(struct pl_reader *rd, uint64_t now, uint64_t stall_ns)
{
	if (!rd->stall_since || rd->stall_pos != rd->tail) {
		rd->stall_pos = rd->tail;
		rd->stall_since = now;
		return 0;
	}
	return now - rd->stall_since >= stall_ns;
}

int pl_ring_unstall(struct pl_reader *rd, uint64_t now, uint64_t stall_ns)
{
	struct mt_event *slot = &rd->slots[rd->tail & rd->mask];
	uint32_t lap = (uint32_t)(rd->tail >> rd->shift);
	uint64_t w = __atomic_load_n(slot_word(slot), __ATOMIC_ACQUIRE);
	uint32_t wl = pl_word_lap(w), ws = pl_word_state(w);
	uint64_t h = __atomic_load_n(&rd->shm->head, __ATOMIC_ACQUIRE);

	if (h - rd->tail > rd->nslots) {
		/* behind the tail, or more than a ring ahead: a write over
		 * head. Producers claim from where the reader is again. */
		__atomic_compare_exchange_n(&rd->shm->head, &h, rd->tail, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
		rd->corrupt++;
		return 0;
	}
	if (wl == lap && ws == PL_FREE) {
		/* empty, unless head is past it: no producer moves head past
		 * a slot before it claims it, so a word went over the claim
		 * (or over head) */
		if (h == rd->tail) {
			rd->stall_since = 0;
			return 0;
		}
		if (!stalled(rd, now, stall_ns)) {
			return 0;
		}
		skip(rd, slot, w, lap);
		rd->corrupt++;
		return 1;
	}
	if (wl == lap + 1) {
		/* a producer took the slot over a stray word (P5): this
		 * position's event is lost; the slot is the next lap's */
		rd->tail++;
		rd->stall_since = 0;
		rd->corrupt++;
		return 1;
	}
	if (wl != lap) {
		/* no state of the protocol: a stray write */
		skip(rd, slot, w, lap);
		rd->corrupt++;
		return 1;
	}
	if (ws != PL_CLAIMED) {
		rd->stall_since = 0;
		return 0; /* committed: readable */
	}
	if (!stalled(rd, now, stall_ns) || thread_alive(pl_word_tid(w))) {
		return 0;
	}
	/* I3: the writer is dead; a CAS, in case it committed just now */
	if (!__atomic_compare_exchange_n(slot_word(slot), &w,
					 pl_word(lap + 1, PL_FREE, 0), 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		return 0;
	}
	skip(rd, slot, pl_word(lap + 1, PL_FREE, 0), lap);
	rd->abandoned++;
	return 1;
}

uint64_t pl_ring_unread(const struct pl_reader *rd)
{
	uint64_t n = __atomic_load_n(&rd->shm->head, __ATOMIC_ACQUIRE) -
		     rd->tail;

	/* head is the producers' word: never more than a ring of it */
	return n > rd->nslots ? rd->nslots : n;
}

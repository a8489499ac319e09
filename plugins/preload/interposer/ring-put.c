/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/ring-put.c - the producers' half of the
 * event ring (ring.h has the protocol, I1..I4): runs in every traced
 * process, in every thread and signal handler that allocates.
 *
 * What a producer trusts of the shared mapping, which every other traced
 * process can write too:
 *   W1. Its own copy of the geometry. pl_ring_attach() reads nslots,
 *       shift, slots_offset and wakeup_at once, checks them against the
 *       size of the mapping it made, and keeps them in struct pl_ring: no
 *       later write to the header moves this process's stores outside
 *       the ring.
 *   W2. No word at head makes it wait for ever. A slot word the protocol
 *       never leaves at head (another lap's, or the previous lap's where
 *       the consumer says it has read that position) is a stray one: with
 *       head standing still for PL_ODD_SPINS looks, the producer claims
 *       the slot over it with a CAS, and the reader skips that position
 *       (source/ring-read.c, T4).
 *   W3. A wait for room ends. The producer waits only while the ring is
 *       full, and stops waiting when the consumer says it has gone
 *       (shm->dead) or its heartbeat stands still for PL_GONE_MS of the
 *       producer's own time; it then goes on untraced. A word written
 *       over the heartbeat can end the recording of the process that
 *       waits, never its run.
 */
#include "config.h"

#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "ring-put.h"

/* spins before sleeping; each is a pause instruction's worth */
#define PL_SPINS 200
/* longest futex sleep: how often a waiting producer checks the consumer */
#define PL_WAIT_SLICE_MS 100
/* looks at an impossible slot word, head standing still, before a
 * producer takes the slot over it (W2) */
#define PL_ODD_SPINS 4096

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

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

int pl_ring_hello_wait(const struct pl_ring *r, uint32_t seq)
{
	struct pl_shm *shm = r->shm;
	uint32_t *ack = &shm->hello_ack[seq % PL_HELLO_ACKS];
	uint64_t end = pl_now_ns() + PL_HELLO_WAIT_MS * 1000000ull;

	if (r->quiet) {
		return -1;
	}
	/* the consumer reads it now, not at its next tick */
	if (__atomic_exchange_n(&shm->sleeping, 0, __ATOMIC_ACQ_REL)) {
		__atomic_fetch_add(&shm->doorbell, 1, __ATOMIC_SEQ_CST);
		futex_wake(&shm->doorbell, 1);
	}
	for (;;) {
		uint32_t v = __atomic_load_n(ack, __ATOMIC_ACQUIRE);

		if (v == seq) {
			return 0;
		}
		if (pl_now_ns() >= end ||
		    __atomic_load_n(&shm->dead, __ATOMIC_RELAXED) == PL_DEAD) {
			return -1;
		}
		futex_wait(ack, v, 5);
	}
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
		       __atomic_load_n(pl_slot_word(slot), __ATOMIC_ACQUIRE), lap);
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
 * leaves there while head is h: a stray write went over it (W2). True
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
	       __atomic_load_n(pl_slot_word(&r->slots[h & r->mask]),
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
		w = __atomic_load_n(pl_slot_word(slot), __ATOMIC_ACQUIRE);
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
			/* a word no writer of the protocol left (W2), or the
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
				    pl_slot_word(slot), &w,
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
			__atomic_store_n(pl_slot_word(slot),
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

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/ring-read.c - the consumer's half of the event
 * ring (ring.h has the protocol, I1..I4): memtrack's poller thread reads
 * what every traced process wrote.
 *
 * Every byte this file reads can have been written by any traced process,
 * by a stray pointer or on purpose (an unprivileged user of a root
 * memtrack). It is input, never state; the rules below keep the reader
 * from being led by it, and each names the function that keeps it.
 *
 *   T1. The geometry is ours. pl_reader_init() copies nslots, shift and
 *       the slots' place before the command runs; no field of the header
 *       is read for an address later. Every slot the reader touches is
 *       its own position (rd->tail + i) masked by its own mask.
 *   T2. A state word is read once per look and compared whole with the
 *       words the protocol can leave at that position (COMMITTED or READY
 *       of its lap, pl_ring_peek_at()); any other word is not an event.
 *   T3. An event is copied, then checked (pl_ring_take()): a slot written
 *       while it is read cannot pass the check and change after it. A copy
 *       no producer writes (an unknown kind, a flag or a reserved byte no
 *       hook sets) is counted in rd->corrupt and not emitted: it never
 *       fails the batch of good events around it.
 *   T4. No word stops the reader (pl_ring_unstall()). A word of no state
 *       of the protocol, or of the next lap (a producer took the slot over
 *       a stray word, ring-put.c W2), is skipped and counted at once; a
 *       free word at a position head has passed, after stall_ns; a claim,
 *       only when its writer's thread is gone (I3). A live writer is
 *       waited for between polls, never in a blocking call.
 *   T5. The producers' counters are clamped, never followed: head out of
 *       [tail, tail + nslots] is put back to the tail and counted, and
 *       pl_ring_unread() never says more than a ring. shm->tail is
 *       published from rd->tail, never read back (the watcher puts it back
 *       from rd->published when a process wrote over it).
 *   T6. Metadata chunks are handed on unread (pl_ring_take_meta()) to
 *       meta.c, which bounds their reassembly in memory and time (its
 *       opening comment); their bytes are data, so no timestamp of theirs
 *       is converted.
 *
 * What the reader writes into the mapping: state words (a slot given back
 * for the next lap, READY once a TSC timestamp is converted in place),
 * that timestamp, head (T4, T5) and the tail. A process that races those
 * writes can only spoil its own events, which T2..T4 then skip.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "ring-read.h"
#include "tsc.h"

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
	/* zero memory (ring-read.h): every slot is FREE for lap 0 already.
	 * Writing the words would fault the whole ring in (16 MiB, 4096
	 * pages by default) before the command starts; its producers touch
	 * each page when they first reach it instead. */
	_Static_assert(PL_FREE == 0, "a zero word is a free slot of lap 0");
}

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
	uint64_t w;

	/* the lines producers wrote on another core: ask for a few ahead
	 * (a prefetch never faults, and one of a slot not written yet
	 * only costs a line taken back) */
	__builtin_prefetch(&rd->slots[(pos + 8) & rd->mask], 1);
	w = __atomic_load_n(pl_slot_word(slot), __ATOMIC_ACQUIRE);

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
		__atomic_store_n(pl_slot_word(slot),
				 pl_word(lap, PL_READY, pl_word_tid(w)),
				 __ATOMIC_RELAXED);
	}
	return slot;
}

void pl_ring_advance(struct pl_reader *rd)
{
	struct mt_event *slot = &rd->slots[rd->tail & rd->mask];
	uint32_t lap = (uint32_t)(rd->tail >> rd->shift);

	__atomic_store_n(pl_slot_word(slot), pl_word(lap + 1, PL_FREE, 0),
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
		/* not an event a producer writes (T3) */
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

	__atomic_compare_exchange_n(pl_slot_word(slot), &w,
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
	uint64_t w = __atomic_load_n(pl_slot_word(slot), __ATOMIC_ACQUIRE);
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
		/* a producer took the slot over a stray word (ring-put.c, W2): this
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
	if (!__atomic_compare_exchange_n(pl_slot_word(slot), &w,
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

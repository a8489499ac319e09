/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/syscalls.c - syscalls=auto|bpf|libc: where the
 * preload source's mmap, munmap, mremap and brk events come from. As root,
 * with BPF working (common/bpf-check.c, the eBPF source's checks), they come
 * from syscalls.bpf.c, the eBPF source's own tracepoints: every call, the
 * allocator's included, exactly as --source ebpf records them, and the
 * interposer records none (shm->syscalls_bpf). Otherwise from the
 * interposer's hooks of libc's functions.
 *
 * Two rings, one stream. The interposer's ring (P) and the BPF ring (B)
 * are each in the order their records were claimed; both stamp
 * CLOCK_MONOTONIC, and a thread's events are stamped in the order it makes
 * them. So the output is the staged records of both in timestamp order
 * (each staging array is kept sorted), but a record leaves only when no
 * record of its thread that comes before it can still appear:
 *
 *  - A P record was committed after every earlier B record of its thread
 *    was reserved. So once B has been read past B's producer position
 *    taken after that P record was stamped, all of them are staged (the
 *    pull's need, compared with B's consumer position). The position is
 *    the one noted at the first pull at least CLOCK_SLACK_NS after the
 *    stamp (struct notes), or, without one, the position after the
 *    record was read.
 *  - Likewise a B record waits until P has been read past P's head taken
 *    after it was stamped.
 *  - A safe record may still have a staged predecessor that is not safe
 *    yet: nothing at or after the earliest timestamp of an unsafe record
 *    leaves (the horizon, kept in constant time: struct pulls).
 *
 * Exact for each thread's order; across threads it is timestamp order,
 * which is all the clock gives.
 *
 * Room: when the reader falls behind, both rings hold a backlog (P up to
 * a whole ring, 65,536 records by default; B whatever the syscalls made
 * meanwhile). Needs taken from the notes ask each ring to be read only as
 * far as the other's records are old, so what is staged is the records
 * between the two rings' times, not both backlogs. The reader stages more
 * (a run of each ring at a time) only when nothing staged may leave, and
 * a staging array grows as needed, up to twice its ring's records plus
 * STAGE_CAP. One approximation: should an array reach its limit anyway (a
 * writer of P preempted between its claim and its commit while records
 * pile up), the earliest records leave regardless, said once.
 *
 * drain() reads what both rings held when called (B's position taken
 * first: a B record's predecessors in P are then inside P's) and writes
 * it all in timestamp order.
 *
 * The interposer's libraries (libgcc_s.so.1): ld.so maps them into every
 * traced process, so an eBPF recording has their Mmap records only when
 * the program needs them itself (C++). BPF tags them (reserved0, see
 * syscalls.bpf.c); such a record waits, unsafe, for the verdict the
 * interposer of that process image writes when it attaches (selfdeps.c:
 * the first one of that pid stamped after the record), and stays only
 * when the program needs the library too. A process that never attaches
 * (exec'd without LD_PRELOAD) keeps them after HOLD_NS.
 *
 * Lossless: producers are not stopped here (there are no uprobes to hold
 * a process at), so the BPF ring must hold what they write while the
 * poller is away, and while the staged P records are older than its
 * own: 16 MiB at least (233k records), the shared ring's size when that
 * is larger. The most tests/progs/sys-mix left unread (-vv says it at the
 * end): 1.1-1.6 MiB; 3.2-4.1 MiB with 8 at once in an ASan build, whose
 * poller is slow. (Staging B records early does not help: they wait for
 * all of P's backlog, and the staging arrays fill instead.) 32 MiB cost
 * ~9 ms more of memtrack's start and exit (the kernel zeroes the ring and
 * maps it twice), 8 MiB was too close. A reservation that fails anyway
 * counts in dropped, which the host reports, exiting 1.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "selfdeps.h"
#include "syscalls.h"

#ifdef MT_PRELOAD_BPF

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/skel_internal.h>

#include "bpf-check.h"
#include "bpf-test-knobs.h"
#include "detacher.h"
#include "kernel-dev.h"
#include "syscalls.skel.h"
/* bpftool's generated code subtracts void pointers */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "syscalls.lskel.h"
#pragma GCC diagnostic pop

#define NAME "preload"
/* the program's syscall tracepoints (common/bpf/syscall-events.bpf.h) */
#define PL_TP_MAX 8
#define MIN_BPF_RING (16u << 20)
/* first size of a staging array, and what its limit adds to the ring's */
#define STAGE_CAP 16384u
/* records forced out at once when a staging array is at its limit */
#define FORCE_RUN 1024u
/* records staged at once from one ring before reading the other */
#define PULL_RUN 4096u
/* P records passed at once by the fast path (pass_p()) */
#define PASS_RUN 256u
#define STALL_NS (20 * 1000000ull)
#define DRAIN_WAIT_NS (1000 * 1000000ull)
#define PROC_PID_INIT_INO 0xEFFFFFFCu
/* a tagged record without a verdict is kept after this */
#define HOLD_NS (1000 * 1000000ull)
/* self_files values (syscalls.bpf.c) */
#define SELF_OWN 1
#define SELF_DEP 2

#define slog(sc, level, ...) \
	(sc)->host->log((sc)->host, level, NAME, __VA_ARGS__)

struct staged {
	struct mt_event ev;
	uint32_t held; /* SELF_DEP + i: waits for a verdict */
	uint32_t drop; /* the verdict: not the program's */
};

/*
 * The pulls of one ring whose records may not leave yet, for the horizon:
 * each pull's position to read past in the other ring, and the earliest
 * timestamp among its records. Positions never go back from pull to
 * pull (pulls_add()), so pulls become safe in order, from the front. A
 * pull whose earliest timestamp is not below a later pull's is dropped
 * when that one comes: the later one becomes safe no sooner. The
 * front then holds the earliest timestamp of every unsafe record, in
 * constant time per pull. When the queue is full a pull joins the last
 * one (its position only moves on): later, never wrong.
 */
#define PULLS_CAP 1024u
struct pulls {
	struct pull {
		uint64_t need, ts;
	} v[PULLS_CAP];
	size_t head, n;
	uint64_t last; /* the last need added: needs never go back */
};

/*
 * When each ring's producer position was where: the poller notes both
 * with the time (taken first) at every pull. A record stamped t needs the
 * other ring read only up to the position noted at the first time at or
 * after t + CLOCK_SLACK_NS: its thread's records of the other ring that
 * come before it were reserved (B) or claimed (P) before t, so below that
 * position. Without such a note yet, the position now. So each ring is
 * read ahead only as far as the other ring's records are old, not by
 * the other ring's whole backlog: when the reader falls behind both (a
 * slow machine, sanitizers), what is staged stays the records between
 * the two rings' times. CLOCK_SLACK_NS covers the TSC conversion's error
 * against the kernel's clock (a few microseconds, test-preload-ring).
 */
#define NOTES_CAP 4096u
#define CLOCK_SLACK_NS (1000 * 1000ull)
struct notes {
	struct note {
		uint64_t ns, b_prod, p_head;
	} v[NOTES_CAP];
	size_t head, n;
};

/* sorted by timestamp, stable: v[head .. head + n) of cap; grows up to
 * limit records */
struct stage {
	struct staged *v;
	size_t head, n, cap, limit;
	size_t peak; /* most records held at once */
};

struct pl_syscalls {
	const struct mt_host *host;
	struct pl_shm *shm;
	/* the program, loaded from the light skeleton (lskel) or, where
	 * that failed, from libbpf's: see load() */
	struct syscalls *lskel;
	struct syscalls_bpf *skel;
	struct syscalls_bpf__bss *bss; /* either's .bss (the same layout) */
	int fd_events, fd_tracked, fd_self_files, fd_nsids;
	int tp_links[PL_TP_MAX]; /* the lskel's tracepoint links */
	int ntp;
	size_t ring_size;
	uint64_t b_peak;  /* most bytes of B seen unread at a pull */
	size_t page;
	uint64_t *cons;       /* B's consumer position (ours to write) */
	const uint64_t *prod; /* B's producer position */
	const uint8_t *data;  /* B's data pages, mapped twice */
	uint64_t cons_pos;
	int epfd;
	int detacher; /* our end of the detacher's socket, or -1 */
	int forced; /* a limit was reached: said once */
	struct stage sp, sb; /* staged records of P and of B */
	struct pulls qp, qb; /* their pulls not safe yet */
	struct notes notes;  /* where the producers were when */
	size_t nheld;        /* records of sb waiting for a verdict */
	/* metadata chunks of P (stacks, mappings: meta.c) go here as they
	 * are read, never staged: their bytes are no timestamp to sort by */
	pl_ring_meta_fn take_meta;
	void *meta_ctx;
};

static int stage_init(struct stage *s, size_t ring_records)
{
	s->cap = STAGE_CAP;
	s->limit = 2 * ring_records + STAGE_CAP;
	s->v = malloc(s->cap * sizeof(*s->v));
	return s->v ? 0 : -ENOMEM;
}

/* Room for one more record: 1, or 0 at the limit (or out of memory). */
static int stage_room(struct stage *s)
{
	struct staged *v;
	size_t cap;

	if (s->n >= s->limit) {
		return 0;
	}
	if (s->head + s->n < s->cap) {
		return 1;
	}
	if (s->n <= s->cap / 2 || s->cap >= s->limit) {
		/* n < limit <= cap here: head > 0 */
		memmove(s->v, s->v + s->head, s->n * sizeof(*s->v));
		s->head = 0;
		return 1;
	}
	cap = s->cap * 2 < s->limit ? s->cap * 2 : s->limit;
	v = realloc(s->v, cap * sizeof(*s->v));
	if (!v) {
		s->limit = s->n; /* the limit is here, then */
		return 0;
	}
	s->v = v;
	s->cap = cap;
	return 1;
}

static int stage_full(struct stage *s)
{
	return !stage_room(s);
}

static struct staged *stage_at(struct stage *s, size_t i)
{
	return &s->v[s->head + i];
}

/* after stage_room() said 1 */
static void stage_push(struct stage *s, const struct mt_event *e)
{
	size_t i;

	i = s->n++;
	if (s->n > s->peak) {
		s->peak = s->n;
	}
	/* nearly always in order already: insertion from the back */
	while (i > 0 && stage_at(s, i - 1)->ev.timestamp > e->timestamp) {
		*stage_at(s, i) = *stage_at(s, i - 1);
		i--;
	}
	stage_at(s, i)->ev = *e;
	stage_at(s, i)->held = e->reserved0;
	stage_at(s, i)->drop = 0;
	stage_at(s, i)->ev.reserved0 = 0;
}

static void stage_pop(struct stage *s)
{
	s->head++;
	if (--s->n == 0) {
		s->head = 0;
	}
}

static struct pull *pull_at(struct pulls *q, size_t i)
{
	return &q->v[(q->head + i) & (PULLS_CAP - 1)];
}

static void pulls_add(struct pulls *q, uint64_t need, uint64_t ts)
{
	/* a pull of records older than the last one's may have a lower
	 * need: kept at the last one's, so that pulls become safe in
	 * order (later than needed, never sooner) */
	if (need < q->last) {
		need = q->last;
	}
	q->last = need;
	while (q->n && pull_at(q, q->n - 1)->ts >= ts) {
		q->n--;
	}
	if (q->n == PULLS_CAP) {
		pull_at(q, q->n - 1)->need = need;
		return;
	}
	pull_at(q, q->n)->need = need;
	pull_at(q, q->n)->ts = ts;
	q->n++;
}

/* The earliest timestamp of a pull not safe once the other ring has been
 * read up to pos, or UINT64_MAX. */
static uint64_t pulls_min(struct pulls *q, uint64_t pos)
{
	while (q->n && pull_at(q, 0)->need <= pos) {
		q->head = (q->head + 1) & (PULLS_CAP - 1);
		q->n--;
	}
	return q->n ? pull_at(q, 0)->ts : UINT64_MAX;
}

/* ------------------------------------------------------------------ */
/* Pulling from the rings into the staging arrays                      */
/* ------------------------------------------------------------------ */

static uint64_t p_head(struct pl_reader *rd)
{
	return pl_ring_unread(rd) + rd->tail;
}

static uint64_t b_prod(struct pl_syscalls *sc)
{
	return __atomic_load_n(sc->prod, __ATOMIC_ACQUIRE);
}

static struct note *note_at(struct notes *q, size_t i)
{
	return &q->v[(q->head + i) & (NOTES_CAP - 1)];
}

/* Note where both producers are now (the time first), once before each
 * pull of both rings; the oldest note goes when there is no room: its
 * records then wait for a later one. */
static void note_now(struct pl_syscalls *sc, struct pl_reader *rd)
{
	struct notes *q = &sc->notes;
	struct note *n;
	uint64_t ns = pl_now_ns();

	if (q->n == NOTES_CAP) {
		q->head = (q->head + 1) & (NOTES_CAP - 1);
		q->n--;
	}
	n = note_at(q, q->n);
	n->ns = ns;
	n->b_prod = b_prod(sc);
	n->p_head = p_head(rd);
	q->n++;
}

/* The first note at or after ts + CLOCK_SLACK_NS, or NULL. */
static const struct note *note_after(struct notes *q, uint64_t ts)
{
	size_t lo = 0, hi = q->n;

	if (ts > UINT64_MAX - CLOCK_SLACK_NS) {
		return NULL;
	}
	ts += CLOCK_SLACK_NS;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (note_at(q, mid)->ns < ts) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo < q->n ? note_at(q, lo) : NULL;
}

/* P records up to position end (0: any), at most lim; returns how many,
 * or a negative errno from a metadata chunk. A chunk leaves at once, ahead
 * of the events staged before it: metadata only has to precede the events
 * that use it, and chunks stay in ring order among themselves. */
static ssize_t pull_p(struct pl_syscalls *sc, struct pl_reader *rd,
		      struct mt_emitter *em, uint64_t end, size_t lim)
{
	size_t n = 0;
	uint64_t ts = UINT64_MAX, last = 0;

	while (n < lim && !stage_full(&sc->sp) && (!end || rd->tail < end)) {
		const struct mt_event *e = pl_ring_peek(rd);
		struct mt_event ev;

		if (!e) {
			if (pl_ring_unstall(rd, pl_now_ns(), STALL_NS)) {
				continue;
			}
			break;
		}
		if (e->kind == PL_META_KIND) {
			int err = pl_ring_take_meta(rd, e, sc->take_meta,
						    sc->meta_ctx, em);

			if (err) {
				return err;
			}
			continue;
		}
		if (pl_ring_take(rd, e, &ev)) {
			continue; /* counted: no event (ring-read.c, T3) */
		}
		if (ev.timestamp < ts) {
			ts = ev.timestamp;
		}
		if (ev.timestamp > last) {
			last = ev.timestamp;
		}
		stage_push(&sc->sp, &ev);
		n++;
	}
	pl_ring_publish(rd);
	if (n) {
		/* B's producer position when the newest of them was made
		 * (struct notes), or after they were read: B reserved before
		 * their commits is below it */
		const struct note *at = note_after(&sc->notes, last);

		pulls_add(&sc->qp, at ? at->b_prod : b_prod(sc), ts);
	}
	return (ssize_t)n;
}

/* B records up to position end (0: any), at most lim; returns how many. */
static size_t pull_b(struct pl_syscalls *sc, struct pl_reader *rd,
		     uint64_t end, size_t lim)
{
	uint64_t prod = b_prod(sc), mask = sc->ring_size - 1;
	uint64_t ts = UINT64_MAX, last = 0;
	size_t n = 0;

	if (prod - sc->cons_pos > sc->b_peak) {
		sc->b_peak = prod - sc->cons_pos;
	}

	while (n < lim && !stage_full(&sc->sb) && sc->cons_pos < prod &&
	       (!end || sc->cons_pos < end)) {
		const uint8_t *hdr = sc->data + (sc->cons_pos & mask);
		uint32_t len = __atomic_load_n((const uint32_t *)hdr,
					       __ATOMIC_ACQUIRE);

		if (len & BPF_RINGBUF_BUSY_BIT) {
			break; /* being written */
		}
		if (!(len & BPF_RINGBUF_DISCARD_BIT) &&
		    len >= sizeof(struct mt_event)) {
			struct mt_event ev;

			memcpy(&ev, hdr + BPF_RINGBUF_HDR_SZ, sizeof(ev));
			if (ev.timestamp < ts) {
				ts = ev.timestamp;
			}
			if (ev.timestamp > last) {
				last = ev.timestamp;
			}
			sc->nheld += ev.reserved0 != 0;
			stage_push(&sc->sb, &ev);
			n++;
		}
		len &= ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		sc->cons_pos += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
		__atomic_store_n(sc->cons, sc->cons_pos, __ATOMIC_RELEASE);
	}
	if (n) {
		/* P's head when the newest of them was made, or after they
		 * were read */
		const struct note *at = note_after(&sc->notes, last);

		pulls_add(&sc->qb, at ? at->p_head : p_head(rd), ts);
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* The merge                                                           */
/* ------------------------------------------------------------------ */

static void unhold(struct pl_syscalls *sc, struct staged *s)
{
	if (s->held) {
		s->held = 0;
		sc->nheld--;
	}
}

/* A tagged record: kept or dropped once its process has a verdict. */
static void decide(struct pl_syscalls *sc, struct staged *s)
{
	uint32_t n = __atomic_load_n(&sc->shm->verdict_next, __ATOMIC_ACQUIRE);
	uint64_t best_ts = 0;
	uint32_t k, best_shared = 0;
	int found = 0;

	if (!s->held) {
		return;
	}
	/* a ring that producers write over (selfdeps.c), the newest first:
	 * a verdict counts when its claim number is the same before and
	 * after reading it */
	for (k = 0; k < n && k < PL_VERDICTS; k++) {
		const struct pl_verdict *v =
			&sc->shm->verdicts[(n - 1 - k) % PL_VERDICTS];
		uint32_t r = __atomic_load_n(&v->ready, __ATOMIC_ACQUIRE);
		int32_t pid = __atomic_load_n(&v->pid, __ATOMIC_RELAXED);
		uint64_t ts = __atomic_load_n(&v->ts, __ATOMIC_RELAXED);
		uint32_t shared = __atomic_load_n(&v->shared, __ATOMIC_RELAXED);

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!r || __atomic_load_n(&v->ready, __ATOMIC_RELAXED) != r) {
			continue;
		}
		if (pid == s->ev.pid && ts > s->ev.timestamp &&
		    (!found || ts < best_ts)) {
			best_ts = ts;
			best_shared = shared;
			found = 1;
		}
	}
	if (found) {
		s->drop = !((best_shared >> (s->held - SELF_DEP)) & 1);
		unhold(sc, s);
	} else if (pl_now_ns() - s->ev.timestamp > HOLD_NS) {
		unhold(sc, s); /* no interposer there: the program's */
	}
}

/* The earliest timestamp of a record that may not leave yet: of a pull
 * of P that B has not been read past, of a pull of B that P has not been
 * read past, or of a record of B waiting for its verdict (the first one
 * in timestamp order that still waits; the ones before it are decided on
 * the way). */
static uint64_t horizon(struct pl_syscalls *sc, const struct pl_reader *rd)
{
	uint64_t h = pulls_min(&sc->qp, sc->cons_pos);
	uint64_t hb = pulls_min(&sc->qb, rd->tail);
	size_t i;

	if (hb < h) {
		h = hb;
	}
	for (i = 0; sc->nheld && i < sc->sb.n; i++) {
		struct staged *s = stage_at(&sc->sb, i);

		if (s->ev.timestamp >= h) {
			break;
		}
		decide(sc, s);
		if (s->held) {
			h = s->ev.timestamp;
			break;
		}
	}
	return h;
}

/* Up to max records in timestamp order, the safe ones only unless force;
 * returns how many, or -EPIPE. */
static int emit_merged(struct pl_syscalls *sc, const struct pl_reader *rd,
		       struct mt_emitter *em, size_t max, int force)
{
	uint64_t h = force ? UINT64_MAX : horizon(sc, rd);
	size_t n = 0;

	while (n < max && (sc->sp.n || sc->sb.n)) {
		struct stage *from;
		struct mt_event *out;

		if (!sc->sp.n) {
			from = &sc->sb;
		} else if (!sc->sb.n) {
			from = &sc->sp;
		} else {
			/* a tie: the syscall first (it was made inside the
			 * call the interposer reports) */
			from = stage_at(&sc->sb, 0)->ev.timestamp <=
					       stage_at(&sc->sp, 0)->ev.timestamp ?
				       &sc->sb :
				       &sc->sp;
		}
		if (stage_at(from, 0)->ev.timestamp >= h) {
			break;
		}
		if (force) {
			decide(sc, stage_at(from, 0));
			unhold(sc, stage_at(from, 0));
		}
		if (stage_at(from, 0)->drop) {
			stage_pop(from);
			continue;
		}
		out = mt_emit(em);
		if (!out) {
			return -EPIPE;
		}
		*out = stage_at(from, 0)->ev;
		stage_pop(from);
		n++;
	}
	return (int)n;
}

/* A staging array is at its limit and nothing may leave: the earliest
 * records leave anyway (up to max, at most FORCE_RUN), said once. */
static int force_out(struct pl_syscalls *sc, const struct pl_reader *rd,
		     struct mt_emitter *em, size_t max)
{
	if (!sc->forced) {
		sc->forced = 1;
		slog(sc, MT_LOG_WARN,
		     "more than %zu interposer or %zu syscall records waited to be merged: some may be written out of timestamp order",
		     sc->sp.limit, sc->sb.limit);
	}
	return emit_merged(sc, rd, em, max < FORCE_RUN ? max : FORCE_RUN, 1);
}

/*
 * The fast path, while no B record is staged and B is empty: B's producer
 * position, loaded after the P records were seen committed, is B's
 * consumer position, so every B record reserved before those commits
 * (each P record's B predecessors among them) has left already. That is
 * the merge's own rule (a P record is safe once B is read past the
 * position taken after it was read), applied without staging: the P
 * records staged earlier leave first, in their sorted order (each one's
 * position to read past is at most B's producer position now), then runs
 * of committed P records straight from the ring, in ring order. The rest
 * (a B record staged or unread, a slot still being written) is the
 * staged merge's. Returns how many left, or a negative errno.
 */
static int pass_p(struct pl_syscalls *sc, struct pl_reader *rd,
		  struct mt_emitter *em, size_t max)
{
	size_t done = 0;

	while (done < max && !sc->sb.n) {
		size_t lim = max - done, k;
		const struct mt_event *e;
		struct mt_event *out;

		if (sc->sp.n) {
			if (b_prod(sc) != sc->cons_pos) {
				break;
			}
			while (done < max && sc->sp.n) {
				out = mt_emit(em);
				if (!out) {
					return -EPIPE;
				}
				*out = stage_at(&sc->sp, 0)->ev;
				stage_pop(&sc->sp);
				done++;
			}
			continue;
		}
		if (lim > PASS_RUN) {
			lim = PASS_RUN;
		}
		if (lim > rd->mask) {
			lim = rd->mask;
		}
		/* one look at each slot: B's position is loaded after the
		 * record was seen committed (an acquire load). Scanning a
		 * run first, then taking it, read each slot twice. */
		for (k = 0; k < lim; k++) {
			const struct mt_event *t = pl_ring_peek(rd);
			struct mt_event ev;

			if (!t || t->kind == PL_META_KIND ||
			    b_prod(sc) != sc->cons_pos) {
				break;
			}
			if (pl_ring_take(rd, t, &ev)) {
				continue; /* counted: no event */
			}
			out = mt_emit(em);
			if (!out) {
				pl_ring_publish(rd);
				return -EPIPE;
			}
			*out = ev;
			done++;
		}
		if (k == lim) {
			continue;
		}
		e = pl_ring_peek(rd);
		if (e && e->kind == PL_META_KIND) {
			int err = pl_ring_take_meta(rd, e, sc->take_meta,
						    sc->meta_ctx, em);

			if (err) {
				return err;
			}
			continue;
		}
		break; /* empty, being written, or B has records: the merge */
	}
	pl_ring_publish(rd);
	return (int)done;
}

int pl_syscalls_read(struct pl_syscalls *sc, struct pl_reader *rd,
		     struct mt_emitter *em, size_t max)
{
	size_t done = 0, pulled;
	int n;

	while (done < max) {
		ssize_t np;

		n = pass_p(sc, rd, em, max - done);
		if (n < 0) {
			return n;
		}
		done += (size_t)n;
		if (done == max) {
			break;
		}
		/* what is staged and may leave goes first: reading more
		 * before would let the staging arrays grow faster than they
		 * empty */
		n = emit_merged(sc, rd, em, max - done, 0);
		if (n < 0) {
			return n;
		}
		done += (size_t)n;
		if (done == max) {
			break;
		}
		/* Nothing staged may leave: read on, P, then B (a P record's
		 * B predecessors are then read), a run of each at a time, so
		 * that what the staged records need of the other ring is read
		 * soon after them. */
		note_now(sc, rd);
		np = pull_p(sc, rd, em, 0, PULL_RUN);
		if (np < 0) {
			return (int)np;
		}
		pulled = (size_t)np + pull_b(sc, rd, 0, PULL_RUN);
		if (pulled) {
			continue;
		}
		if (!stage_full(&sc->sp) && !stage_full(&sc->sb)) {
			break; /* all read that is there */
		}
		/* the approximation of the top */
		n = force_out(sc, rd, em, max - done);
		if (n <= 0) {
			return n < 0 ? n : (int)done;
		}
		done += (size_t)n;
	}
	return (int)done;
}

int pl_syscalls_drain(struct pl_syscalls *sc, struct pl_reader *rd,
		      struct mt_emitter *em)
{
	uint64_t end_b = b_prod(sc), end_p = p_head(rd);
	uint64_t t0 = pl_now_ns();
	int n;

	while (rd->tail < end_p || sc->cons_pos < end_b) {
		ssize_t np;
		size_t pulled;

		note_now(sc, rd);
		np = pull_p(sc, rd, em, end_p, SIZE_MAX);
		if (np < 0) {
			return (int)np;
		}
		pulled = (size_t)np;

		pulled += pull_b(sc, rd, end_b, SIZE_MAX);
		if (stage_full(&sc->sp) || stage_full(&sc->sb)) {
			n = emit_merged(sc, rd, em, STAGE_CAP, 0);
			if (n == 0) {
				n = force_out(sc, rd, em, FORCE_RUN);
			}
			if (n < 0) {
				return n;
			}
		}
		if (pulled) {
			t0 = pl_now_ns();
		} else if (pl_now_ns() - t0 > DRAIN_WAIT_NS) {
			slog(sc, MT_LOG_WARN,
			     "drain: a record stayed unfinished for 1 s; the rest is left unread");
			break;
		} else {
			usleep(1000);
		}
	}
	n = emit_merged(sc, rd, em, SIZE_MAX, 1);
	return n < 0 ? n : 0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

static int add_self_file(struct pl_syscalls *sc, const struct stat *sb,
			 uint32_t what)
{
	struct {
		uint64_t dev;
		uint64_t ino;
	} key = {
		.dev = mt_kernel_dev(major(sb->st_dev), minor(sb->st_dev)),
		.ino = sb->st_ino,
	};
	if (bpf_map_update_elem(sc->fd_self_files, &key,
				&what, BPF_ANY)) {
		return -errno;
	}
	return 0;
}

/*
 * The interposer (dropped) and the libraries it needs, directly or not,
 * but libc and the loader, which every dynamic program has (today
 * libunwind.so.8 for --stacks and its liblzma.so.5): tagged SELF_DEP + i,
 * i counting them as selfdeps.c does.
 * Found through our own loader (dlopen, the same search the command's
 * ld.so makes for a library without RUNPATH).
 */
static int add_interposer_files(struct pl_syscalls *sc, const char *lib)
{
	char names[PL_SELF_DEPS * PL_SELF_DEP_NAME], *name;
	uint32_t dep = 0;
	struct stat sb;
	int n, i, err;

	if (stat(lib, &sb)) {
		return -errno;
	}
	err = add_self_file(sc, &sb, SELF_OWN);
	if (err) {
		return err;
	}
	n = pl_self_deps_of(lib, names, sizeof(names));
	for (i = 0, name = names; i < n; i++, name += strlen(name) + 1) {
		struct link_map *lm = NULL;
		void *h;
		/* the interposers number them as we do (selfdeps.c) */
		size_t l = strnlen(name, PL_SELF_DEP_NAME - 1);

		memcpy(sc->shm->self_deps[i], name, l);
		sc->shm->self_deps[i][l] = '\0';
		sc->shm->nself_deps = (uint32_t)i + 1;
		dep++;
		h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
		if (!h) {
			continue; /* the command's loader will not find it
				   * either */
		}
		if (!dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && lm->l_name &&
		    !stat(lm->l_name, &sb)) {
			add_self_file(sc, &sb, SELF_DEP + dep - 1);
		}
		dlclose(h);
	}
	return 0;
}

static int map_ring(struct pl_syscalls *sc)
{
	int fd = sc->fd_events;
	void *p;

	sc->page = (size_t)sysconf(_SC_PAGESIZE);
	p = mmap(NULL, sc->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		return -errno;
	}
	sc->cons = p;
	p = mmap(NULL, sc->page + 2 * sc->ring_size, PROT_READ, MAP_SHARED,
		 fd, (off_t)sc->page);
	if (p == MAP_FAILED) {
		return -errno;
	}
	sc->prod = p;
	sc->data = (const uint8_t *)p + sc->page;
	sc->cons_pos = __atomic_load_n(sc->cons, __ATOMIC_ACQUIRE);
	/* The kernel maps the ring's pages one by one, twice: a fork copies
	 * such a mapping entry by entry (~8 ms for 16 MiB, at the command's
	 * fork, before it runs) and its exec tears the copy down. No child of
	 * memtrack reads the ring (the command execs, the detacher makes
	 * system calls only). */
	madvise((void *)sc->cons, sc->page, MADV_DONTFORK);
	madvise(p, sc->page + 2 * sc->ring_size, MADV_DONTFORK);
	return 0;
}

/*
 * Loading. libbpf's skeleton does the CO-RE relocations in memtrack: it
 * parses the kernel's whole BTF (5 MB, 125,000 types here) and looks each
 * of our types up in it, ~30 ms, most of what a preload run as root costs
 * more than one without (~40 ms). The light skeleton (bpftool gen
 * skeleton -L) hands the kernel a loader program that makes the maps and
 * loads the programs, the relocations done by the kernel against the BTF
 * it has parsed already: ~13 ms. That needs a kernel that runs
 * BPF_PROG_TYPE_SYSCALL programs and relocates (5.17 on); where it fails,
 * libbpf's skeleton loads the same object as before, and says why it
 * cannot with the verifier's words. What the rest of this file uses of
 * either is set here: the maps' descriptors and the .bss.
 */
_Static_assert(sizeof(struct syscalls__bss) == sizeof(struct syscalls_bpf__bss),
	       "the two skeletons' .bss differ");

_Static_assert(sizeof(struct syscalls__rodata) ==
		       sizeof(struct syscalls_bpf__rodata),
	       "the two skeletons' .rodata differ");

/* Either skeleton's .rodata, before the program loads. */
static void set_rodata(struct syscalls_bpf__rodata *ro, size_t size)
{
	ro->wakeup_at = size / 8;
	/* tests/test-preload-syscalls: the lookup that does not need the
	 * mmap lock, alone */
	ro->test_no_find_vma = getenv("MEMTRACK_TEST_NO_FIND_VMA") != NULL;
}

static int load_light(struct pl_syscalls *sc, size_t size)
{
	struct syscalls *l = syscalls__open();
	int err;

	if (!l) {
		return -ENOMEM;
	}
	l->maps.events.max_entries = (__u32)size;
	set_rodata((struct syscalls_bpf__rodata *)l->rodata, size);
	mt_bpf_test_max_entries(MT_TEST_TRACKED_MAX,
				&l->maps.tracked.max_entries);
	mt_bpf_test_max_entries(MT_TEST_THREADS_MAX,
				&l->maps.calls.max_entries);
	err = syscalls__load(l);
	if (err) {
		syscalls__destroy(l);
		return err < 0 ? err : -EINVAL;
	}
	sc->lskel = l;
	sc->bss = (struct syscalls_bpf__bss *)l->bss;
	sc->fd_events = l->maps.events.map_fd;
	sc->fd_tracked = l->maps.tracked.map_fd;
	sc->fd_self_files = l->maps.self_files.map_fd;
	sc->fd_nsids = l->maps.nsids.map_fd;
	return 0;
}

static int load_libbpf(struct pl_syscalls *sc, size_t size)
{
	int err;

	sc->skel = syscalls_bpf__open();
	if (!sc->skel) {
		err = -errno;
		slog(sc, MT_LOG_ERROR, "cannot open the BPF program: %s",
		     strerror(-err));
		return err;
	}
	err = bpf_map__set_max_entries(sc->skel->maps.events, (uint32_t)size);
	if (err) {
		return err;
	}
	set_rodata(sc->skel->rodata, size);
	err = mt_bpf_test_tracked_max(sc->skel->maps.tracked);
	if (!err) {
		err = mt_bpf_test_threads_max(sc->skel->maps.calls);
	}
	if (err) {
		return err;
	}
	err = syscalls_bpf__load(sc->skel);
	if (err) {
		slog(sc, MT_LOG_ERROR, "cannot load the BPF program: %s",
		     strerror(-err));
		return err;
	}
	sc->bss = sc->skel->bss;
	sc->fd_events = bpf_map__fd(sc->skel->maps.events);
	sc->fd_tracked = bpf_map__fd(sc->skel->maps.tracked);
	sc->fd_self_files = bpf_map__fd(sc->skel->maps.self_files);
	sc->fd_nsids = bpf_map__fd(sc->skel->maps.nsids);
	return 0;
}

static int load(struct pl_syscalls *sc, size_t size)
{
	int err;

	/* MEMTRACK_TEST_LIBBPF_SKEL: the fallback, for the tests */
	if (!getenv("MEMTRACK_TEST_LIBBPF_SKEL")) {
		err = load_light(sc, size);
		if (!err) {
			slog(sc, MT_LOG_DEBUG,
			     "BPF program loaded by the kernel (light skeleton)");
			return 0;
		}
		slog(sc, MT_LOG_DEBUG,
		     "the light skeleton did not load (%s): libbpf loads the program",
		     strerror(-err));
	}
	return load_libbpf(sc, size);
}

/* The lskel attaches no tracepoint of its own: a perf event of each, on
 * CPU 0 (a tracepoint's programs run on every CPU), and a BPF link to it,
 * which holds the event (its close detaches), as libbpf does. */
static int attach_tp(struct pl_syscalls *sc, const char *name, int prog_fd)
{
	struct perf_event_attr attr;
	char path[128], buf[32];
	int fd, pfd, link, err;
	ssize_t n;

	if (sc->ntp >= PL_TP_MAX) {
		return -E2BIG;
	}
	snprintf(path, sizeof(path), MT_TRACEFS "/events/syscalls/%s/id", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* where older systems mount it, as libbpf looks */
		snprintf(path, sizeof(path),
			 "/sys/kernel/debug/tracing/events/syscalls/%s/id",
			 name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		return -errno;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (n <= 0) {
		return err ? err : -EINVAL;
	}
	buf[n] = '\0';
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = strtoull(buf, NULL, 10);
	attr.sample_period = 1;
	attr.wakeup_events = 1;
	pfd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1,
			   PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		return -errno;
	}
	link = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, NULL);
	err = link < 0 ? -errno : 0;
	close(pfd); /* the link holds the event */
	if (err) {
		return err;
	}
	sc->tp_links[sc->ntp++] = link;
	return 0;
}

static int attach_light(struct pl_syscalls *sc)
{
	struct syscalls *l = sc->lskel;
	const struct {
		const char *name;
		int fd;
	} tps[PL_TP_MAX] = {
		{ "sys_enter_mmap", l->progs.on_mmap_enter.prog_fd },
		{ "sys_exit_mmap", l->progs.on_mmap_exit.prog_fd },
		{ "sys_enter_munmap", l->progs.on_munmap_enter.prog_fd },
		{ "sys_exit_munmap", l->progs.on_munmap_exit.prog_fd },
		{ "sys_enter_mremap", l->progs.on_mremap_enter.prog_fd },
		{ "sys_exit_mremap", l->progs.on_mremap_exit.prog_fd },
		{ "sys_enter_brk", l->progs.on_brk_enter.prog_fd },
		{ "sys_exit_brk", l->progs.on_brk_exit.prog_fd },
	};
	int i, err;

	for (i = 0; i < PL_TP_MAX; i++) {
		err = attach_tp(sc, tps[i].name, tps[i].fd);
		if (err) {
			return err;
		}
	}
	/* the raw tracepoints of the process tree: the lskel's own */
	return syscalls__attach(l);
}

/* 0: use BPF; 1: libc (auto without it); < 0: bpf mode without it */
static int bpf_usable(const struct mt_host *host, enum pl_sys_mode mode)
{
	char why[256];
	int err;

	/* in a pid namespace too: pl_syscalls_start() has BPF report that
	 * namespace's pids and adopt the root at its exec */
	err = mt_bpf_check_system(0, why, sizeof(why));
	if (!err) {
		return 0;
	}
	if (mode == PL_SYS_BPF) {
		host->log(host, MT_LOG_ERROR, NAME,
			  "option syscalls=bpf: %s (syscalls=libc records the calls made through libc without it)",
			  why);
		return err;
	}
	return 1;
}

int pl_syscalls_create(const struct mt_host *host, enum pl_sys_mode mode,
		       size_t ring_size, const char *lib, int memfd,
		       struct pl_shm *shm, struct pl_syscalls **out)
{
	struct pl_syscalls *sc;
	struct stat sb;
	size_t size = MIN_BPF_RING;
	int err;

	*out = NULL;
	if (mode == PL_SYS_LIBC) {
		return 0;
	}
	err = bpf_usable(host, mode);
	if (err) {
		return err < 0 ? err : 0;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		return -ENOMEM;
	}
	sc->host = host;
	sc->shm = shm;
	sc->epfd = -1;
	sc->detacher = -1;
	while (size < ring_size) {
		size <<= 1;
	}
	sc->ring_size = size;
	/* B's records are an mt_event and a ring header each */
	if (stage_init(&sc->sp, shm->nslots) ||
	    stage_init(&sc->sb,
		       size / (sizeof(struct mt_event) + BPF_RINGBUF_HDR_SZ))) {
		err = -ENOMEM;
		goto error;
	}
	sc->fd_events = sc->fd_tracked = sc->fd_self_files = sc->fd_nsids = -1;
	err = load(sc, size);
	if (err) {
		goto error;
	}
	err = add_interposer_files(sc, lib);
	if (!err && fstat(memfd, &sb)) {
		err = -errno;
	}
	if (!err) {
		err = add_self_file(sc, &sb, SELF_OWN);
	}
	if (!err) {
		err = map_ring(sc);
	}
	if (err) {
		slog(sc, MT_LOG_ERROR, "cannot set up the BPF program: %s",
		     strerror(-err));
		goto error;
	}
	/* now: the host is not a subreaper yet (detacher.c) */
	sc->detacher = pl_detacher_start();
	if (sc->detacher < 0) {
		slog(sc, MT_LOG_DEBUG,
		     "no detacher (%s): the tracepoints detach at exit, slowly",
		     strerror(-sc->detacher));
	}
	*out = sc;
	return 0;
error:
	pl_syscalls_destroy(sc);
	return err;
}


int pl_syscalls_start(struct pl_syscalls *sc, int root_pid, int enabled)
{
	uint32_t key = (uint32_t)root_pid, one = 1;
	struct stat ns;
	int err;

	sc->bss->enabled = !!enabled;
	if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO) {
		/* memtrack in a container: records carry the pids of its
		 * namespace, and the held root, known by its pid here, is
		 * adopted by BPF at its exec (as the eBPF source does) */
		sc->bss->pidns_dev = ns.st_dev;
		sc->bss->pidns_ino = ns.st_ino;
		sc->bss->root_ns_pid = (uint32_t)root_pid;
	} else if (bpf_map_update_elem(sc->fd_tracked,
				       &key, &one, BPF_ANY)) {
		err = -errno;
		slog(sc, MT_LOG_ERROR, "cannot track process %d: %s", root_pid,
		     strerror(-err));
		return err;
	}
	err = sc->lskel ? attach_light(sc) : syscalls_bpf__attach(sc->skel);
	if (err) {
		slog(sc, MT_LOG_ERROR,
		     "cannot attach the syscall tracepoints: %s (is tracefs at " MT_TRACEFS "?)",
		     strerror(-err));
		return err;
	}
	return 0;
}

int pl_syscalls_poll_fd(struct pl_syscalls *sc, int efd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (sc->epfd >= 0) {
		return sc->epfd;
	}
	sc->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sc->epfd < 0) {
		return -errno;
	}
	ev.data.fd = efd;
	if (epoll_ctl(sc->epfd, EPOLL_CTL_ADD, efd, &ev)) {
		return -errno;
	}
	ev.data.fd = sc->fd_events;
	if (epoll_ctl(sc->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev)) {
		return -errno;
	}
	return sc->epfd;
}

void pl_syscalls_set_meta(struct pl_syscalls *sc, pl_ring_meta_fn take,
			  void *ctx)
{
	sc->take_meta = take;
	sc->meta_ctx = ctx;
}

void pl_syscalls_set_enabled(struct pl_syscalls *sc, int enabled)
{
	sc->bss->enabled = !!enabled;
}

uint64_t pl_syscalls_dropped(struct pl_syscalls *sc)
{
	return __atomic_load_n(&sc->bss->dropped, __ATOMIC_RELAXED);
}

uint64_t pl_syscalls_untracked(struct pl_syscalls *sc)
{
	return __atomic_load_n(&sc->bss->untracked, __ATOMIC_RELAXED);
}

uint64_t pl_syscalls_unrecorded(struct pl_syscalls *sc)
{
	return __atomic_load_n(&sc->bss->unrecorded, __ATOMIC_RELAXED);
}

int32_t pl_syscalls_nsid(void *ctx, uint64_t ns, int32_t id)
{
	struct pl_syscalls *sc = ctx;
	struct {
		uint64_t ns;
		uint32_t id;
		uint32_t pad;
	} key = { ns, (uint32_t)id, 0 };
	uint32_t outer = 0;

	if (!sc || bpf_map_lookup_elem(sc->fd_nsids, &key,
				       &outer)) {
		return 0;
	}
	return (int32_t)outer;
}

size_t pl_syscalls_ring_size(struct pl_syscalls *sc)
{
	return sc->ring_size;
}

/* The detacher takes a reference to every link (detacher.c): closing ours
 * in syscalls_bpf__destroy() then detaches nothing, and it detaches them
 * in its own time. Without it they are detached here, slowly. */
static void hand_links_over(struct pl_syscalls *sc)
{
	int fds[PL_DETACHER_MAX_FDS], i;
	size_t n = 0;

	if (sc->lskel) {
		const int raw[] = { sc->lskel->links.on_fork_fd,
				    sc->lskel->links.on_exit_fd,
				    sc->lskel->links.on_exec_fd };

		for (i = 0; i < sc->ntp && n < PL_DETACHER_MAX_FDS; i++) {
			fds[n++] = sc->tp_links[i];
		}
		for (i = 0; i < (int)(sizeof(raw) / sizeof(raw[0])) &&
			    n < PL_DETACHER_MAX_FDS; i++) {
			if (raw[i] > 0) {
				fds[n++] = raw[i];
			}
		}
	} else {
		const struct bpf_object_skeleton *sk = sc->skel->skeleton;

		for (i = 0; sk && i < sk->prog_cnt &&
			    n < PL_DETACHER_MAX_FDS; i++) {
			if (sk->progs[i].link && *sk->progs[i].link) {
				fds[n++] = bpf_link__fd(*sk->progs[i].link);
			}
		}
	}
	if (pl_detacher_adopt(sc->detacher, fds, n) < 0) {
		slog(sc, MT_LOG_DEBUG,
		     "the detacher did not take the links: detaching here");
	}
}

void pl_syscalls_destroy(struct pl_syscalls *sc)
{
	if (!sc) {
		return;
	}
	slog(sc, MT_LOG_DEBUG,
	     "merge: at most %zu interposer and %zu syscall records staged; at most %llu of the BPF ring's %zu bytes unread",
	     sc->sp.peak, sc->sb.peak, (unsigned long long)sc->b_peak,
	     sc->ring_size);
	if (sc->skel || sc->lskel) {
		uint32_t key, next;
		int fd = sc->fd_tracked;

		/* nothing is stopped here; just stop recording */
		while (fd >= 0 && !bpf_map_get_next_key(fd, NULL, &next)) {
			key = next;
			if (bpf_map_delete_elem(fd, &key)) {
				break;
			}
		}
	}
	if (sc->cons) {
		munmap(sc->cons, sc->page);
	}
	if (sc->prod) {
		munmap((void *)sc->prod, sc->page + 2 * sc->ring_size);
	}
	if (sc->epfd >= 0) {
		close(sc->epfd);
	}
	if (sc->skel || sc->lskel) {
		hand_links_over(sc);
	}
	for (int i = 0; i < sc->ntp; i++) {
		close(sc->tp_links[i]);
	}
	syscalls__destroy(sc->lskel);
	syscalls_bpf__destroy(sc->skel);
	/* after our references are gone: its close must be the last */
	pl_detacher_release(sc->detacher);
	free(sc->sp.v);
	free(sc->sb.v);
	free(sc);
}

#else /* !MT_PRELOAD_BPF: built without eBPF, libc mode only */

int pl_syscalls_create(const struct mt_host *host, enum pl_sys_mode mode,
		       size_t ring_size, const char *lib, int memfd,
		       struct pl_shm *shm, struct pl_syscalls **out)
{
	(void)shm;
	(void)ring_size;
	(void)lib;
	(void)memfd;
	*out = NULL;
	if (mode == PL_SYS_BPF) {
		host->log(host, MT_LOG_ERROR, "preload",
			  "option syscalls=bpf: memtrack was built without eBPF (--disable-ebpf)");
		return -ENOTSUP;
	}
	return 0;
}

int pl_syscalls_start(struct pl_syscalls *sc, int root_pid, int enabled)
{
	(void)sc;
	(void)root_pid;
	(void)enabled;
	return -ENOTSUP;
}

int pl_syscalls_poll_fd(struct pl_syscalls *sc, int efd)
{
	(void)sc;
	return efd;
}

int pl_syscalls_read(struct pl_syscalls *sc, struct pl_reader *rd,
		     struct mt_emitter *em, size_t max)
{
	(void)sc;
	(void)rd;
	(void)em;
	(void)max;
	return -ENOTSUP;
}

int pl_syscalls_drain(struct pl_syscalls *sc, struct pl_reader *rd,
		      struct mt_emitter *em)
{
	(void)sc;
	(void)rd;
	(void)em;
	return -ENOTSUP;
}

void pl_syscalls_set_meta(struct pl_syscalls *sc, pl_ring_meta_fn take,
			  void *ctx)
{
	(void)sc;
	(void)take;
	(void)ctx;
}

void pl_syscalls_set_enabled(struct pl_syscalls *sc, int enabled)
{
	(void)sc;
	(void)enabled;
}

uint64_t pl_syscalls_dropped(struct pl_syscalls *sc)
{
	(void)sc;
	return 0;
}

uint64_t pl_syscalls_untracked(struct pl_syscalls *sc)
{
	(void)sc;
	return 0;
}

uint64_t pl_syscalls_unrecorded(struct pl_syscalls *sc)
{
	(void)sc;
	return 0;
}

int32_t pl_syscalls_nsid(void *sc, uint64_t ns, int32_t id)
{
	(void)sc;
	(void)ns;
	(void)id;
	return 0;
}

size_t pl_syscalls_ring_size(struct pl_syscalls *sc)
{
	(void)sc;
	return 0;
}

void pl_syscalls_destroy(struct pl_syscalls *sc)
{
	(void)sc;
}

#endif /* MT_PRELOAD_BPF */

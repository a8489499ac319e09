/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/shm.h - the memory the preload source (source/) shares
 * with every traced process (the interposer, interposer/): a header and
 * the event ring (ring.h). Both sides are built from this tree, so the layout
 * only has to agree with itself; PL_VERSION still guards against an
 * interposer of another build finding the variable.
 *
 * The environment carries it across fork and exec:
 *   MEMTRACK_PRELOAD_SHM=MEMFD:PID:INODE
 * MEMFD is memtrack's descriptor of the mapping, inherited at the same
 * number; PID is memtrack's (a process that closed it reopens
 * /proc/PID/fd/MEMFD); INODE tells the memfd from whatever file a program
 * put at that number. The descriptor is only read at attach, checked by
 * its inode, and closed once mapped when it was a reopened one: nothing
 * of a traced process's is ever written through a descriptor number. The
 * memfd is sealed against shrinking and growing (F_SEAL_SHRINK,
 * F_SEAL_GROW), so no process can take the mapping away from the others.
 *
 * Trust: every byte of this mapping can be written by any traced process.
 * Producers copy the geometry (nslots, shift, slots_offset) once, checked
 * against the mapping's size (interposer/ring-put.c, W1); the consumer
 * keeps its own copy from before the command ran (source/ring-read.c,
 * T1). Nothing either side reads later can make it write outside the
 * mapping, wait forever or grow.
 */
#ifndef MT_PRELOAD_SHM_H
#define MT_PRELOAD_SHM_H

#include <stdint.h>

#include <memtrack/event.h>

#define PL_ENV_SHM "MEMTRACK_PRELOAD_SHM"
#define PL_MAGIC 0x504b544du /* "MTKP" */
#define PL_VERSION 9 /* 9: enabled and dead on a line of their own;
			* 8: handover (--source auto); 7: sampling
			* (--sample-bytes); 6: hellos are
			* answered; 5: futex wake-ups and a heartbeat, no
			* eventfd */

/* events of a signal handler that interrupted its thread's claim on a
 * full ring (ring.h, I4), kept per thread and put after the interrupted
 * one; past that many they are lost (counted in dropped) */
#define PL_PENDING 8

/*
 * A notice: why a file's allocations are not recorded, for memtrack's
 * stderr. It travels in the event ring as a metadata record (source/meta.c)
 * whose payload is PL_NOTICE_TAG, the kind and the pid (u32, i32, host
 * order) and the path, NUL-terminated; the source says it once per
 * (kind, file) and does not write it into the recording. The ring never
 * fills up for good, as a table of notices would (one per exec).
 */
#define PL_NOTICE_TAG "MTKN"
/* A hello (metadata record, as a notice): PL_HELLO_TAG, then u64 pid
 * namespace inode, i32 pid, i32 tid of a thread that is about to record
 * its first event from another pid namespace than memtrack's (pidns.h),
 * and u32 its number (shm->hello_seq). The thread waits, a while at most,
 * until the source has looked it up in /proc and answered: hello_ack[seq
 * % PL_HELLO_ACKS] == seq. A short-lived process would be gone before its
 * hello was read otherwise, and its events would keep its namespace's
 * ids. */
#define PL_HELLO_TAG "MTKH"
#define PL_HELLO_LEN 24
#define PL_HELLO_ACKS 64
/* The answer takes a few ms; a loaded machine delayed it past 100 ms
 * (2 parallel test runs on 2 cores), and a thread that stops waiting keeps
 * its namespace's ids. Paid once per thread, only in another pid
 * namespace, and not at all once memtrack is gone (shm->dead). */
#define PL_HELLO_WAIT_MS 1000
#define PL_NOTICE_HDR 12
#define PL_NOTICE_PATH 4096

/* Why a file's allocations are not recorded. */
enum pl_notice_kind {
	PL_NOTE_STATIC = 1,     /* no PT_INTERP: nothing is preloaded */
	PL_NOTE_SETID = 2,      /* the loader ignores LD_PRELOAD */
	PL_NOTE_NO_PRELOAD = 3, /* exec'd with an environment without it */
	PL_NOTE_OWN_MALLOC = 4, /* the executable defines malloc itself */
	/* exec'd by a process under a seccomp filter, which the interposer
	 * made no call to check (they could be what the filter kills): the
	 * source checks the file, as the process sees it */
	PL_NOTE_UNCHECKED = 5,
};

/*
 * The libraries the interposer brings besides libc and the loader (its
 * DT_NEEDED, libunwind which it opens for --stacks, and what those need,
 * breadth first), at most PL_SELF_DEPS, named by the source in
 * self_deps[] before the command runs: in BPF mode the source must know,
 * per process image, whether the program needs each one itself (then its
 * Mmap records are the program's). The interposer writes one verdict when
 * it attaches (selfdeps.c).
 */
#define PL_SELF_DEPS 8
#define PL_SELF_DEP_NAME 64
#define PL_VERDICTS 1024

struct pl_verdict {
	uint32_t ready;  /* the claim's number + 1 once the rest is written,
			  * 0 while it is (a ring: selfdeps.c) */
	int32_t pid;
	uint64_t ts;     /* CLOCK_MONOTONIC ns at attach: after ld.so mapped */
	uint32_t shared; /* bit i: dependency i is the program's too */
	uint32_t pad;
};

/*
 * The state word of a slot, kept in the slot's mt_event.reserved[0] (which
 * the consumer zeroes before the event leaves): the lap of the position it
 * belongs to, a state, and the thread that claimed it.
 */
#define PL_FREE 0u      /* free for position lap * nslots + index */
#define PL_CLAIMED 1u   /* taken by tid, being written */
#define PL_COMMITTED 2u /* written: the consumer may take it */
#define PL_READY 3u     /* seen by the consumer, its timestamp in ns
			 * (tsc.h); only the consumer sets it */
#define PL_TID_MASK 0x3fffffffu

static inline uint64_t pl_word(uint32_t lap, uint32_t state, uint32_t tid)
{
	return (uint64_t)lap << 32 | (uint64_t)state << 30 |
	       (tid & PL_TID_MASK);
}

static inline uint32_t pl_word_lap(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

static inline uint32_t pl_word_state(uint64_t w)
{
	return (uint32_t)(w >> 30) & 3u;
}

static inline uint32_t pl_word_tid(uint64_t w)
{
	return (uint32_t)w & PL_TID_MASK;
}

#define PL_CACHELINE 64

/* the consumer's heartbeat period, and how long a producer waiting for
 * room sees it stand still before it takes memtrack for gone */
#define PL_BEAT_MS 10
#define PL_DEAD 0x64616564u /* "dead" */
#define PL_GONE_MS 2000

struct pl_shm {
	/* set once by the source, before the command runs */
	uint32_t magic;
	uint32_t version;
	uint64_t map_size;     /* bytes of the whole mapping */
	uint64_t nslots;       /* a power of two */
	uint32_t shift;        /* log2(nslots) */
	int32_t consumer_pid;  /* memtrack's own pid: never a liveness test
				* (it means nothing in another pid namespace,
				* and may be reused) */
	uint64_t slots_offset; /* from the start of the mapping */
	uint64_t wakeup_at;    /* unread slots: wake a sleeping consumer */
	uint32_t syscalls_bpf; /* 1: BPF records mmap, munmap, mremap and
				* brk (syscalls.c); the hooks do not */
	uint32_t tsc;          /* 1: events carry raw TSC counts, which
				* the consumer turns into ns (tsc.h) */
	uint64_t pidns;        /* the inode of memtrack's pid namespace: a
				* producer in another one tags its events
				* with its own (reserved[1]) and says hello
				* (PL_HELLO_TAG), pidns.h */

	/* written by the consumer now and then, read by producers at every
	 * event: a line of its own, which the consumer's stores to tail do
	 * not take away from the producers' caches (on tail's line it cost
	 * a miss per event) */
	_Alignas(PL_CACHELINE) uint32_t enabled; /* --start-disabled, control
						   * enable/disable */
	uint32_t dead;      /* PL_DEAD: the consumer has gone, producers go
			     * on untraced; any other value: alive (a stray
			     * word must not stop everybody's recording) */

	/* written by the consumer */
	_Alignas(PL_CACHELINE) uint64_t tail; /* positions below are read */
	uint32_t space_seq; /* futex: bumped when room is made for waiters */
	uint32_t sleeping;  /* 1: the consumer waits for a wake-up */
	uint32_t beat;      /* bumped every PL_BEAT_MS while memtrack lives:
			     * liveness that means the same in every pid
			     * namespace and survives pid reuse */
	uint32_t hello_ack[PL_HELLO_ACKS]; /* futexes: hellos answered */

	/* written by producers */
	_Alignas(PL_CACHELINE) uint64_t head; /* next position to claim */
	uint32_t doorbell; /* futex: bumped by a producer that wakes the
			    * consumer (its watcher thread waits on it) */
	uint32_t gave_up;  /* processes that stopped recording because
			    * memtrack's heartbeat stopped */
	uint32_t hello_seq; /* hellos numbered so far */
	_Alignas(PL_CACHELINE) uint32_t waiters; /* waiting for room now */
	uint32_t attached;   /* processes that attached */
	uint64_t waits;      /* waits for room so far */
	uint64_t wait_ns;    /* time spent in them */
	uint64_t dropped;    /* events lost (see ring.h: pl_emit) */
	uint32_t sample_lost; /* sampled allocations left out: the table of
			       * sampled blocks had no room (interpose.c) */
	uint32_t verdict_next; /* verdicts claimed; verdict i is in slot
				* i % PL_VERDICTS */
	struct pl_verdict verdicts[PL_VERDICTS];

	/* call stacks (interposer/interpose-stacks.c, source/meta.c); set
	 * by the source */
	uint32_t stack_depth; /* frames per stack; 0: no stacks */
	uint32_t pad2;
	/* written by producers */
	_Alignas(PL_CACHELINE) uint32_t next_stack_id; /* stack-table.h */
	uint32_t next_meta_id; /* ids of metadata records in the ring */

	/* set once by the source, before the command runs (selfdeps.c) */
	_Alignas(PL_CACHELINE) uint32_t nself_deps;
	char self_deps[PL_SELF_DEPS][PL_SELF_DEP_NAME];
	/* --sample-bytes (interpose.c): one sample per sample_bytes bytes
	 * allocated on average, 0 for every allocation; the seed of each
	 * thread's draws when sample_flags has PL_SAMPLE_SEEDED */
	uint64_t sample_bytes;
	uint64_t sample_seed;
	uint32_t sample_flags;
	/* --source auto (PL_HO_*): set by the source */
	uint32_t handover;
};

/* pl_shm.handover */
#define PL_HO_ON 1u   /* the eBPF source records each process until its
		       * interposer says hello (interpose.c: pl_hello) */
#define PL_HO_GATE 2u /* the command runs under memtrack's own seccomp
		       * filter (the exec gate), which allows every call:
		       * one filter alone is no reason to be quiet */

#define PL_SAMPLE_SEEDED 1u

/*
 * A metadata record (an MTKT or MTKM payload, whole, header included) is
 * cut into chunks of PL_META_CHUNK bytes, one slot each, put in order by
 * one thread; other slots may come between them (source/meta.c has the rules).
 * A chunk is a slot whose kind is PL_META_KIND (no event kind is); its
 * bytes 0..39 (timestamp .. tid) and reserved[1] carry the data,
 * reserved0 how many of them count, stack_id the record's id, flags
 * PL_META_FIRST/PL_META_LAST. reserved[0] stays the slot's state word.
 */
#define PL_META_KIND 0xfeu
#define PL_META_FIRST 1u
#define PL_META_LAST 2u
#define PL_META_CHUNK 48u

/* Slots start at the first page boundary after the header. */
static inline struct mt_event *pl_slots(const struct pl_shm *shm)
{
	return (struct mt_event *)((char *)shm + shm->slots_offset);
}

#endif /* MT_PRELOAD_SHM_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/interpose-stacks.c - the interposer's call stacks
 * (--stacks): at each allocation event, the stack unwound in-process
 * (stack-unwind, DWARF through libunwind: whole stacks without frame
 * pointers), interned (stack-table: each distinct stack crosses once) and
 * tied to the process's mappings (stack-maps); the records go to memtrack
 * as metadata chunks in the event ring (source/meta.c has the protocol).
 *
 * The order, per capture (as tests/progs/stk-hook.h shows it):
 *   unwind; intern;
 *   a new stack: maps lock; MTKM records if objects were loaded or
 *                unloaded; maps unlock; the MTKT record; publish (always);
 *   then the caller puts the event with the id.
 * Per process: the exec record and every mapping when it attaches (before
 * any stack can be sent); a fork child puts its fork record from its
 * atfork handler, before it returns from fork(), so before any of its
 * events.
 *
 * Rules kept:
 *   - Nothing here allocates through the traced allocator: the stack
 *     machinery takes its memory from mmap, and so does the MTKM buffer
 *     here (grown to what mtpl_maps_write says it needs). The one glibc
 *     allocation libunwind may make (pthread_setspecific's calloc, once
 *     per thread when libunwind's key is past the 32nd) happens while
 *     the thread's depth is raised: it is served untraced. (libunwind
 *     makes its key at attach, from our constructor, so it is rarely
 *     past the 32nd.)
 *   - The capture comes before the real allocator runs, so before any
 *     lock it takes: a thread held at the fork gate (mtpl_loader_enter)
 *     holds nothing a fork handler needs.
 *   - Without stack_depth in the shared header nothing of this runs:
 *     pl_stk_on stays 0 (one predictable branch per allocation), and
 *     libunwind is not even initialised.
 *
 * Frames: return addresses, innermost first, the first in the
 * allocator's caller. mtpl_unwind's first frames are in this library
 * (the entry point and its helper; fewer when the compiler inlined or
 * tail-called): they are dropped by address (our executable
 * segment), which the compiler's choices cannot fool. The depth asked
 * for is stack_depth plus PL_STK_OWN, within MTPL_UNWIND_MAX: at depth
 * 125..127 a stack may keep a frame or two fewer than asked for. A stack
 * the unwinder could follow further than that ends in a
 * MT_FRAME_TRUNCATED frame, as under the eBPF source (the report's
 * `[truncated]`); one that ends at its root (_start, clone) does not.
 *
 * Limits: a vfork child captures nothing (it shares its parent's
 * tables); a child made by a raw clone (no fork handlers) keeps its
 * parent's pid in stacks as in its events; libunwind opens a pipe (two
 * O_CLOEXEC descriptors) in every process traced with stacks (a program
 * that closes every descriptor and reuses the numbers was tried: nothing
 * was written to its files, though libunwind may not have needed the
 * pipe for those stacks).
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "interpose-stacks.h"
#include "stack-maps.h"
#include "stack-table.h"
#include "stack-unwind.h"
#include "selfmap.h"

/* frames of this library an unwind can start with */
#define PL_STK_OWN 3
/* the stack table: 2^20 slots, 256 MiB of frames (address space,
 * touched as stacks arrive) */
#define PL_STK_SLOTS_LOG2 20
#define PL_STK_ARENA (256ull << 20)
#define PL_STK_MAPBUF (64u << 10)

int pl_stk_on;

static uint32_t stk_depth;
static int32_t stk_pid, stk_parent;
static struct mtpl_stack_table stk_table;
static struct mtpl_maps stk_maps;
/* MTKM payloads, under the maps lock */
static unsigned char *stk_mapbuf;
static size_t stk_mapcap;
/* our executable segment */
static uint64_t own_lo, own_hi;
/* the caller's event path (pl_stk_attach) */
static pl_stk_put_fn put_record;

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

static void find_own_text(void)
{
	const ElfW(Ehdr) *eh = &__ehdr_start;
	const ElfW(Phdr) *ph =
		(const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	uint64_t base = 0;
	int i, first = 1;

	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD) {
			continue;
		}
		if (first) {
			/* the header is mapped at the first segment's start */
			base = (uint64_t)(uintptr_t)eh -
			       (ph[i].p_vaddr & ~(uint64_t)(ph[i].p_align - 1));
			first = 0;
		}
		if (ph[i].p_flags & PF_X) {
			own_lo = base + ph[i].p_vaddr;
			own_hi = own_lo + ph[i].p_memsz;
		}
	}
}

static inline int own(uint64_t pc)
{
	/* a return address at the end of a function lies in it at pc - 1 */
	return pc - 1 >= own_lo && pc - 1 < own_hi;
}

static int grow_mapbuf(size_t need)
{
	size_t cap = stk_mapcap ? stk_mapcap : PL_STK_MAPBUF;
	void *p;

	while (cap < need) {
		cap *= 2;
	}
	p = pl_self_map(cap, 0);
	if (!p) {
		return -ENOMEM;
	}
	if (stk_mapbuf) {
		syscall(SYS_munmap, stk_mapbuf, stk_mapcap);
	}
	stk_mapbuf = p;
	stk_mapcap = cap;
	return 0;
}

/* The mappings not sent yet (all of them, after an exec record, with
 * MTPL_MAPS_EXEC), in the ring before the lock is let go (stack-maps.h). */
static void send_maps(unsigned flags)
{
	if (mtpl_maps_lock(&stk_maps)) {
		return; /* a handler on top of the holder: it sends them */
	}
	if ((flags & MTPL_MAPS_EXEC) || mtpl_maps_changed(&stk_maps)) {
		for (;;) {
			uint32_t recs = 0;
			size_t need = 0;
			ssize_t n = -ENOSPC;

			if (stk_mapbuf) {
				n = mtpl_maps_write(&stk_maps,
						    (uint32_t)stk_pid, flags,
						    stk_mapbuf + MTPL_META_HDR,
						    stk_mapcap - MTPL_META_HDR,
						    &recs, &need);
			}
			if (n == -ENOSPC) {
				if (grow_mapbuf(need + MTPL_META_HDR)) {
					break;
				}
				continue;
			}
			if (n > 0) {
				mtpl_meta_seal(stk_mapbuf,
					       MTPL_META_HDR + (size_t)n,
					       "MTKM", recs);
				put_record(stk_mapbuf,
					   MTPL_META_HDR + (size_t)n);
			}
			break;
		}
	}
	mtpl_maps_unlock(&stk_maps);
}

/* the generation's pseudo-frame (see pl_stk_capture) */
#define PL_STK_GEN_MARK 0xfffffffe00000000ull

__attribute__((noinline)) uint32_t pl_stk_capture(void)
{
	/* two more than the unwinder gives: room for the mark and the
	 * generation */
	uint64_t frames[MTPL_UNWIND_MAX + 2];
	unsigned long long unloads;
	unsigned char rec[MTPL_META_HDR + 12 + 8 * MTPL_UNWIND_MAX];
	struct mtpl_stack_ref ref;
	int n, skip = 0, want = (int)stk_depth + PL_STK_OWN, r, deeper, cut;
	size_t len;

	if (want > MTPL_UNWIND_MAX) {
		want = MTPL_UNWIND_MAX;
	}
	n = mtpl_unwind(frames, want, 0, &deeper);
	while (skip < n && own(frames[skip])) {
		skip++;
	}
	n -= skip;
	cut = deeper || n > (int)stk_depth;
	if (n > (int)stk_depth) {
		n = (int)stk_depth;
	}
	if (n <= 0) {
		return 0;
	}
	if (cut) {
		/* a stack that goes on past the depth ends in the eBPF
		 * source's mark (plugins/ebpf/stacks.c), within the format's
		 * 127 frames: else the report takes its last frame for the
		 * root. Interned with the mark, it is never the same stack
		 * as a whole one of the same frames. */
		if (n == MTPL_UNWIND_MAX) {
			n--;
		}
		frames[skip + n++] = MT_FRAME_TRUNCATED;
	}
	/* After a dlclose the same return addresses may be another
	 * library's code (one loaded where the closed one was): interned
	 * with the loader's count of unloads, such a stack gets an id of its
	 * own, sent after the mappings that name it. A return address is
	 * never in the kernel's half: the count there is no frame. */
	unloads = mtpl_maps_unloads();
	frames[skip + n] = PL_STK_GEN_MARK | (unloads & 0xffffffffull);
	r = mtpl_stack_intern(&stk_table, frames + skip,
			      (uint32_t)n + (unloads != 0), &ref);
	if (r == MTPL_STACK_KNOWN) {
		return ref.id;
	}
	if (r != MTPL_STACK_NEW) {
		return 0;
	}
	send_maps(0);
	len = mtpl_stack_record(rec + MTPL_META_HDR,
				sizeof(rec) - MTPL_META_HDR, ref.id,
				(uint32_t)stk_pid, frames + skip, (uint32_t)n);
	mtpl_meta_seal(rec, MTPL_META_HDR + len, "MTKT", 1);
	r = put_record(rec, MTPL_META_HDR + len);
	mtpl_stack_publish(&stk_table, &ref);
	return r ? 0 : ref.id;
}

/*
 * The mappings lock is taken before the fork gate closes: a thread that
 * held it could otherwise be parked at the gate (its dl_iterate_phdr)
 * while a fork handler that runs after this one (registered before us)
 * allocates a new stack in the forking thread and spins on the lock
 * forever. Held by the forking thread, the lock makes such a capture
 * skip the mappings (-EDEADLK) instead.
 */
static int stk_fork_locked;

static void stk_atfork_prepare(void)
{
	stk_parent = stk_pid;
	stk_fork_locked = !mtpl_maps_lock(&stk_maps);
	mtpl_unwind_atfork_prepare();
}

static void stk_atfork_parent(void)
{
	mtpl_unwind_atfork_parent();
	if (stk_fork_locked) {
		mtpl_maps_unlock(&stk_maps);
	}
}

static void stk_atfork_child(void)
{
	unsigned char rec[MTPL_META_HDR + 16];
	size_t len;

	stk_pid = (int32_t)syscall(SYS_getpid);
	mtpl_unwind_atfork_child();
	mtpl_stack_table_atfork_child(&stk_table);
	mtpl_maps_atfork_child(&stk_maps); /* ours from prepare, too */
	/* before fork() returns here: before any event of the child */
	len = mtpl_maps_fork_record(rec + MTPL_META_HDR,
				    sizeof(rec) - MTPL_META_HDR,
				    (uint32_t)stk_pid, (uint32_t)stk_parent);
	mtpl_meta_seal(rec, MTPL_META_HDR + len, "MTKM", 1);
	put_record(rec, MTPL_META_HDR + len);
}

int pl_stk_attach(struct pl_shm *shm, int32_t pid, pl_stk_put_fn put)
{
	uint32_t depth = __atomic_load_n(&shm->stack_depth, __ATOMIC_RELAXED);
	int err;

	if (!depth) {
		return 0;
	}
	stk_depth = depth > MTPL_UNWIND_MAX ? MTPL_UNWIND_MAX : depth;
	stk_pid = pid;
	put_record = put;
	find_own_text();
	err = mtpl_stack_table_init(&stk_table, PL_STK_SLOTS_LOG2,
				    PL_STK_ARENA, &shm->next_stack_id);
	if (!err && (__atomic_load_n(&shm->handover, __ATOMIC_RELAXED) &
		     PL_HO_ON)) {
		/* the uprobes' stacks take the ids from there */
		stk_table.max_id = MT_STACK_ID_UPROBES - 1;
	}
	if (!err) {
		err = mtpl_maps_init(&stk_maps);
	}
	if (!err) {
		err = grow_mapbuf(PL_STK_MAPBUF);
	}
	if (!err) {
		err = mtpl_unwind_init();
	}
	if (err) {
		return err;
	}
	pthread_atfork(stk_atfork_prepare, stk_atfork_parent,
		       stk_atfork_child);
	send_maps(MTPL_MAPS_EXEC);
	__atomic_store_n(&pl_stk_on, 1, __ATOMIC_RELEASE);
	return 0;
}

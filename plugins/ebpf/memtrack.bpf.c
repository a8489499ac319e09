// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memtrack.bpf.c - allocation events of one process tree.
 *
 * Uprobes on allocator entry points (attached by user space, per file, for
 * every process: pid -1) and syscall tracepoints emit struct mt_event
 * records into the `events` ring, but only for the tgids in `tracked`: the
 * root command and everything it forks (raw_tp/sched_process_fork), removed
 * when the whole thread group is dead.
 *
 * Nesting: an allocation that passes through several probed entry points
 * (operator new -> malloc) is reported once, by the outermost. A thread keeps
 * the stack pointer of its outermost call in flight: an entry below it is an
 * inner call; the return whose stack pointer is above it is the outermost
 * returning. Frees are reported at entry; an inner free of the same pointer
 * (operator delete -> free) is recognised by its pointer and stack depth.
 *
 * Executable files: when a tracked process execs or maps an executable file
 * user space has not handled yet (`known`), the process is stopped with
 * SIGSTOP and announced on the `ctl` ring; user space attaches the uprobes
 * of that file, then sends SIGCONT. The same mechanism throttles producers
 * when the event ring fills above the high watermark, so that no event is
 * lost. Every stop is recorded in `holds` before the signal is sent.
 *
 * Stacks (stack_depth != 0, a load-time constant: without it no program
 * walks the stack): the outermost allocator entry captures the user
 * call stack by frame pointers, deduplicated per process by a hash of its
 * return addresses; a new stack goes once to the `stacks` ring, the event
 * carries its id. Every exec and executable mmap of a tracked process then
 * stops it (not only unknown files), so that user space records its
 * mappings, and a fork is announced, so that the child's stacks resolve
 * through its parent's mappings.
 *
 * Relocations (CO-RE): only the kernel's own structures, read with
 * BPF_CORE_READ, are relocated at load, against a copy of them made at
 * every start (kbtf.c). The stable ABI this file reads directly (pt_regs,
 * the syscall tracepoints' records, bpf_pidns_info) keeps its compiled-in
 * layout: each structure relocated costs libbpf a search of the kernel's
 * ~125K types when it has to read them all (no copy).
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <memtrack/event.h> /* its <stdint.h>: bpf-include/stdint.h */
#include "memtrack.h"
#include "bpf/syscall-call.bpf.h" /* struct mt_sys_call */

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SIGSTOP 19
#define PROT_EXEC 0x4
#define MAP_ANONYMOUS 0x20

/* jemalloc mallocx() flags */
#define MALLOCX_LG_ALIGN_MASK 0x3f
#define MALLOCX_ZERO 0x40

/* Tunables, set before load. */
const volatile unsigned long long high_watermark = 0; /* bytes unread */
/* a hold at the high watermark is a freeze when user space has a freezer
 * (freeze_ok, in .bss: set once its thread runs); past the stop
 * watermark it is SIGSTOP, frozen or not */
const volatile unsigned long long stop_watermark = 0;
const volatile unsigned long long stack_stop_watermark = 0;
const volatile unsigned long long wakeup_at = 0;
/* stacks: frames captured (0: no stacks), the stack ring's watermark */
const volatile unsigned int stack_depth = 0;
const volatile unsigned long long stack_high_watermark = 0;
const volatile unsigned long long stack_wakeup_at = 0;
/* tests: as if bpf_find_vma() always found its mmap lock busy
 * (MEMTRACK_TEST_NO_FIND_VMA, source.c) */
const volatile unsigned int test_no_find_vma = 0;
/* --source auto (handover): the syscalls are the preload source's to
 * record, and a process whose interposer said hello records its own
 * allocator calls (see `tracked`) */
const volatile unsigned int no_sys_events = 0;
/* auto with sample-bytes=: each event says when its image began
 * (reserved[0], from image_ts), for user space to drop the events of
 * images whose interposer says hello (sample.c) */
const volatile unsigned int tag_images = 0;

/* Mutable state shared with user space (.bss is mmapped). */
volatile unsigned int enabled = 0;
volatile unsigned int freeze_ok = 0;
volatile unsigned long long pidns_dev = 0; /* 0: report global ids */
volatile unsigned long long pidns_ino = 0;
volatile unsigned int root_ns_pid = 0; /* adopt at exec (container mode) */
/* failed reservations, per ring: events lost; stops not made (for an
 * attach: a file whose calls are missed; for a throttle: a pause that did
 * not happen, which the next event retries) */
volatile unsigned long long dropped = 0;
volatile unsigned long long ctl_dropped = 0;
/* processes of the tree not followed: `tracked` was full */
volatile unsigned long long untracked = 0;
/* calls not recorded: `threads` was full */
volatile unsigned long long unrecorded = 0;
volatile unsigned int stack_next_id = 0; /* the last stack id given */
/* stacks taken in a process whose mappings were not in unw_procs (frame
 * pointers only): an exec the gate let go, unwound before user space read
 * its record. Expected 0: a dynamic program maps libc through the gate
 * before any allocator of it runs. */
volatile unsigned long long unw_missing = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} ctl SEC(".maps");

/* new call stacks (struct mt_bpf_stack, nframes long) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* resized by user space with stacks */
} stacks SEC(".maps");

/* tgid (ours) -> its stack generation (user space: plugins/ebpf/stacks.c,
 * struct ebpf_seen): part of a stack's hash, so that return addresses
 * that name other code since an exec or a mapping over another get a new
 * id. LRU: an entry lost is a generation 0, whose stacks are sent anew. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} stack_gen SEC(".maps");

/* hash of (tgid, generation, return addresses) -> stack id: each stack
 * is sent once */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, u64);
	__type(value, u32);
} stack_ids SEC(".maps");

/*
 * The walk's state with the capture buffer, per thread: 1 KiB is too big
 * for the BPF stack, and a per-CPU buffer could be overwritten by a uprobe
 * of a task preempting us. The walk's counters live here, in map memory,
 * on purpose: the verifier tracks values kept on the BPF stack exactly and
 * would walk every iteration of every loop separately.
 */
/* the stack window: 512 bytes, several frames of most code */
#define MT_WIN_WORDS 64
#define MT_WIN_BYTES (MT_WIN_WORDS * 8)

struct mt_walk {
	struct mt_bpf_stack s;	/* what goes to the stacks ring */
	u64 pc, sp, bp;		/* the registers of the frame being left */
	u32 depth;
	u32 exact;		/* pc is not a return address (after a
				 * signal): its own row, not the call's */
	u64 key;		/* a binary search: the last element <= key */
	u32 first, lo, hi;
	u32 last_map;		/* the previous frame's mapping + 1 (0: none):
				 * callers are mostly in the same file */
	u32 rd_err;		/* mt_stack_read() failed */
	u64 hash;		/* of the frames so far (capture_stack) */
	u64 win;		/* user address of win_buf[0]; 0: none */
	u64 win_buf[MT_WIN_WORDS]; /* a copy of the stack there: one read
				 * serves the next frames (stack_read) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mt_walk);
} stack_buf SEC(".maps");

/* unwind tables: every file's rows (plugins/ebpf/unwind.c), written by
 * user space through mmap; sized by user space */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct mt_unw_row);
} unw_rows SEC(".maps");

/* tgid -> its executable mappings and their tables; a fork copies the
 * parent's, user space replaces them at exec and executable mmap */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct mt_unw_proc);
} unw_procs SEC(".maps");

/* chunk id -> more executable mappings of processes (struct
 * mt_unw_proc says how), written by user space */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct mt_unw_proc);
} unw_chunks SEC(".maps");

/* The hash maps below allocate their entries as they are added (as the
 * preload source's do): preallocating them cost ~7 ms at every start, before
 * the command runs, for the few hundred entries a tree uses. An entry that
 * cannot be allocated is counted as a full map's is. */

/* tgid (global) -> MT_TR_* bits */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} tracked SEC(".maps");

/* auto with sample-bytes= (tag_images): tgid (global) -> when its image
 * began (its exec, CLOCK_MONOTONIC ns), told with its hello and in each
 * event (sample.c); 1 entry, unused, without */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} image_ts SEC(".maps");

/*
 * Clones of the tree in flight, for scope.c: from the entry of clone,
 * clone3, fork or vfork to sched_process_fork (after the kernel copied
 * the creator's perf events into the new task), or to the call's failed
 * return. A thread made while user space opens the perf events that
 * limit the uprobes to the tree has them only if its creator had them
 * when it was copied: user space waits until none is in flight, then
 * looks at the tree again. `cloning`: tid -> 1, the calls counted.
 */
volatile long long clones_inflight = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, u32);
} cloning SEC(".maps");

/*
 * Auto (no_sys_events): the filter events a thread carries. A thread
 * whose exec the gate covered with every event there was is written
 * here by user space (scope.c: group << 32 | the number of events); each
 * thread it makes has copies of those events, and inherits its value
 * (a thread of a creator without one has none). An exec keeps both. The
 * gate reads it at an exec: a thread carrying a whole set that stays
 * needs no set of its own, which would double the events each of its
 * traps, context switches and clones goes through.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} carrier SEC(".maps");

/* Auto: tgid -> when it last forked a process, its image not the
 * interposer's. The child has copies of every filter event the process
 * had then; a hello of the process leaves those open (scope.c). User
 * space deletes the entry at the process's MT_CTL_GONE, after any hello
 * of it on the ring; forked_lost counts the forks not written. */
volatile unsigned long long forked_lost = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} forked SEC(".maps");

/* every stop not handled yet -> when it was made (see struct mt_hold_key);
 * the watchdog of user space holds an fd of it to resume them all if
 * memtrack dies */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct mt_hold_key);
	__type(value, u64);
} holds SEC(".maps");

/* freeze requests (struct mt_freeze_req), for the freezer thread */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10);
} freeze_req SEC(".maps");

/* tgid (ours, as in holds) -> MT_FREEZE_ASKED or MT_FREEZE_CANNOT */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} freezing SEC(".maps");

/* executable files user space has handled */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct mt_file_key);
	__type(value, u32);
} known SEC(".maps");

/* tid (global) -> what the exec gate did for its call in flight */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, u32);
	__type(value, struct mt_gated);
} gated SEC(".maps");

struct thread_state {
	/* allocation in flight (a_sp != 0) */
	u64 a_sp;	/* stack pointer at the outermost entry */
	u64 a_size;
	u64 a_ptr;	/* realloc: old block; posix_memalign: memptr */
	u64 a_cookie;
	u64 a_inner_sp;	/* MT_CK_NORET outer: entry sp of its inner call */
	/* last free reported */
	u64 f_addr;
	u64 f_sp;
	u32 a_stack;	/* stack id of the allocation in flight, 0: none */
	u32 pad;
	struct mt_sys_call sys; /* syscall in flight */
};

/* pid_tgid -> state */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct thread_state);
} threads SEC(".maps");

static __always_inline int is_tracked(u64 id)
{
	u32 tgid = id >> 32;

	return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

/* Tracked, and this call is ours to record: not one that the process's
 * interposer sees (--source auto), which is every call but those of a
 * function in a program file (MT_CK_PROG: a static allocator's, called
 * inside the executable). */
static __always_inline int is_probed(u64 id, u64 cookie)
{
	u32 tgid = id >> 32, *v = bpf_map_lookup_elem(&tracked, &tgid);

	return v && (!(*v & MT_TR_INTERPOSED) || (cookie & MT_CK_PROG));
}

static __always_inline struct thread_state *thread_get(u64 id)
{
	static const struct thread_state zero;
	struct thread_state *st;

	st = bpf_map_lookup_elem(&threads, &id);
	if (st) {
		return st;
	}
	bpf_map_update_elem(&threads, &id, &zero, BPF_NOEXIST);
	st = bpf_map_lookup_elem(&threads, &id);
	if (!st) {
		/* full: this call goes unrecorded, and the next ones of
		 * this thread until an entry is free */
		__sync_fetch_and_add(&unrecorded, 1);
	}
	return st;
}

/*
 * Stop the current process until user space sends SIGCONT. The order
 * matters: the control record is reserved first (without it nobody would
 * learn of the stop: then there is no stop), the hold is recorded next
 * (whoever sees it may count on a record coming), the signal last (a
 * process is never stopped without its hold being visible).
 */
/* id (pid_tgid, the kernel's) as memtrack's pid namespace sees the current
 * task, when memtrack runs in a container: user space finds a held
 * process in its own /proc and resumes it with kill() by that pid, and so
 * does the watchdog from the holds map. */
static __always_inline u64 our_id(u64 id)
{
	if (pidns_ino) {
		struct bpf_pidns_info ns;

		if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns,
						 sizeof(ns))) {
			return (u64)ns.tgid << 32 | ns.pid;
		}
	}
	return id;
}

/* The pid of task t (not the current one: a child at fork) as memtrack's
 * namespace sees it, as our_id() gives the current task's; tgid: its
 * kernel pid, what is meant when memtrack runs in the root namespace.
 * Namespaces nest 32 deep at most; 8 levels are looked at. */
static __always_inline u32 our_pid_of(struct task_struct *t, u32 tgid)
{
	struct pid *p;
	unsigned int level;

	if (!pidns_ino) {
		return tgid;
	}
	p = BPF_CORE_READ(t, thread_pid);
	level = BPF_CORE_READ(p, level);
	for (int i = 0; i < 8; i++) {
		struct upid u;

		if (i > (int)level ||
		    bpf_probe_read_kernel(&u, sizeof(u), &p->numbers[i])) {
			break;
		}
		if (BPF_CORE_READ(u.ns, ns.inum) == pidns_ino) {
			return (u32)u.nr;
		}
	}
	return tgid;
}

static __always_inline void stop_map(u32 type, u64 id, u64 dev, u64 ino,
				     const struct mt_vma_file *f)
{
	struct mt_hold_key key;
	u64 now = bpf_ktime_get_ns();
	struct mt_ctl *c;

	/* the ids user space acts on: only it reads holds (and the check
	 * below, of this very task, keys it the same way) */
	id = our_id(id);
	key.tgid = id >> 32;
	key.tid = 0;

	/* one throttle stop per process: the first thread to get here stops
	 * them all; attach stops are per thread */
	if ((type & 0xffff) != MT_CTL_THROTTLE) {
		key.tid = (u32)id;
	} else if (bpf_map_lookup_elem(&holds, &key)) {
		return;
	}
	c = bpf_ringbuf_reserve(&ctl, sizeof(*c), 0);
	if (!c) {
		__sync_fetch_and_add(&ctl_dropped, 1);
		return;
	}
	if (bpf_map_update_elem(&holds, &key, &now,
				type == MT_CTL_THROTTLE ? BPF_NOEXIST :
							  BPF_ANY)) {
		/* another thread won the race (or the map is full) */
		bpf_ringbuf_discard(c, 0);
		return;
	}
	c->type = type & 0xffff;
	c->tgid = key.tgid;
	c->tid = (u32)id;
	c->pad = type >> 16;
	c->dev = dev;
	c->ino = ino;
	c->ts = now;
	c->start = f ? f->start : 0;
	c->end = f ? f->end : 0;
	c->off = f ? f->off : 0;
	if (bpf_send_signal(SIGSTOP)) {
		/* not stopped (the kernel could not queue the signal): user
		 * space still attaches and resumes, but the process may run
		 * ahead of its probes or past the watermark; said as a stop
		 * not made */
		__sync_fetch_and_add(&ctl_dropped, 1);
	}
	bpf_ringbuf_submit(c, BPF_RB_FORCE_WAKEUP);
}

static __always_inline void stop_current(u32 type, u64 id, u64 dev, u64 ino)
{
	stop_map(type, id, dev, ino, NULL);
}

/* Whether the exec gate did what this call did (an exec of that file, a
 * mapping of that vma) while the thread waited in it: then there is
 * nothing to stop for. Taken once: a call it did not match (failed,
 * interrupted, another file) leaves nothing behind. f: the vma, NULL for
 * an exec; its offset is not compared when off_known is 0 (the file and
 * range came from the call, not the vma: mmap_gated_by_fd()). */
static __always_inline int gated_take(u64 id, u32 kind, u64 dev, u64 ino,
				      const struct mt_vma_file *f,
				      int off_known)
{
	u32 tid = (u32)id;
	struct mt_gated *g = bpf_map_lookup_elem(&gated, &tid);
	int same;

	if (!g) {
		return 0;
	}
	same = g->kind == kind && g->dev == dev && g->ino == ino &&
	       (!f || (g->start == f->start && g->end == f->end &&
		       (!off_known || g->off == f->off)));
	bpf_map_delete_elem(&gated, &tid);
	return same;
}

/*
 * The ring is above its high watermark: hold the current process until
 * user space has read it down to the low one. A freeze first (the cgroup
 * freezer: a sleep nobody sees, plugins/ebpf/freeze.c), asked once per
 * hold of the process; it lands at the process's return to user space
 * shortly after the freezer thread acts. SIGSTOP when the process cannot
 * be frozen, when the request cannot be made, or when the ring still
 * fills past the stop watermark (`hard`): the freeze came too late, and
 * the guarantee that nothing is lost comes before invisibility.
 */
static __always_inline void hold_current(u64 id, int hard)
{
	u32 tgid, v = MT_FREEZE_ASKED, *state;
	struct mt_freeze_req *r;
	long err;

	if (!freeze_ok || hard) {
		goto stop;
	}
	tgid = our_id(id) >> 32;
	state = bpf_map_lookup_elem(&freezing, &tgid);
	if (state) {
		if (*state == MT_FREEZE_CANNOT) {
			goto stop;
		}
		return; /* asked already */
	}
	err = bpf_map_update_elem(&freezing, &tgid, &v, BPF_NOEXIST);
	if (err) {
		if (err == -17) { /* EEXIST: another thread asked */
			return;
		}
		goto stop; /* the map is full */
	}
	r = bpf_ringbuf_reserve(&freeze_req, sizeof(*r), 0);
	if (!r) {
		bpf_map_delete_elem(&freezing, &tgid);
		goto stop;
	}
	r->tgid = tgid;
	r->pad = 0;
	r->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return;
stop:
	stop_current(MT_CTL_THROTTLE, id, 0, 0);
}

static __always_inline void emit(u64 id, u32 kind, u64 addr, u64 size,
				 u64 old_addr, u32 flags, u32 stack)
{
	struct mt_event *e;
	u64 unread;

	if (!enabled) {
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		stop_current(MT_CTL_THROTTLE, id, 0, 0);
		return;
	}
	e->timestamp = bpf_ktime_get_ns();
	e->addr = addr;
	e->size = size;
	e->old_addr = old_addr;
	e->pid = id >> 32;
	e->tid = (u32)id;
	if (pidns_ino) {
		struct bpf_pidns_info ns;

		if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns,
						 sizeof(ns))) {
			e->pid = ns.tgid;
			e->tid = ns.pid;
		}
	}
	e->kind = kind;
	e->flags = stack ? flags | MT_EVF_STACK : flags;
	e->reserved0 = 0;
	e->stack_id = stack;
	e->reserved[0] = 0;
	e->reserved[1] = 0;
	if (tag_images) {
		u32 tgid = id >> 32;
		u64 *its = bpf_map_lookup_elem(&image_ts, &tgid);

		if (its) {
			e->reserved[0] = *its;
		}
	}

	/* Wake the reader only when the ring fills up: it polls on a tick
	 * anyway, and a wakeup per event costs more than the event. unread
	 * counts this record (reserved): with it the ring is above the high
	 * watermark, so the process stops; what its other threads emit until
	 * the stop reaches them lands above the watermark. */
	unread = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if (unread >= wakeup_at) {
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
		if (unread > high_watermark) {
			hold_current(id, unread > stop_watermark);
		}
	} else {
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
}

/* ------------------------------------------------------------------ */
/* Call stacks                                                         */
/* ------------------------------------------------------------------ */

/*
 * The walk, from the allocator's entry: frames[0] is the return address at
 * sp (the allocator's caller); then one caller per step, up to
 * stack_depth. A step finds the pc's mapping in the process's list and
 * its row in the file's unwind table (binary searches, the second within
 * the pc's bucket of the table's index), computes the CFA
 * from the row, and reads the return address at CFA - 8 and the caller's
 * rbp where the row says. Where no row covers the pc it falls back to the
 * frame pointer ([rbp] the caller's rbp, [rbp + 8] the return address).
 * Either way only a step that moves toward higher stack addresses is
 * taken: a step that cannot be made ends the walk, marked truncated. A row
 * saying the return address is undefined (_start, clone) is the root:
 * the stack is whole. User space then keeps only frames inside executable
 * mappings (see plugins/ebpf/stacks.c). The walk is a bpf_loop, whose
 * callback the verifier checks once; its searches are inline loops whose
 * state is kept in map memory.
 */
struct mt_walk_ctx {
	struct mt_walk *w;
	struct mt_unw_proc *proc;	/* NULL: frame pointers only */
};

/* The last mapping starting at or below w->key, by halving w->lo, w->hi
 * (in map memory: the two halves leave the same verifier state, so it
 * checks one iteration's paths, not 2^n). */
static __always_inline void search_map(struct mt_walk *w,
				       struct mt_unw_proc *proc)
{
	u32 i, mid;

	for (i = 0; i < 9; i++) {
		if (w->lo >= w->hi) {
			break;
		}
		mid = (w->lo + w->hi) / 2;
		if (proc->m[mid & (MT_UNW_MAPS - 1)].start <= w->key) {
			w->lo = mid + 1;
		} else {
			w->hi = mid;
		}
	}
}

/* The same over rows w->first + [w->lo, w->hi): MT_UNW_SEARCH_ROWS at
 * most (the index's bucket); not found when they are more. */
static __always_inline void search_row(struct mt_walk *w)
{
	struct mt_unw_row *r;
	u32 i, mid, idx;

	for (i = 0; i < MT_UNW_SEARCH_STEPS; i++) {
		if (w->lo >= w->hi) {
			break;
		}
		mid = (w->lo + w->hi) / 2;
		idx = w->first + mid;
		r = bpf_map_lookup_elem(&unw_rows, &idx);
		if (!r) {
			w->lo = 0; /* not found */
			w->hi = 0;
			break;
		}
		if (r->pc <= w->key) {
			w->lo = mid + 1;
		} else {
			w->hi = mid;
		}
	}
}

/*
 * The row for w->pc in unw_rows, + 1; 0: none (no mapping, no table, no
 * row). A global function: the verifier checks its searches once, not
 * at each call, which made most of alloc_enter's load time.
 */
__noinline u32 mt_find_row(struct mt_walk *w, struct mt_unw_proc *proc)
{
	struct mt_unw_map *m;

	if (!w || !proc) {
		return 0;
	}
	m = NULL;
	if (w->last_map) {
		m = &proc->m[(w->last_map - 1) & (MT_UNW_MAPS - 1)];
		if (w->pc < m->start || w->pc >= m->end) {
			m = NULL;
		}
	}
	if (!m) {
		w->key = w->pc;
		w->lo = 0;
		w->hi = proc->n;
		if (w->hi > MT_UNW_MAPS) {
			w->hi = MT_UNW_MAPS;
		}
		search_map(w, proc);
		if (!w->lo || w->lo < w->hi) {
			return 0;
		}
		w->last_map = w->lo;
		m = &proc->m[(w->lo - 1) & (MT_UNW_MAPS - 1)];
	}
	if (w->pc >= m->end || !m->t.row_count) {
		return 0;
	}
	/* a return address is past its call: the call's row is the one of
	 * the byte before */
	w->key = w->pc - m->bias - (w->exact ? 0 : 1);
	w->first = m->t.row_first;
	w->lo = 0;
	w->hi = m->t.row_count;
	if (m->t.idx_count) {
		/* the index: the rows between the pc's bucket's entry and
		 * the next bucket's (memtrack.h, struct mt_unw_table) */
		u64 b = (w->key - m->t.idx_pc0) >> (m->t.idx_shift & 63);
		struct mt_unw_row *e0, *e1;
		u32 i0, i1;

		if (w->key < m->t.idx_pc0) {
			return 0; /* below the first row */
		}
		if (b + 1 >= m->t.idx_count) {
			w->lo = w->hi; /* past the last bucket: the last row */
		} else {
			i0 = m->t.row_first + m->t.row_count + (u32)b;
			i1 = i0 + 1;
			e0 = bpf_map_lookup_elem(&unw_rows, &i0);
			e1 = bpf_map_lookup_elem(&unw_rows, &i1);
			if (!e0 || !e1 || e0->pc > e1->pc ||
			    e1->pc >= m->t.row_count) {
				return 0;
			}
			w->lo = e0->pc;
			w->hi = e1->pc + 1;
		}
	}
	search_row(w);
	if (!w->lo || w->lo < w->hi) {
		return 0;
	}
	return w->first + w->lo; /* the row's index + 1 */
}

/* The part of proc's mappings (its entry, or one of its chunks) that
 * holds pc's mapping if it has one; NULL: a chunk gone */
static __always_inline struct mt_unw_proc *maps_of(struct mt_unw_proc *p,
						   u64 pc)
{
	u32 n = p->nchunks, lo = 0, hi, mid, i, id;

	if (!n || pc < p->chunk_lo[0]) {
		return p;
	}
	/* the last chunk whose first address is at or below pc: a binary
	 * search over chunk_lo[lo, hi) */
	hi = n < MT_UNW_CHUNKS ? n : MT_UNW_CHUNKS;
	for (i = 0; i < 8; i++) { /* log2(MT_UNW_CHUNKS) + 1 */
		if (hi - lo <= 1) {
			break;
		}
		mid = (lo + hi) / 2;
		if (p->chunk_lo[mid & (MT_UNW_CHUNKS - 1)] <= pc) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	id = p->chunk_id[lo & (MT_UNW_CHUNKS - 1)];
	return bpf_map_lookup_elem(&unw_chunks, &id);
}

static __always_inline struct mt_unw_row *find_row(struct mt_walk_ctx *c)
{
	u32 idx;

	if (!c->proc) {
		return NULL;
	}
	idx = mt_find_row(c->w, maps_of(c->proc, c->w->pc));
	if (!idx) {
		return NULL;
	}
	idx--;
	return bpf_map_lookup_elem(&unw_rows, &idx);
}

/* ucontext of the signal trampoline's frame: where the interrupted
 * registers are (struct sigcontext at offset 40) */
#define UC_RBP 120
#define UC_RSP 160
#define UC_RIP 168

/*
 * The 8 bytes at user address a, as bpf_probe_read_user() would read
 * them, through the window: a copy of the 512 bytes from the last address
 * it was filled at. A walk climbs the stack, so one fill serves the
 * frames above it; a fill that fails (the window would cross the end of
 * the stack's mapping) falls back to reading the 8 bytes alone.
 */
__noinline u64 mt_stack_read(struct mt_walk *w, u64 a)
{
	u64 off, v = 0;

	if (!w) {
		return 0;
	}
	off = a - w->win;
	if (!w->win || a < w->win || off > MT_WIN_BYTES - 8 || (off & 7)) {
		if (bpf_probe_read_user(w->win_buf, MT_WIN_BYTES, (void *)a)) {
			w->win = 0;
			w->rd_err = bpf_probe_read_user(&v, 8, (void *)a) != 0;
			return v;
		}
		w->win = a;
		off = 0;
	}
	w->rd_err = 0;
	return w->win_buf[(off >> 3) & (MT_WIN_WORDS - 1)];
}

/* A global function, so that the verifier checks it once and not at
 * each of its calls (it made alloc_enter's load 0.1 s longer inline). */
static __always_inline long stack_read(struct mt_walk *w, u64 a, u64 *v)
{
	*v = mt_stack_read(w, a);
	return w->rd_err;
}

static __always_inline long walk_push(struct mt_walk *w, u64 ra, u64 cfa,
				      u64 bp, u32 exact)
{
	w->s.frames[w->s.nframes & MT_STACK_MAX] = ra;
	w->s.nframes++;
	w->hash = (w->hash ^ ra) * 0x100000001b3ull;
	w->pc = ra;
	w->sp = cfa;
	w->bp = bp;
	w->exact = exact;
	return 0;
}

static __always_inline long walk_cut(struct mt_walk *w)
{
	w->s.flags |= MT_STACK_TRUNCATED;
	return 1;
}

static long unwind_step(u32 index, void *data)
{
	struct mt_walk_ctx *c = data;
	struct mt_walk *w = c->w;
	struct mt_unw_row *row;
	u64 cfa, ra, bp = w->bp;
	u32 kind = MT_UNW_NONE;
	s64 rbp_off = 0;

	row = find_row(c);
	if (row) {
		kind = row->kind;
		rbp_off = row->rbp_off;
	}
	if (kind == MT_UNW_END) {
		return 1; /* the root: whole, even at the depth limit */
	}
	if (w->s.nframes >= w->depth || w->s.nframes >= MT_STACK_MAX) {
		return walk_cut(w);
	}
	switch (kind) {
	case MT_UNW_CFA_RSP:
		cfa = w->sp + row->cfa_off;
		break;
	case MT_UNW_CFA_RBP:
		cfa = w->bp + row->cfa_off;
		break;
	case MT_UNW_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (u64)rbp_off ? 8 : 0);
		rbp_off = 0;
		break;
	case MT_UNW_SIGNAL:
		if (stack_read(w, w->sp + UC_RBP, &bp) ||
		    stack_read(w, w->sp + UC_RSP, &cfa) ||
		    stack_read(w, w->sp + UC_RIP, &ra) ||
		    cfa <= w->sp || !ra) {
			return walk_cut(w);
		}
		return walk_push(w, ra, cfa, bp, 1);
	default:
		/* frame pointer: the frame is [rbp, rbp + 16) */
		if (!w->bp) {
			return 1; /* the root's mark: whole */
		}
		cfa = w->bp + 16;
		if (stack_read(w, w->bp, &bp)) {
			return walk_cut(w);
		}
		break;
	}
	if (cfa <= w->sp || (cfa & 7) || cfa - w->sp > MT_STACK_SPAN) {
		return walk_cut(w);
	}
	/* the lower address first: the window is filled from there (rbp
	 * is mostly saved just below the return address) */
	if ((rbp_off && stack_read(w, cfa + rbp_off * 8, &bp)) ||
	    stack_read(w, cfa - 8, &ra)) {
		return walk_cut(w);
	}
	if (!ra) {
		return walk_cut(w);
	}
	return walk_push(w, ra, cfa, bp, 0);
}

static __always_inline u32 walk_stack(struct pt_regs *ctx, u64 sp,
				      struct mt_walk *w, u32 depth)
{
	/* keyed as user space knows the process (our_id()) */
	u32 tgid = our_id(bpf_get_current_pid_tgid()) >> 32;
	struct mt_walk_ctx c = { .w = w };

	c.proc = bpf_map_lookup_elem(&unw_procs, &tgid);
	if (!c.proc) {
		__sync_fetch_and_add(&unw_missing, 1);
	}
	w->s.flags = 0;
	w->s.nframes = 1;
	w->pc = w->s.frames[0];
	w->sp = sp + 8; /* the caller's, once the allocator returns */
	w->bp = PT_REGS_FP(ctx);
	w->depth = depth;
	w->exact = 0;
	w->last_map = 0;
	w->win = 0;
	bpf_loop(MT_STACK_MAX, unwind_step, &c, 0);
	return w->s.nframes;
}

/*
 * The stack of the allocation entering at sp, as an id (0: none). Taken at
 * entry, not at return: the allocator frame is then the only one to drop,
 * and an outer without uretprobe (operator new) still gets its caller's
 * stack.
 */
static __always_inline u32 capture_stack(struct pt_regs *ctx, u64 id, u64 sp)
{
	struct mt_bpf_stack *s;
	struct mt_walk *w;
	u64 h = 0xcbf29ce484222325ull ^ (id >> 32), ret, unread, flags;
	u32 n, sid, *known, depth, utgid, *gen;

	if (!stack_depth) {
		return 0;
	}
	utgid = our_id(id) >> 32;
	gen = bpf_map_lookup_elem(&stack_gen, &utgid);
	if (gen) {
		h ^= (u64)*gen << 32;
	}
	w = bpf_task_storage_get(&stack_buf, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!w) {
		return 0;
	}
	s = &w->s;
	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)sp)) {
		return 0;
	}
	s->frames[0] = ret;
	w->hash = (h ^ ret) * 0x100000001b3ull;
	depth = stack_depth < MT_STACK_MAX ? stack_depth : MT_STACK_MAX;
	n = walk_stack(ctx, sp, w, depth);
	if (n > MT_STACK_MAX) {
		n = MT_STACK_MAX;
	}
	/* FNV-1a over the frames, made as they were pushed (walk_push):
	 * no loop of MT_STACK_MAX steps here for the verifier to walk */
	h = w->hash;
	h ^= (u64)n << 56 ^ (u64)s->flags << 48;
	known = bpf_map_lookup_elem(&stack_ids, &h);
	if (known) {
		return *known;
	}
	sid = __sync_fetch_and_add(&stack_next_id, 1) + 1;
	if (bpf_map_update_elem(&stack_ids, &h, &sid, BPF_NOEXIST)) {
		/* another thread of the process sent it meanwhile; else the
		 * map is full: send it again under a new id */
		known = bpf_map_lookup_elem(&stack_ids, &h);
		if (known) {
			return *known;
		}
	}
	s->id = sid;
	s->pid = our_id(id) >> 32; /* the events' pid */
	s->nframes = n;
	unread = bpf_ringbuf_query(&stacks, BPF_RB_AVAIL_DATA);
	flags = unread >= stack_wakeup_at ? BPF_RB_FORCE_WAKEUP :
					    BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&stacks, s, MT_STACK_HDR + (u64)n * 8, flags)) {
		/* lost: forget it, so that its next use sends it again */
		bpf_map_delete_elem(&stack_ids, &h);
		__sync_fetch_and_add(&dropped, 1);
		stop_current(MT_CTL_THROTTLE, id, 0, 0);
		return 0;
	}
	unread += MT_STACK_HDR + n * 8;
	if (unread > stack_high_watermark) {
		hold_current(id, unread > stack_stop_watermark);
	}
	return sid;
}

/* ------------------------------------------------------------------ */
/* Allocator entry points                                              */
/* ------------------------------------------------------------------ */

SEC("uprobe")
int BPF_KPROBE(alloc_enter, u64 a1, u64 a2, u64 a3)
{
	u64 id = bpf_get_current_pid_tgid();
	u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;
	u64 cookie = bpf_get_attach_cookie(ctx), size = 0, ptr = 0;

	if (!is_probed(id, cookie)) {
		return 0;
	}
	st = thread_get(id);
	if (!st) {
		return 0;
	}
	/* sp == a_sp: the outer tail-called us (realloc(NULL, n) jumps to
	 * malloc): still the outer's call, whose kind is reported */
	if (st->a_sp && sp <= st->a_sp) {
		/* called by an outer allocator call; an outer without
		 * uretprobe learns its result from its first inner call
		 * that has one */
		if ((st->a_cookie & MT_CK_NORET) && !st->a_inner_sp &&
		    !(cookie & MT_CK_NORET)) {
			st->a_inner_sp = sp;
		}
		return 0;
	}
	switch (MT_COOKIE_SHAPE(cookie)) {
	case MT_SH_SIZE1:
	case MT_SH_MALLOCX:
		size = a1;
		ptr = a2; /* mallocx: flags */
		break;
	case MT_SH_SIZE2:
		size = a2;
		break;
	case MT_SH_MUL12:
		size = a1 * a2;
		break;
	case MT_SH_REALLOC:
	case MT_SH_REALLOC_NZ:
	case MT_SH_RALLOCX:
	case MT_SH_XALLOCX:
		ptr = a1;
		size = a2;
		break;
	case MT_SH_REALLOCARRAY:
	case MT_SH_REALLOCN_NZ:
		ptr = a1;
		size = a2 * a3;
		break;
	case MT_SH_POSIX_MEMALIGN:
		ptr = a1;
		size = a3;
		break;
	default:
		return 0;
	}
	st->a_sp = sp;
	st->a_size = size;
	st->a_ptr = ptr;
	st->a_cookie = cookie;
	st->a_inner_sp = 0;
	st->a_stack = capture_stack(ctx, id, sp);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, u64 ret)
{
	u64 id = bpf_get_current_pid_tgid();
	u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;
	u64 cookie, addr, old, size;
	u32 kind, shape;

	st = bpf_map_lookup_elem(&threads, &id);
	if (!st || !st->a_sp) {
		return 0;
	}
	if (st->a_cookie & MT_CK_NORET) {
		/* the outer has no uretprobe: its inner call returning */
		if (!st->a_inner_sp || sp <= st->a_inner_sp) {
			return 0;
		}
	} else if (sp <= st->a_sp) {
		return 0; /* an inner call returning */
	}
	cookie = st->a_cookie;
	size = st->a_size;
	old = st->a_ptr;
	st->a_sp = 0;
	kind = MT_COOKIE_KIND(cookie);
	shape = MT_COOKIE_SHAPE(cookie);
	addr = ret;

	switch (shape) {
	case MT_SH_POSIX_MEMALIGN:
		if ((int)ret != 0) {
			return 0;
		}
		addr = 0;
		bpf_probe_read_user(&addr, sizeof(addr), (void *)old);
		break;
	case MT_SH_MALLOCX:
		if (old & MALLOCX_ZERO) {
			kind = MT_EV_CALLOC;
		} else if (old & MALLOCX_LG_ALIGN_MASK) {
			kind = MT_EV_ALIGNED_ALLOC;
		} else {
			kind = MT_EV_MALLOC;
		}
		break;
	case MT_SH_REALLOC:
	case MT_SH_REALLOCARRAY:
		if (!ret && old && !size) {
			/* realloc(p, 0) freed p */
			emit(id, MT_EV_FREE, old, 0, 0, 0, 0);
			return 0;
		}
		break;
	case MT_SH_XALLOCX:
		/* returns the usable size; resized in place when >= size */
		if (ret < size) {
			return 0;
		}
		addr = old;
		break;
	default:
		break;
	}
	if (!addr) {
		return 0; /* failed */
	}
	if (addr == st->f_addr) {
		/* the block is live again: a later free of it is real */
		st->f_addr = 0;
	}
	if (kind == MT_EV_REALLOC) {
		/* old_addr even when 0: realloc(NULL, n) is a Realloc from
		 * NULL in the reference's files, and so in ours */
		emit(id, kind, addr, size, old, MT_EVF_OLD_ADDR, st->a_stack);
	} else {
		emit(id, kind, addr, size, 0, 0, st->a_stack);
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, u64 ptr)
{
	u64 id = bpf_get_current_pid_tgid();
	u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;

	if (!ptr || !is_probed(id, bpf_get_attach_cookie(ctx))) {
		return 0;
	}
	st = thread_get(id);
	if (!st) {
		return 0;
	}
	if (st->a_sp && sp <= st->a_sp) {
		return 0; /* inside realloc & co: that event tells it */
	}
	if (st->f_addr == ptr && sp <= st->f_sp) {
		return 0; /* operator delete -> free of the same block */
	}
	st->f_addr = ptr;
	st->f_sp = sp;
	emit(id, MT_EV_FREE, ptr, 0, 0, 0, 0);
	return 0;
}

/*
 * --source auto: the interposer of the preload source calls its hello
 * function once per process image, before it records its first call
 * (plugins/preload/interposer/interpose.c). From this trap on, the
 * process's allocator calls are the interposer's: ours were every one
 * before. Its fork children inherit the bit (on_fork), an exec clears it
 * (on_exec). User space closes the perf events that made the process
 * trap (scope.c).
 */
SEC("uprobe")
int BPF_KPROBE(hello_enter)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32, *v = bpf_map_lookup_elem(&tracked, &tgid);
	struct mt_ctl c = { .type = MT_CTL_HELLO };

	if (!v) {
		return 0;
	}
	__sync_fetch_and_or(v, MT_TR_INTERPOSED);
	c.tgid = tgid;
	c.tid = (u32)id;
	c.ts = bpf_ktime_get_ns();
	{
		u64 *its = bpf_map_lookup_elem(&image_ts, &tgid);

		c.start = its ? *its : 0;
		c.end = our_id(id) >> 32;
	}
	if (bpf_ringbuf_output(&ctl, &c, sizeof(c), 0)) {
		__sync_fetch_and_add(&ctl_dropped, 1);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Process tree                                                        */
/* ------------------------------------------------------------------ */

/* Scope (see `cloning`): only the tree's clones are counted. */
static __always_inline void clone_begins(void)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id, one = 1;

	if (is_tracked(id) &&
	    !bpf_map_update_elem(&cloning, &tid, &one, BPF_NOEXIST)) {
		__sync_fetch_and_add(&clones_inflight, 1);
	}
}

static __always_inline void clone_ends(void)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();

	if (!bpf_map_delete_elem(&cloning, &tid)) {
		__sync_fetch_and_add(&clones_inflight, -1);
	}
}

/* Loaded only when the uprobes are scoped to the tree (scope.c). The
 * child's return from clone runs in the child: its tid is not in
 * `cloning`, nothing happens. */
SEC("tp/syscalls/sys_enter_clone")
int scope_clone_enter(void *ctx) { clone_begins(); return 0; }
SEC("tp/syscalls/sys_enter_clone3")
int scope_clone3_enter(void *ctx) { clone_begins(); return 0; }
SEC("tp/syscalls/sys_enter_fork")
int scope_fork_enter(void *ctx) { clone_begins(); return 0; }
SEC("tp/syscalls/sys_enter_vfork")
int scope_vfork_enter(void *ctx) { clone_begins(); return 0; }
SEC("tp/syscalls/sys_exit_clone")
int scope_clone_exit(void *ctx) { clone_ends(); return 0; }
SEC("tp/syscalls/sys_exit_clone3")
int scope_clone3_exit(void *ctx) { clone_ends(); return 0; }
SEC("tp/syscalls/sys_exit_fork")
int scope_fork_exit(void *ctx) { clone_ends(); return 0; }
SEC("tp/syscalls/sys_exit_vfork")
int scope_vfork_exit(void *ctx) { clone_ends(); return 0; }

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid, pid, ptgid, one = 1, *pv;

	if (!is_tracked(id)) {
		return 0;
	}
	/* the child is copied and in its thread group's list: no longer
	 * in flight (the creator is current) */
	clone_ends();
	tgid = BPF_CORE_READ(child, tgid);
	pid = BPF_CORE_READ(child, pid);
	if (no_sys_events) {
		/* perf copied the creator thread's events into the child */
		u32 ptid = (u32)id;
		u64 *cv = bpf_map_lookup_elem(&carrier, &ptid);

		/* no value (none, or no room): a value an earlier thread
		 * with this id left would be taken for the child's */
		if (!cv || bpf_map_update_elem(&carrier, &pid, cv, BPF_ANY)) {
			bpf_map_delete_elem(&carrier, &pid);
		}
	}
	if (tgid != pid) {
		return 0; /* a thread: its tgid is tracked already */
	}
	/* the child runs the parent's image: the same recorder */
	ptgid = id >> 32;
	pv = bpf_map_lookup_elem(&tracked, &ptgid);
	if (pv) {
		one = *pv;
	}
	if (bpf_map_update_elem(&tracked, &tgid, &one, BPF_ANY)) {
		__sync_fetch_and_add(&untracked, 1);
		return 0;
	}
	if (no_sys_events && !(one & MT_TR_INTERPOSED)) {
		u64 now = bpf_ktime_get_ns();

		if (bpf_map_update_elem(&forked, &ptgid, &now, BPF_ANY)) {
			__sync_fetch_and_add(&forked_lost, 1);
		}
	}
	if (stack_depth) {
		/* the ids user space knows the two processes by */
		u32 ptgid = our_id(id) >> 32, ctgid = our_pid_of(child, tgid);
		struct mt_ctl c = {
			.type = MT_CTL_FORK,
			.tgid = ptgid,
			.pad = ctgid,
			.ts = bpf_ktime_get_ns(),
		};
		struct mt_unw_proc *maps;

		/* the child's stacks resolve through these mappings */
		if (bpf_ringbuf_output(&ctl, &c, sizeof(c), 0)) {
			__sync_fetch_and_add(&ctl_dropped, 1);
		}
		/* and are unwound with them from its first allocation */
		maps = bpf_map_lookup_elem(&unw_procs, &ptgid);
		if (maps) {
			bpf_map_update_elem(&unw_procs, &ctgid, maps, BPF_ANY);
		} else {
			bpf_map_delete_elem(&unw_procs, &ctgid);
		}
	}
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;

	if (!is_tracked(id)) {
		return 0;
	}
	bpf_map_delete_elem(&threads, &id);
	if (stack_depth) {
		u32 tid = (u32)id;

		bpf_map_delete_elem(&gated, &tid);
	}
	if (no_sys_events) {
		u32 tid = (u32)id;

		bpf_map_delete_elem(&carrier, &tid);
	}
	/* group_dead is decremented before this tracepoint */
	if (BPF_CORE_READ(task, signal, live.counter) == 0) {
		u32 utgid = our_id(id) >> 32;

		struct mt_unw_proc *maps;

		if (no_sys_events) {
			/* auto: who recorded its last image (MTKW) */
			u32 *v = bpf_map_lookup_elem(&tracked, &tgid);
			struct mt_ctl g = { .type = MT_CTL_GONE,
					    .tgid = utgid,
					    .pad = v ? *v : 0,
					    .ts = bpf_ktime_get_ns() };

			if (bpf_ringbuf_output(&ctl, &g, sizeof(g), 0)) {
				__sync_fetch_and_add(&ctl_dropped, 1);
			}
		}
		bpf_map_delete_elem(&tracked, &tgid);
		bpf_map_delete_elem(&image_ts, &tgid);
		maps = stack_depth ? bpf_map_lookup_elem(&unw_procs, &utgid) :
				     NULL;
		if (maps && maps->nchunks) {
			/* user space drops the chunks nobody else names */
			struct mt_ctl c = { .type = MT_CTL_EXIT,
					    .tgid = utgid,
					    .ts = bpf_ktime_get_ns() };

			if (bpf_ringbuf_output(&ctl, &c, sizeof(c), 0)) {
				__sync_fetch_and_add(&ctl_dropped, 1);
			}
		}
		bpf_map_delete_elem(&unw_procs, &utgid);
		bpf_map_delete_elem(&freezing, &utgid);
	}
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_file_key key;
	struct inode *inode;

	if (root_ns_pid && pidns_ino) {
		struct bpf_pidns_info ns;
		u32 tgid = id >> 32, one = 1;

		/* container: the root is known by its pid in our namespace */
		if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns,
						 sizeof(ns)) &&
		    ns.tgid == root_ns_pid) {
			if (bpf_map_update_elem(&tracked, &tgid, &one,
						BPF_ANY)) {
				__sync_fetch_and_add(&untracked, 1);
			}
			root_ns_pid = 0;
		}
	}
	if (!is_tracked(id)) {
		return 0;
	}
	/* the old image's calls in flight are gone */
	bpf_map_delete_elem(&threads, &id);
	if (no_sys_events && (u32)old_pid != (u32)id) {
		/* a thread but the leader exec'd: it is the leader now,
		 * with its events (the old leader's entry went at its
		 * exit, before this) */
		u32 otid = (u32)old_pid, tid = (u32)id;
		u64 *cv = bpf_map_lookup_elem(&carrier, &otid);

		if (cv) {
			u64 v = *cv;

			bpf_map_update_elem(&carrier, &tid, &v, BPF_ANY);
			bpf_map_delete_elem(&carrier, &otid);
		}
	}
	/* the new image's calls are ours until its interposer says hello */
	{
		u32 tgid = id >> 32, *v = bpf_map_lookup_elem(&tracked, &tgid);

		if (v && (*v & MT_TR_INTERPOSED)) {
			__sync_fetch_and_and(v, ~(u32)MT_TR_INTERPOSED);
		}
		if (tag_images) {
			u64 now = bpf_ktime_get_ns();

			bpf_map_update_elem(&image_ts, &tgid, &now, BPF_ANY);
		}
	}

	inode = BPF_CORE_READ(task, mm, exe_file, f_inode);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key.ino = BPF_CORE_READ(inode, i_ino);
	/* with stacks, every exec: user space records the new mappings */
	if (!stack_depth && bpf_map_lookup_elem(&known, &key)) {
		return 0;
	}
	if (stack_depth &&
	    gated_take(id, MT_GATED_EXEC, key.dev, key.ino, NULL, 1)) {
		/* the gate attached its files; nothing of the new image
		 * allocates before its first executable mmap, which waits in
		 * the gate until user space has read this record and pushed
		 * the image's mappings (gate.c) */
		u32 utgid = our_id(id) >> 32;
		struct mt_ctl c = {
			.type = MT_CTL_EXEC,
			.tgid = utgid,
			.tid = (u32)our_id(id),
			.dev = key.dev,
			.ino = key.ino,
			.ts = bpf_ktime_get_ns(),
		};

		/* the old image's tables name nothing of the new one */
		bpf_map_delete_elem(&unw_procs, &utgid);
		if (!bpf_ringbuf_output(&ctl, &c, sizeof(c),
					BPF_RB_FORCE_WAKEUP)) {
			return 0;
		}
		__sync_fetch_and_add(&ctl_dropped, 1);
	}
	stop_current(MT_CTL_ATTACH | (MT_CTL_AT_EXEC << 16), id, key.dev,
		     key.ino);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Syscalls: the programs are common/bpf/syscall-events.bpf.h's         */
/* ------------------------------------------------------------------ */

static __always_inline struct mt_sys_call *sys_call_get(u64 id, int create)
{
	struct thread_state *st;

	st = create ? thread_get(id) : bpf_map_lookup_elem(&threads, &id);
	return st ? &st->sys : NULL;
}

static __always_inline void sys_emit(u64 id, u32 kind, u64 addr, u64 size)
{
	if (no_sys_events) {
		return; /* the preload source's to record */
	}
	emit(id, kind, addr, size, 0, 0, 0);
}

static __always_inline int sys_mmap_keep(u64 id, u64 addr, u64 len, u64 prot,
					 u64 flags, s64 fd)
{
	return 1;
}

static __always_inline int sys_munmap_keep(u64 id, u64 addr, u64 len)
{
	return 1;
}

/*
 * bpf_find_vma() found the mmap lock busy: whether the gate recorded this
 * very call, told by the descriptor's file (what the gate stat()ed) and
 * the range the call asked for (MAP_FIXED, as the gate requires). The lock
 * is busy whenever another process attaches or detaches uprobes on a file
 * this one maps (register_for_each_vma() write-locks every such mm): two
 * memtracks at once, or one and another's watchdog. Without this, each such
 * collision was a SIGSTOP that the gate was there to spare (CI saw one in
 * a `set -m` script while other tests ran).
 */
static __always_inline int mmap_gated_by_fd(u64 id, u64 addr, u64 len, s64 fd)
{
	struct mt_vma_file f = {};

	mt_fd_file(fd, &f);
	if (!f.found) {
		return 0;
	}
	f.start = addr;
	f.end = addr + ((len + 4095) & ~4095ull); /* PAGE_SIZE, x86-64 */
	return gated_take(id, MT_GATED_MMAP, f.dev, f.ino, &f, 0);
}

/*
 * Without stacks, the same collision: whether the file of the descriptor
 * just mapped is attached already (by the gate, before the call ran; its
 * key is what fstat() of the descriptor said, the key read here). A key
 * not found (on overlayfs the stop path keys the layer's file) stops as
 * before. Only a descriptor closed and reused for another attached file
 * by another thread between the mapping and this exit could pass an
 * unknown file; the stacks path above takes the same chance.
 */
static __always_inline int mmap_known_by_fd(s64 fd)
{
	struct mt_vma_file f = {};
	struct mt_file_key key;

	mt_fd_file(fd, &f);
	if (!f.found) {
		return 0;
	}
	key.dev = f.dev;
	key.ino = f.ino;
	return bpf_map_lookup_elem(&known, &key) != NULL;
}

/*
 * An executable file mapped: its uprobes are attached before it runs.
 *
 * bpf_find_vma() only try-locks the mmap lock (kernel/bpf/task_iter.c:
 * mmap_read_trylock(), -EBUSY), and it is held or waited for at this very
 * moment more often than one would think: by another thread of the
 * process, and by any uprobe (un)registration on a file the process maps
 * (kernel/events/uprobes.c: register_for_each_vma() takes the write lock
 * of every mm mapping the file), such as a previous memtrack's watchdog
 * closing its libc probes. Not knowing the file is no reason not to stop:
 * dev/ino 0 makes user space scan every mapping of the process, which
 * attaches whatever it maps that is new. Skipping the stop let the process
 * run unprobed: a recording with its mmaps and not one malloc.
 */
static __always_inline void sys_mmap_done(u64 id, u64 addr, u64 len,
					  u64 prot, u64 flags, s64 fd)
{
	struct mt_vma_file f = {};
	struct mt_file_key key;

	if (!(prot & PROT_EXEC) || (flags & MAP_ANONYMOUS)) {
		return;
	}
	/* the file the vma really maps (overlayfs swaps it) */
	if (!test_no_find_vma) {
		mt_vma_file_at(addr, &f);
	}
	if (!f.found) {
		if (stack_depth ? mmap_gated_by_fd(id, addr, len, fd) :
				  mmap_known_by_fd(fd)) {
			return; /* recorded or attached by the gate */
		}
		stop_current(MT_CTL_ATTACH, id, 0, 0);
		return;
	}
	key.dev = f.dev;
	key.ino = f.ino;
	if (stack_depth &&
	    gated_take(id, MT_GATED_MMAP, key.dev, key.ino, &f, 1)) {
		return; /* recorded by the gate before the call ran */
	}
	if (stack_depth || !bpf_map_lookup_elem(&known, &key)) {
		/* the vma: with stacks user space records it alone */
		stop_map(MT_CTL_ATTACH, id, key.dev, key.ino, &f);
	}
}

#include "bpf/syscall-events.bpf.h"

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * plugins/preload/source/syscalls.bpf.c - the preload source's root mode:
 * only the process tree and the mmap, munmap, mremap and brk tracepoints of
 * the eBPF source (common/bpf/syscall-events.bpf.h: one definition for both),
 * writing struct mt_event records into the `events` ring. No uprobes, no
 * stops: the ring is sized generously and a failed reservation counts in
 * `dropped` (memtrack then exits 1).
 *
 * What the preload machinery itself maps is not recorded, so that the
 * file matches an eBPF recording of the same program event for event:
 * the interposer (ld.so maps it into every process, before the
 * interposer runs) and the shared ring (the memfd the interposer maps
 * when it attaches) are dropped here. The libraries the interposer needs
 * (libgcc_s.so.1) may be the program's too (C++): their records are
 * tagged (reserved0 = SELF_DEP + i) and user space keeps or drops them
 * once the interposer of that process has said whether the program
 * needs them (selfdeps.c, syscalls.c). User space lists those files in
 * `self_files` (value SELF_OWN or SELF_DEP + i). What cannot be told
 * apart: ld.so's own memory for one more object (its startup allocator
 * may need one more anonymous page run). ld.so maps a library as a reservation of the
 * file's whole span, then MAP_FIXED segments and an anonymous .bss inside
 * it, and may munmap alignment slack: everything inside the last
 * reservation of a self file is dropped too, until an mmap outside it
 * shows that ld.so has moved on.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <memtrack/event.h> /* its <stdint.h>: plugins/ebpf/bpf-include */
#include "bpf/syscall-call.bpf.h"
#include "selfmap.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAP_ANONYMOUS 0x20
#define SELF_OWN 1 /* dropped */
#define SELF_DEP 2 /* + i: tagged */

const volatile unsigned long long wakeup_at = 0; /* unread bytes */
/* tests: behave as if bpf_find_vma() always failed (the lock is busy) */
const volatile unsigned int test_no_find_vma = 0;

volatile unsigned int enabled = 0;
volatile unsigned long long pidns_dev = 0; /* 0: report global ids */
volatile unsigned long long pidns_ino = 0;
volatile unsigned int root_ns_pid = 0; /* adopt at exec (container mode) */
volatile unsigned long long dropped = 0;
/* processes of the tree not followed: `tracked` was full */
volatile unsigned long long untracked = 0;
/* calls not recorded: `calls` was full (or out of memory) */
volatile unsigned long long unrecorded = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space */
} events SEC(".maps");

/* The three hash maps allocate their entries as they are added: a
 * preallocated 64K-entry map costs ~3 ms to create, paid by every run
 * before the command starts, for the few entries a process tree uses. */

/* tgid (global) -> 1 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u32);
	__type(value, u32);
} tracked SEC(".maps");

/* pid_tgid -> the syscall in flight */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u64);
	__type(value, struct mt_sys_call);
} calls SEC(".maps");

struct self_file {
	u64 dev; /* kernel encoding: major << 20 | minor */
	u64 ino;
};

/* files of the preload machinery -> 1 (see the top) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct self_file);
	__type(value, u32);
} self_files SEC(".maps");

struct span {
	u64 start;
	u64 end;
	u32 tag; /* SELF_OWN, SELF_DEP + i */
	u32 pad;
};

/* tgid -> the last reservation of a self file being mapped */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u32);
	__type(value, struct span);
} self_span SEC(".maps");

/* A task's id in a pid namespace below memtrack's -> its id in memtrack's
 * (0: the initial one), noted at fork for every thread of the tree: the
 * interposer of a process in a container knows only its namespace's ids,
 * and the thread may be gone when the source reads its events (pidns.h).
 * LRU: a thread's entry outlives it as long as the map has room. An LRU
 * map is allocated whole when it is made: 16,384 entries cost ~1 ms of
 * every start as root, where 65,536 cost ~3; an entry is needed from a
 * thread's fork until its events are read, milliseconds later. */
struct nsid_key {
	u64 ns; /* the inode of the task's own (innermost) pid namespace */
	u32 id;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nsid_key);
	__type(value, u32);
} nsids SEC(".maps");

/* struct bpf_pidns_info (uapi), without vmlinux.h's CO-RE relocation of
 * each read (see common/bpf/syscall-events.bpf.h: mt_tp_sys_enter) */
struct mt_pidns_info {
	u32 pid;
	u32 tgid;
};

#define MAX_PIDNS_LEVEL 32

static __always_inline void note_nsid(struct task_struct *child)
{
	struct pid *p = BPF_CORE_READ(child, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level), mine = 0, i;
	struct nsid_key key = {};
	struct upid in, out;
	u32 outer;

	if (!level || level >= MAX_PIDNS_LEVEL) {
		return;
	}
	if (pidns_ino) {
		/* memtrack's own level: where its namespace is on the way */
		for (i = 0; i < MAX_PIDNS_LEVEL; i++) {
			struct upid u;

			if (i > level) {
				return; /* not below memtrack's: none of ours */
			}
			if (bpf_probe_read_kernel(&u, sizeof(u), &p->numbers[i])) {
				return;
			}
			if (BPF_CORE_READ(u.ns, ns.inum) == pidns_ino) {
				mine = i;
				break;
			}
		}
		if (i == MAX_PIDNS_LEVEL || mine == level) {
			return;
		}
	}
	if (bpf_probe_read_kernel(&in, sizeof(in),
				  &p->numbers[level & (MAX_PIDNS_LEVEL - 1)]) ||
	    bpf_probe_read_kernel(&out, sizeof(out),
				  &p->numbers[mine & (MAX_PIDNS_LEVEL - 1)])) {
		return;
	}
	key.ns = BPF_CORE_READ(in.ns, ns.inum);
	key.id = (u32)in.nr;
	outer = (u32)out.nr;
	bpf_map_update_elem(&nsids, &key, &outer, BPF_ANY);
}

static __always_inline int is_tracked(u64 id)
{
	u32 tgid = id >> 32;

	return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

static __always_inline struct mt_sys_call *sys_call_get(u64 id, int create)
{
	static const struct mt_sys_call zero;
	struct mt_sys_call *c;

	if (create) {
		bpf_map_update_elem(&calls, &id, &zero, BPF_NOEXIST);
	}
	c = bpf_map_lookup_elem(&calls, &id);
	if (!c && create) {
		__sync_fetch_and_add(&unrecorded, 1);
	}
	return c;
}

/* The tag of the thread's next record (set by the keep hooks just
 * before sys_emit, in the thread's struct mt_sys_call). */
static __always_inline void set_tag(u64 id, u32 tag)
{
	struct mt_sys_call *c = bpf_map_lookup_elem(&calls, &id);

	if (c) {
		c->tag = tag;
	}
}

static __always_inline void sys_emit(u64 id, u32 kind, u64 addr, u64 size)
{
	struct mt_sys_call *c = bpf_map_lookup_elem(&calls, &id);
	struct mt_event *e;
	u32 tag = 0;

	if (c) {
		tag = c->tag;
		c->tag = 0;
	}

	if (!enabled) {
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return;
	}
	e->timestamp = bpf_ktime_get_ns();
	e->addr = addr;
	e->size = size;
	e->old_addr = 0;
	e->pid = id >> 32;
	e->tid = (u32)id;
	if (pidns_ino) {
		struct mt_pidns_info ns;

		if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino,
						 (void *)&ns, sizeof(ns))) {
			e->pid = ns.tgid;
			e->tid = ns.pid;
		}
	}
	e->kind = kind;
	e->flags = 0;
	e->reserved0 = tag; /* user space zeroes it */
	e->stack_id = 0;
	e->reserved[0] = 0;
	e->reserved[1] = 0;
	/* the reader polls on its tick anyway: wake it only when filling */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_at) {
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	} else {
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
}

/* The tag of the self file whose reservation holds the range, or 0. */
static __always_inline u32 in_self_span(u32 tgid, u64 addr, u64 len)
{
	struct span *s = bpf_map_lookup_elem(&self_span, &tgid);

	return s && addr >= s->start && addr + len <= s->end ? s->tag : 0;
}

/* 0: drop; else emit, tagged as set */
static __always_inline int keep_tagged(u64 id, u32 tag)
{
	if (tag == SELF_OWN) {
		return 0;
	}
	set_tag(id, tag);
	return 1;
}

/* The self_files value of a file, or NULL. */
static __always_inline u32 *self_file(const struct mt_vma_file *f)
{
	struct self_file key = { .dev = f->dev, .ino = f->ino };

	return f->found ? bpf_map_lookup_elem(&self_files, &key) : NULL;
}

/*
 * A file mapping is a self file's when the file the vma maps is, or else
 * the file behind the descriptor passed. The vma's can be unknown:
 * bpf_find_vma() only try-locks the mmap lock, and fails with -EBUSY
 * while it is held, such as by any uprobe (un)registration on a file the
 * process maps (an eBPF memtrack's watchdog detaching its libc probes);
 * and it is another file than the one stat() named on overlayfs. The
 * interposer's own segments were then recorded as the program's Mmaps.
 */
static __always_inline int sys_mmap_keep(u64 id, u64 addr, u64 len, u64 prot,
					 u64 flags, s64 fd)
{
	u32 tgid = id >> 32, tag, *self;
	struct span span = {};

	set_tag(id, 0);
	if ((flags & MAP_ANONYMOUS) && (s32)fd == PL_SELF_MMAP_FD) {
		return keep_tagged(id, SELF_OWN); /* the interposer's own */
	}
	if (!(flags & MAP_ANONYMOUS)) {
		struct mt_vma_file f = {};

		if (!test_no_find_vma) {
			mt_vma_file_at(addr, &f);
		}
		self = self_file(&f);
		if (!self) {
			__builtin_memset(&f, 0, sizeof(f));
			mt_fd_file(fd, &f);
			self = self_file(&f);
		}
		if (self) {
			tag = *self;
			if (in_self_span(tgid, addr, len) != tag) {
				span.start = addr;
				span.end = addr + len;
				span.tag = tag;
				bpf_map_update_elem(&self_span, &tgid, &span,
						    BPF_ANY);
			}
			return keep_tagged(id, tag);
		}
	}
	tag = in_self_span(tgid, addr, len);
	if (tag) {
		return keep_tagged(id, tag); /* a self file's segment or .bss */
	}
	bpf_map_delete_elem(&self_span, &tgid);
	return 1;
}

static __always_inline void sys_mmap_done(u64 id, u64 addr, u64 len,
					  u64 prot, u64 flags, s64 fd)
{
}

static __always_inline int sys_munmap_keep(u64 id, u64 addr, u64 len)
{
	u32 tag = in_self_span(id >> 32, addr, len);

	set_tag(id, 0);
	return tag ? keep_tagged(id, tag) : 1;
}

#include "bpf/syscall-events.bpf.h"

/* ------------------------------------------------------------------ */
/* Process tree (as the eBPF source's)                                 */
/* ------------------------------------------------------------------ */

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid, pid, one = 1;

	if (!is_tracked(id)) {
		return 0;
	}
	note_nsid(child);
	tgid = BPF_CORE_READ(child, tgid);
	pid = BPF_CORE_READ(child, pid);
	if (tgid != pid) {
		return 0; /* a thread: its tgid is tracked already */
	}
	if (bpf_map_update_elem(&tracked, &tgid, &one, BPF_ANY)) {
		__sync_fetch_and_add(&untracked, 1);
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
	bpf_map_delete_elem(&calls, &id);
	/* group_dead is decremented before this tracepoint */
	if (BPF_CORE_READ(task, signal, live.counter) == 0) {
		bpf_map_delete_elem(&tracked, &tgid);
		bpf_map_delete_elem(&self_span, &tgid);
	}
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;

	if (root_ns_pid && pidns_ino) {
		struct mt_pidns_info ns;
		u32 one = 1;

		/* container: the root is known by its pid in our namespace
		 * (as the eBPF source does) */
		if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino,
						 (void *)&ns, sizeof(ns)) &&
		    ns.tgid == root_ns_pid) {
			if (bpf_map_update_elem(&tracked, &tgid, &one,
						BPF_ANY)) {
				__sync_fetch_and_add(&untracked, 1);
			}
			root_ns_pid = 0;
		}
	}

	if (is_tracked(id)) {
		bpf_map_delete_elem(&self_span, &tgid);
	}
	return 0;
}

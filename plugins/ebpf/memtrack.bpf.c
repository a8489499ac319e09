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
 * calls bpf_get_stack): the outermost allocator entry captures the user
 * call stack by frame pointers, deduplicated per process by a hash of its
 * return addresses; a new stack goes once to the `stacks` ring, the event
 * carries its id. Every exec and executable mmap of a tracked process then
 * stops it (not only unknown files), so that user space records its
 * mappings, and a fork is announced, so that the child's stacks resolve
 * through its parent's mappings.
 */
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
const volatile unsigned long long wakeup_at = 0;
/* stacks: frames captured (0: no stacks), the stack ring's watermark */
const volatile unsigned int stack_depth = 0;
const volatile unsigned long long stack_high_watermark = 0;
const volatile unsigned long long stack_wakeup_at = 0;

/* Mutable state shared with user space (.bss is mmapped). */
volatile unsigned int enabled = 0;
volatile unsigned long long pidns_dev = 0; /* 0: report global ids */
volatile unsigned long long pidns_ino = 0;
volatile unsigned int root_ns_pid = 0; /* adopt at exec (container mode) */
/* failed reservations, per ring: events lost; stops not made (for an
 * attach: a file whose calls are missed; for a throttle: a pause that did
 * not happen, which the next event retries) */
volatile unsigned long long dropped = 0;
volatile unsigned long long ctl_dropped = 0;
volatile unsigned int stack_next_id = 0; /* the last stack id given */

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

/* hash of (tgid, return addresses) -> stack id: each stack is sent once */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, u64);
	__type(value, u32);
} stack_ids SEC(".maps");

/* the capture buffer, per thread: 1 KiB is too big for the BPF stack, and a
 * per-CPU buffer could be overwritten by a uprobe of a task preempting us */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mt_bpf_stack);
} stack_buf SEC(".maps");

/* tgid (global) -> 1 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} tracked SEC(".maps");

/* every stop not handled yet -> when it was made (see struct mt_hold_key);
 * the watchdog of user space holds an fd of it to resume them all if
 * memtrack dies */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mt_hold_key);
	__type(value, u64);
} holds SEC(".maps");

/* executable files user space has handled */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct mt_file_key);
	__type(value, u32);
} known SEC(".maps");

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
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct thread_state);
} threads SEC(".maps");

static __always_inline int is_tracked(u64 id)
{
	u32 tgid = id >> 32;

	return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
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
	return bpf_map_lookup_elem(&threads, &id);
}

/*
 * Stop the current process until user space sends SIGCONT. The order
 * matters: the control record is reserved first (without it nobody would
 * learn of the stop: then there is no stop), the hold is recorded next
 * (whoever sees it may count on a record coming), the signal last (a
 * process is never stopped without its hold being visible).
 */
static __always_inline void stop_current(u32 type, u64 id, u64 dev, u64 ino)
{
	struct mt_hold_key key = { .tgid = id >> 32 };
	u64 now = bpf_ktime_get_ns();
	struct mt_ctl *c;

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
	bpf_send_signal(SIGSTOP);
	bpf_ringbuf_submit(c, BPF_RB_FORCE_WAKEUP);
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

	/* Wake the reader only when the ring fills up: it polls on a tick
	 * anyway, and a wakeup per event costs more than the event. unread
	 * counts this record (reserved): with it the ring is above the high
	 * watermark, so the process stops; what its other threads emit until
	 * the stop reaches them lands above the watermark. */
	unread = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if (unread >= wakeup_at) {
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
		if (unread > high_watermark) {
			stop_current(MT_CTL_THROTTLE, id, 0, 0);
		}
	} else {
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
}

/* ------------------------------------------------------------------ */
/* Call stacks                                                         */
/* ------------------------------------------------------------------ */

/*
 * The stack of the allocation entering at sp, as an id (0: none). Taken at
 * entry, not at return: the allocator frame is then the only one to drop,
 * and an outer without uretprobe (operator new) still gets its caller's
 * stack. At the entry instruction the frame pointer is still the caller's,
 * so the frame-pointer walk starts at the caller's caller: frames[0] (the
 * allocator's own address) is replaced by the return address at sp.
 */
static __always_inline u32 capture_stack(struct pt_regs *ctx, u64 id, u64 sp)
{
	struct mt_bpf_stack *s;
	u64 h = 0xcbf29ce484222325ull ^ (id >> 32), ret, unread, flags;
	u32 n, i, sid, *known, size;
	long got;

	if (!stack_depth) {
		return 0;
	}
	s = bpf_task_storage_get(&stack_buf, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		return 0;
	}
	size = stack_depth * 8;
	if (size > sizeof(s->frames)) {
		size = sizeof(s->frames);
	}
	got = bpf_get_stack(ctx, s->frames, size, BPF_F_USER_STACK);
	if (got <= 0 || bpf_probe_read_user(&ret, sizeof(ret), (void *)sp)) {
		return 0;
	}
	s->frames[0] = ret;
	n = got / 8;
	if (n > MT_STACK_MAX) {
		n = MT_STACK_MAX;
	}
	for (i = 0; i < MT_STACK_MAX; i++) {
		if (i >= n) {
			break;
		}
		h = (h ^ s->frames[i & MT_STACK_MAX]) * 0x100000001b3ull;
	}
	h ^= (u64)n << 56;
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
	s->pid = id >> 32;
	s->nframes = n;
	s->pad = 0;
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
	if (unread + MT_STACK_HDR + n * 8 > stack_high_watermark) {
		stop_current(MT_CTL_THROTTLE, id, 0, 0);
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
	u64 cookie, size = 0, ptr = 0;

	if (!is_tracked(id)) {
		return 0;
	}
	st = thread_get(id);
	if (!st) {
		return 0;
	}
	cookie = bpf_get_attach_cookie(ctx);
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

	if (!ptr || !is_tracked(id)) {
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

/* ------------------------------------------------------------------ */
/* Process tree                                                        */
/* ------------------------------------------------------------------ */

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid, pid, one = 1;

	if (!is_tracked(id)) {
		return 0;
	}
	tgid = BPF_CORE_READ(child, tgid);
	pid = BPF_CORE_READ(child, pid);
	if (tgid != pid) {
		return 0; /* a thread: its tgid is tracked already */
	}
	bpf_map_update_elem(&tracked, &tgid, &one, BPF_ANY);
	if (stack_depth) {
		struct mt_ctl c = {
			.type = MT_CTL_FORK,
			.tgid = id >> 32,
			.pad = tgid,
			.ts = bpf_ktime_get_ns(),
		};

		/* the child's stacks resolve through these mappings */
		if (bpf_ringbuf_output(&ctl, &c, sizeof(c), 0)) {
			__sync_fetch_and_add(&ctl_dropped, 1);
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
	/* group_dead is decremented before this tracepoint */
	if (BPF_CORE_READ(task, signal, live.counter) == 0) {
		bpf_map_delete_elem(&tracked, &tgid);
	}
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task)
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
			bpf_map_update_elem(&tracked, &tgid, &one, BPF_ANY);
			root_ns_pid = 0;
		}
	}
	if (!is_tracked(id)) {
		return 0;
	}
	/* the old image's calls in flight are gone */
	bpf_map_delete_elem(&threads, &id);

	inode = BPF_CORE_READ(task, mm, exe_file, f_inode);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key.ino = BPF_CORE_READ(inode, i_ino);
	/* with stacks, every exec: user space records the new mappings */
	if (!stack_depth && bpf_map_lookup_elem(&known, &key)) {
		return 0;
	}
	stop_current(stack_depth ? MT_CTL_ATTACH | (MT_CTL_AT_EXEC << 16) :
				   MT_CTL_ATTACH,
		     id, key.dev, key.ino);
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
	emit(id, kind, addr, size, 0, 0, 0);
}

static __always_inline int sys_mmap_keep(u64 id, u64 addr, u64 len, u64 prot,
					 u64 flags)
{
	return 1;
}

static __always_inline int sys_munmap_keep(u64 id, u64 addr, u64 len)
{
	return 1;
}

/* An executable file mapped: its uprobes are attached before it runs. */
static __always_inline void sys_mmap_done(u64 id, u64 addr, u64 prot,
					  u64 flags)
{
	struct mt_vma_file f = {};
	struct mt_file_key key;

	if (!(prot & PROT_EXEC) || (flags & MAP_ANONYMOUS)) {
		return;
	}
	/* the file the vma really maps (overlayfs swaps it) */
	mt_vma_file_at(addr, &f);
	if (!f.found) {
		return;
	}
	key.dev = f.dev;
	key.ino = f.ino;
	if (stack_depth || !bpf_map_lookup_elem(&known, &key)) {
		stop_current(MT_CTL_ATTACH, id, key.dev, key.ino);
	}
}

#include "bpf/syscall-events.bpf.h"

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * common/bpf/syscall-events.bpf.h - the mmap, munmap, mremap and brk
 * syscall tracepoints, shared by the eBPF source (plugins/ebpf/
 * memtrack.bpf.c) and the preload source's root mode (plugins/preload/
 * syscalls.bpf.c), so that both record the same events from one
 * definition:
 *
 *   mmap (successful)    Mmap: addr = result, size = len
 *   munmap (successful)  Munmap: addr, len as passed
 *   mremap (successful)  Munmap of the old range, then Mmap of the new one
 *   brk that moved       Brk: addr = new break, size = how far it moved
 *
 * Included by a BPF program after vmlinux.h, the libbpf headers and
 * <memtrack/event.h>, which first defines (static, __always_inline):
 *
 *   int is_tracked(u64 pid_tgid)             the thread is in the tree
 *   struct mt_sys_call *sys_call_get(u64 pid_tgid, int create)
 *                                            the thread's syscall in flight
 *   void sys_emit(u64 pid_tgid, u32 kind, u64 addr, u64 size)
 *   int sys_mmap_keep(u64 pid_tgid, u64 addr, u64 len, u64 prot,
 *                     u64 flags, s64 fd)     0: drop this Mmap
 *   void sys_mmap_done(u64 pid_tgid, u64 addr, u64 len, u64 prot,
 *                      u64 flags, s64 fd)    after a successful mmap
 *   int sys_munmap_keep(u64 pid_tgid, u64 addr, u64 len)  0: drop
 *
 * The program names (on_mmap_enter ...) are the same in both skeletons.
 */
#ifndef MT_SYSCALL_EVENTS_BPF_H
#define MT_SYSCALL_EVENTS_BPF_H

#include "syscall-call.bpf.h"

/*
 * The records of the syscalls:sys_enter_* and sys_exit_* tracepoints, as
 * their format files give them (the common fields, the call's number,
 * then its args or its result): an ABI of the kernel's, read without
 * CO-RE. vmlinux.h's trace_event_raw_sys_enter/exit would relocate each
 * access, and the kernel relocates the preload source's light skeleton
 * itself, looking each structure's name up in a cache of 31 slots that
 * colliding names empty for each other: every miss scans the kernel's
 * 125,000 types (~0.5 ms).
 */
struct mt_tp_sys_enter {
	u64 common;
	long nr;
	unsigned long args[6];
};

struct mt_tp_sys_exit {
	u64 common;
	long nr;
	long ret;
};

static __always_inline void mt_sys_enter(u32 nr, u64 a0, u64 a1, u64 a2,
					u64 a3)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_sys_call *c;

	if (!is_tracked(id)) {
		return;
	}
	c = sys_call_get(id, 1);
	if (!c) {
		return;
	}
	c->nr = nr;
	c->arg0 = a0;
	c->arg1 = a1;
	c->arg2 = a2;
	c->arg3 = a3;
}

/* The call nr in flight on this thread, or NULL. */
static __always_inline struct mt_sys_call *mt_sys_exit(u64 id, u32 nr)
{
	struct mt_sys_call *c;

	c = sys_call_get(id, 0);
	if (!c || c->nr != nr) {
		return NULL;
	}
	c->nr = 0;
	return c;
}

static __always_inline int mt_sys_failed(long ret)
{
	return (unsigned long)ret >= (unsigned long)-MT_MAX_ERRNO;
}

SEC("tp/syscalls/sys_enter_mmap")
int on_mmap_enter(struct mt_tp_sys_enter *ctx)
{
	/* len, prot, flags, fd */
	mt_sys_enter(MT_SYS_MMAP, ctx->args[1], ctx->args[2], ctx->args[3],
		     ctx->args[4]);
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int on_mmap_exit(struct mt_tp_sys_exit *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_sys_call *c;
	long ret = ctx->ret;
	u64 len, prot, flags;
	s64 fd;

	c = mt_sys_exit(id, MT_SYS_MMAP);
	if (!c || mt_sys_failed(ret)) {
		return 0;
	}
	len = c->arg0;
	prot = c->arg1;
	flags = c->arg2;
	fd = (s32)c->arg3;
	if (sys_mmap_keep(id, ret, len, prot, flags, fd)) {
		sys_emit(id, MT_EV_MMAP, ret, len);
	}
	sys_mmap_done(id, ret, len, prot, flags, fd);
	return 0;
}

SEC("tp/syscalls/sys_enter_munmap")
int on_munmap_enter(struct mt_tp_sys_enter *ctx)
{
	mt_sys_enter(MT_SYS_MUNMAP, ctx->args[0], ctx->args[1], 0, 0);
	return 0;
}

SEC("tp/syscalls/sys_exit_munmap")
int on_munmap_exit(struct mt_tp_sys_exit *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_sys_call *c;

	c = mt_sys_exit(id, MT_SYS_MUNMAP);
	if (!c || ctx->ret != 0) {
		return 0;
	}
	if (sys_munmap_keep(id, c->arg0, c->arg1)) {
		sys_emit(id, MT_EV_MUNMAP, c->arg0, c->arg1);
	}
	return 0;
}

SEC("tp/syscalls/sys_enter_mremap")
int on_mremap_enter(struct mt_tp_sys_enter *ctx)
{
	/* old_addr, old_len, new_len */
	mt_sys_enter(MT_SYS_MREMAP, ctx->args[0], ctx->args[1], ctx->args[2],
		     0);
	return 0;
}

SEC("tp/syscalls/sys_exit_mremap")
int on_mremap_exit(struct mt_tp_sys_exit *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_sys_call *c;
	long ret = ctx->ret;

	c = mt_sys_exit(id, MT_SYS_MREMAP);
	if (!c || mt_sys_failed(ret)) {
		return 0;
	}
	/* the old range is gone, the new one is there (maybe the same) */
	sys_emit(id, MT_EV_MUNMAP, c->arg0, c->arg1);
	sys_emit(id, MT_EV_MMAP, ret, c->arg2);
	return 0;
}

SEC("tp/syscalls/sys_enter_brk")
int on_brk_enter(struct mt_tp_sys_enter *ctx)
{
	struct task_struct *task = (void *)bpf_get_current_task();

	/* requested break, break before the call */
	mt_sys_enter(MT_SYS_BRK, ctx->args[0], BPF_CORE_READ(task, mm, brk), 0,
		     0);
	return 0;
}

SEC("tp/syscalls/sys_exit_brk")
int on_brk_exit(struct mt_tp_sys_exit *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	struct mt_sys_call *c;
	u64 ret = ctx->ret, old;

	c = mt_sys_exit(id, MT_SYS_BRK);
	if (!c) {
		return 0;
	}
	old = c->arg1;
	/* brk returns the break in effect: moved only when it changed (a
	 * failed or brk(0) call returns the old one) */
	if (ret == old || ret != c->arg0) {
		return 0;
	}
	/* Brk: addr = new break, size = how far it moved (either way) */
	sys_emit(id, MT_EV_BRK, ret, ret > old ? ret - old : old - ret);
	return 0;
}

#endif /* MT_SYSCALL_EVENTS_BPF_H */

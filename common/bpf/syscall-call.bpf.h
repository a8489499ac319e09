/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * common/bpf/syscall-call.bpf.h - the types of the syscall tracepoints of
 * syscall-events.bpf.h, which a BPF program includes early: its per-thread
 * state holds a struct mt_sys_call. Also the vma -> file lookup both
 * programs use.
 */
#ifndef MT_SYSCALL_CALL_BPF_H
#define MT_SYSCALL_CALL_BPF_H

#define MT_SYS_MMAP 1
#define MT_SYS_MUNMAP 2
#define MT_SYS_MREMAP 3
#define MT_SYS_BRK 4

#define MT_MAX_ERRNO 4095

/* One syscall in flight per thread: its arguments until its exit. */
struct mt_sys_call {
	u64 arg0;
	u64 arg1;
	u64 arg2;
	u64 arg3;
	u32 nr;  /* MT_SYS_*, 0: none */
	u32 tag; /* the includer's, for the call's records */
};

/* The file a vma maps (bpf_find_vma callback). */
struct mt_vma_file {
	u64 dev; /* kernel encoding: major << 20 | minor */
	u64 ino;
	u64 start;
	u64 end;
	u64 off; /* file offset of start */
	u32 found;
	u32 pad;
};

static long mt_vma_file_cb(struct task_struct *task,
			   struct vm_area_struct *vma, void *data)
{
	struct mt_vma_file *f = data;
	struct inode *inode;

	inode = BPF_CORE_READ(vma, vm_file, f_inode);
	f->start = BPF_CORE_READ(vma, vm_start);
	f->end = BPF_CORE_READ(vma, vm_end);
	f->off = BPF_CORE_READ(vma, vm_pgoff) << 12; /* PAGE_SHIFT, x86-64 */
	if (inode) {
		f->dev = BPF_CORE_READ(inode, i_sb, s_dev);
		f->ino = BPF_CORE_READ(inode, i_ino);
		f->found = 1;
	}
	return 0;
}

/* The file mapped at addr in the current process (found == 0: none). */
static __always_inline void mt_vma_file_at(u64 addr, struct mt_vma_file *f)
{
	bpf_find_vma(bpf_get_current_task_btf(), addr, mt_vma_file_cb, f, 0);
}

/*
 * The file behind the current process's descriptor fd (found == 0: none),
 * without the mmap lock that bpf_find_vma() try-locks. At the exit of an
 * mmap of fd it is the file just mapped. It is also the file stat() names:
 * on overlayfs the vma holds the layer's file (see mt_vma_file_cb's
 * callers), the descriptor the overlay's.
 */
static __always_inline void mt_fd_file(s64 fd, struct mt_vma_file *f)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file **fds, *file = NULL;
	struct inode *inode;

	if (fd < 0 || fd >= BPF_CORE_READ(task, files, fdt, max_fds)) {
		return;
	}
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file) {
		return;
	}
	inode = BPF_CORE_READ(file, f_inode);
	if (inode) {
		f->dev = BPF_CORE_READ(inode, i_sb, s_dev);
		f->ino = BPF_CORE_READ(inode, i_ino);
		f->found = 1;
	}
}

#endif /* MT_SYSCALL_CALL_BPF_H */

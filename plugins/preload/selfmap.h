/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/selfmap.h - how the interposer marks its own anonymous
 * mappings (the call-stack tables and buffers of --stacks): it passes this
 * as mmap's fd, which the kernel ignores with MAP_ANONYMOUS. The source's
 * BPF syscall program (syscalls.bpf.c, root mode) drops such Mmap records:
 * they are memtrack's memory, not the program's, and an eBPF recording of
 * the same program has none. The BPF program takes only the number.
 */
#ifndef MT_PRELOAD_SELFMAP_H
#define MT_PRELOAD_SELFMAP_H

#define PL_SELF_MMAP_FD (-0x4d54)

#ifndef __bpf__
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An anonymous private read-write mapping of the interposer's own,
 * marked; extra: more flags (MAP_NORESERVE) or 0. The system call, not
 * libc's mmap, which in the interposer is our own hook. NULL (errno set)
 * when it fails. */
static inline void *pl_self_map(size_t len, int extra)
{
	void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | extra,
				  PL_SELF_MMAP_FD, 0);

	return p == MAP_FAILED ? NULL : p;
}
#endif

#endif

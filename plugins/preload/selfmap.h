/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/selfmap.h - how the interposer marks its own anonymous
 * mappings (the call-stack tables and buffers of --stacks): it passes this
 * as mmap's fd, which the kernel ignores with MAP_ANONYMOUS. The source's
 * BPF syscall program (syscalls.bpf.c, root mode) drops such Mmap records:
 * they are memtrack's memory, not the program's, and an eBPF recording of
 * the same program has none. Included by the BPF program: no includes.
 */
#ifndef MT_PRELOAD_SELFMAP_H
#define MT_PRELOAD_SELFMAP_H

#define PL_SELF_MMAP_FD (-0x4d54)

#endif

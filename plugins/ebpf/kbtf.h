/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/kbtf.h - the kernel structures CO-RE relocates against, in
 * a BTF of their own (kbtf.c).
 */
#ifndef MT_EBPF_KBTF_H
#define MT_EBPF_KBTF_H

struct btf;

/*
 * A new BTF holding each structure and union of the kernel's BTF at
 * vmlinux_path (a raw BTF file: /sys/kernel/btf/vmlinux) whose name is
 * that of a structure or union of local (CO-RE flavours, "___suffix",
 * stripped), with everything it embeds; pointers become void pointers.
 * *ncopied: how many structures were named. NULL with errno set when the
 * file cannot be read or is not what it should be.
 */
struct btf *ebpf_kbtf_small(const char *vmlinux_path, const struct btf *local,
			    unsigned int *ncopied);

/*
 * The copy kept for the next starts (kbtf.c says where and why).
 * ebpf_kbtf_cache_path: its path for the running kernel and this build
 * in path; 0, or -1 when there is none (a build-id missing). Load: the
 * copy at path if it may be trusted and is a BTF, else NULL (errno
 * ENOENT: none to trust). Store: best effort, atomic (a rename).
 */
#include <stddef.h>

int ebpf_kbtf_cache_path(char *path, size_t size);
struct btf *ebpf_kbtf_cache_load(const char *path);
void ebpf_kbtf_cache_store(const char *path, const void *raw, size_t size);

#endif /* MT_EBPF_KBTF_H */

/* SPDX-License-Identifier: MIT */
/*
 * common/bpf-check.h - whether this process can load and attach BPF
 * tracing programs: the eBPF source's checks (plugins/ebpf/system.c),
 * shared with the preload source, which uses BPF when they pass.
 */
#ifndef MT_COMMON_BPF_CHECK_H
#define MT_COMMON_BPF_CHECK_H

#include <stddef.h>

#define MT_TRACEFS "/sys/kernel/tracing"

/* what the caller attaches besides tracepoints */
#define MT_BPF_NEEDS_UPROBES 1u

/*
 * 0 when privileges and kernel allow it; else a negative errno (-EPERM:
 * privileges, -ENOTSUP: the kernel) and one sentence in why naming what
 * is missing. May mount tracefs. Thread-safe; no allocation.
 */
int mt_bpf_check_system(unsigned int needs, char *why, size_t len);

#endif /* MT_COMMON_BPF_CHECK_H */

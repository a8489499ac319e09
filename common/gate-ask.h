/* SPDX-License-Identifier: MIT */
/*
 * common/gate-ask.h - the one question a process of the tree asks the
 * exec gate (host/spawn.c installs the filter, plugins/ebpf/gate.c
 * answers, plugins/preload/interposer/interpose.c asks).
 *
 * Under --source auto a process whose interposer the gate saw mapped
 * before any of libc ran gets no uprobes at all: its interposer records
 * it from its first call, not from its hello (docs/architecture.md, "The
 * auto source"). The interposer learns which by a system call that does
 * not exist, which memtrack's seccomp filter sends to the gate: the gate
 * answers MT_GATE_ASK_YOURS for such a process, 0 for any other. Without
 * the gate (a dead memtrack, whose watchdog lets every call go on; a
 * kernel without the filter) the call fails with ENOSYS, and the process
 * is handed over as before. Only asked under the gate's filter alone: a
 * filter of the program's own may kill a call it does not know.
 */
#ifndef MT_COMMON_GATE_ASK_H
#define MT_COMMON_GATE_ASK_H

/* far above every system call number (463 in Linux 6.18), below x32's
 * bit; the same on x86-64 and AArch64 */
#define MT_GATE_ASK_NR 0x4d5400
/* its first argument: a stray call with this number is not a question */
#define MT_GATE_ASK_MAGIC 0x6d656d747261636bull /* "memtrack" */
#define MT_GATE_ASK_YOURS 0x4d54

#endif

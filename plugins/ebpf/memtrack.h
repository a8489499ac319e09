/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/memtrack.h - shared between the BPF programs (memtrack.bpf.c) and the
 * user-space source plugin (plugins/ebpf/). Fixed-width types, explicit
 * padding: both sides see the same layout.
 */
#ifndef MEMTRACK_BPF_H
#define MEMTRACK_BPF_H

/*
 * The attach cookie of an allocator entry point tells the one generic entry
 * program what the function's arguments mean:
 *   bits 0..7   event kind (enum mt_event_kind), 0xff: derived (mallocx)
 *   bits 8..15  argument shape (MT_SH_*)
 *   bit 16      MT_CK_NORET: no uretprobe on this function (C++ operator
 *               new: an exception unwinding through a uretprobe'd frame
 *               finds the trampoline as return address and terminates);
 *               the allocator call it makes reports the result instead
 *   bit 17      MT_CK_PROG (handover): the function is in a program file
 *               (an executable), whose calls to it no interposer sees:
 *               ours even in a process the interposer records. Not C++'s
 *               operators, which call malloc through the PLT (attach.c)
 */
#define MT_COOKIE(kind, shape) ((unsigned long long)(kind) | \
				((unsigned long long)(shape) << 8))
#define MT_COOKIE_KIND(c) ((c) & 0xff)
#define MT_COOKIE_SHAPE(c) (((c) >> 8) & 0xff)
#define MT_KIND_DERIVED 0xff
#define MT_CK_NORET (1ull << 16)
#define MT_CK_PROG (1ull << 17)

enum mt_shape {
	MT_SH_SIZE1 = 1,	/* f(size, ...) */
	MT_SH_SIZE2,		/* f(align, size) */
	MT_SH_MUL12,		/* f(n, size): n * size */
	MT_SH_REALLOC,		/* f(ptr, size): NULL + size 0 means freed */
	MT_SH_REALLOC_NZ,	/* f(ptr, size): never frees */
	MT_SH_REALLOCARRAY,	/* f(ptr, n, size): NULL + size 0 means freed */
	MT_SH_REALLOCN_NZ,	/* f(ptr, n, size): never frees */
	MT_SH_POSIX_MEMALIGN,	/* int f(void **memptr, align, size) */
	MT_SH_MALLOCX,		/* jemalloc f(size, flags) */
	MT_SH_RALLOCX,		/* jemalloc f(ptr, size, flags) */
	MT_SH_XALLOCX,		/* jemalloc size_t f(ptr, size, extra, flags) */
	MT_SH_FREE,		/* f(ptr, ...) */
};

/* Records of the control ring: a process was stopped (SIGSTOP) by BPF and
 * waits for user space to act, then to send SIGCONT. Every stop is also an
 * entry of the `holds` map (struct mt_hold_key -> stop time), made before
 * the signal, so that whoever resumes (the plugin, its watchdog when
 * memtrack died) finds every stopped process there. */
enum mt_ctl_type {
	MT_CTL_ATTACH = 1,	/* mapped an unknown executable file (with
				 * stacks: any executable file, or exec'd) */
	MT_CTL_THROTTLE = 2,	/* the event or stack ring is nearly full */
	MT_CTL_FORK = 3,	/* with stacks, not a stop: tgid forked pad
				 * (a new process sharing its mappings) */
	MT_CTL_EXIT = 5,	/* not a stop: tgid, whose mappings were in
				 * chunks (struct mt_unw_proc), ended */
	MT_CTL_EXEC = 4,	/* with stacks, not a stop: tgid exec'd the
				 * file the exec gate saw it ask for (dev,
				 * ino); user space records its mappings */
	MT_CTL_HELLO = 6,	/* not a stop: tgid's interposer records its
				 * allocator calls from now on (auto); start:
				 * when its image began (0: unknown), end: its
				 * pid as memtrack's namespace sees it */
	MT_CTL_GONE = 7,	/* not a stop (auto): tgid ended; pad: its
				 * `tracked` bits (MT_TR_*) */
};

/* MTKW records (README.md): who recorded a process's allocator calls */
#define MT_REC_UPROBES 1u
#define MT_REC_INTERPOSER 2u

/* Values of the `tracked` map: a bit set (1 alone: a process of the tree
 * whose allocator calls are probed). */
#define MT_TR_TRACKED 1u
#define MT_TR_INTERPOSED 2u /* its interposer said hello (auto) */

/* mt_ctl.pad of an MT_CTL_ATTACH record with stacks: the stop is at exec
 * (the process's earlier mappings are gone) */
#define MT_CTL_AT_EXEC 1

struct mt_ctl {
	unsigned int type;	/* enum mt_ctl_type */
	unsigned int tgid;	/* global pid of the stopped process */
	unsigned int tid;
	unsigned int pad;	/* ATTACH: MT_CTL_AT_EXEC; FORK: the child */
	unsigned long long dev;	/* ATTACH: kernel dev_t and inode of the file */
	unsigned long long ino;
	unsigned long long ts;	/* when it was stopped (CLOCK_MONOTONIC) */
	/* ATTACH at an mmap whose vma BPF found: the vma, its file offset */
	unsigned long long start, end, off;
};

/*
 * A request to freeze a process (the ring is above the high watermark),
 * on the `freeze_req` ring, read by the freezer thread of user space
 * (freeze.c). The `freezing` map (tgid -> MT_FREEZE_*) says which
 * processes have a request in flight or are frozen, so that one request
 * is made per hold, and which cannot be frozen (BPF stops those with
 * SIGSTOP at the high watermark, as without a freezer).
 */
struct mt_freeze_req {
	unsigned int tgid;	/* as memtrack's pid namespace sees it */
	unsigned int pad;
	unsigned long long ts;	/* CLOCK_MONOTONIC */
};

#define MT_FREEZE_ASKED 1
#define MT_FREEZE_CANNOT 2

/*
 * A reason a process is stopped: one entry per stop, so that each has one
 * inserter (BPF) and one deleter (whoever handled it). tid is 0 for a
 * throttle stop (one per process: the ring is shared by its threads), the
 * stopping thread for an attach stop (a thread is stopped by its own
 * mmap/exec, so it has at most one in flight).
 */
struct mt_hold_key {
	unsigned int tgid;
	unsigned int tid;
};

/*
 * What the exec gate (plugins/ebpf/gate.c) did for a thread's call while
 * the thread waited in it, in the `gated` map keyed by the thread's tid:
 * with stacks, BPF stops nobody at an exec or executable mmap it finds
 * here, done as announced. EXEC: the file the exec runs is attached and
 * has an interpreter (whose executable mapping of libc comes through the
 * gate before any allocator runs). MMAP: the mapping (start, end, off of
 * the file) is recorded and in `unw_procs` before the call was let go.
 */
#define MT_GATED_EXEC 1
#define MT_GATED_MMAP 2

struct mt_gated {
	unsigned int kind;	/* MT_GATED_* */
	unsigned int pad;
	unsigned long long dev;	/* kernel dev_t and inode of the file */
	unsigned long long ino;
	unsigned long long start, end, off; /* MMAP: the vma it makes */
};

/* The ring record is struct mt_event (include/memtrack/event.h) itself:
 * the BPF program includes the ABI header (see bpf-include/stdint.h). */

/*
 * A call stack, sent once per distinct (process, return addresses) on the
 * `stacks` ring: the header and nframes return addresses, innermost first
 * (frames[0] is the allocator's caller). The ring record is as long as the
 * frames it holds; the full array is the per-thread capture buffer.
 */
#define MT_STACK_MAX 127
#define MT_STACK_HDR 16
/* flags: the walk stopped before the root (a frame it could not trust) */
#define MT_STACK_TRUNCATED 1u
/* how far above the entry's sp a frame may be: a thread's stack (8 MiB by
 * default; 64 MiB leaves room for larger ones) */
#define MT_STACK_SPAN (64ull << 20)

struct mt_bpf_stack {
	unsigned int id;	/* > 0; events carry it in stack_id */
	unsigned int pid;	/* global tgid of the process */
	unsigned int nframes;
	unsigned int flags;	/* MT_STACK_* */
	unsigned long long frames[MT_STACK_MAX + 1];
};

/* Key of the map of executable files user space has handled. */
struct mt_file_key {
	unsigned long long dev;	/* kernel dev_t (MKDEV: major << 20 | minor) */
	unsigned long long ino;
};

/*
 * Unwind tables (plugins/ebpf/unwind.c builds them from .eh_frame with
 * libdw, the stack capture reads them). One row per PC range of an
 * executable file, sorted by pc within the file; a file's rows are a
 * slice of the one `unw_rows` array, shared by every process mapping the
 * file. A row holds until the next row's pc.
 */
enum mt_unw_kind {
	MT_UNW_NONE = 0,	/* no CFI here (or one we cannot use): fall
				 * back to the frame pointer */
	MT_UNW_CFA_RSP,		/* CFA = rsp + cfa_off */
	MT_UNW_CFA_RBP,		/* CFA = rbp + cfa_off */
	MT_UNW_PLT,		/* CFA = rsp + 8, + 8 when (pc & 15) >= rbp_off */
	MT_UNW_SIGNAL,		/* __restore_rt: the interrupted registers are
				 * in the ucontext at rsp */
	MT_UNW_END,		/* the return address is undefined: the root
				 * (_start, a thread's clone) */
};

struct mt_unw_row {
	unsigned int pc;	/* file vaddr */
	short cfa_off;
	unsigned char kind;	/* enum mt_unw_kind */
	signed char rbp_off;	/* the caller's rbp at CFA + 8 * rbp_off;
				 * 0: unchanged. The return address is at
				 * CFA - 8 (x86-64) */
};

/*
 * A file's table: its rows, and an index that narrows the search for a
 * pc to a few rows. The index is idx_count more entries of unw_rows right
 * after the rows, each holding in .pc a row number (from row_first): for
 * bucket b, the last row whose pc is at or below idx_pc0 + (b <<
 * idx_shift), 0 when none is. The row of a pc in bucket b is then between
 * entries b and b + 1: at most MT_UNW_SEARCH_ROWS rows (unwind.c picks
 * idx_shift for about 8 a bucket).
 */
/* the most rows one search of the table sees (the index's bucket, or a
 * table too small for an index): BPF halves them in
 * MT_UNW_SEARCH_STEPS steps */
#define MT_UNW_SEARCH_ROWS 64
#define MT_UNW_SEARCH_STEPS 7

struct mt_unw_table {
	unsigned int row_first;		/* its file's rows in unw_rows */
	unsigned int row_count;		/* 0: no table (frame pointers) */
	unsigned int idx_pc0;		/* file vaddr of bucket 0 */
	unsigned int idx_count;		/* buckets + 1; 0: no index */
	unsigned int idx_shift;		/* log2 of a bucket's bytes */
	unsigned int pad;
};

/* An executable mapping of a process, as the unwinder sees it. */
struct mt_unw_map {
	unsigned long long start, end;
	unsigned long long bias;	/* address - file vaddr */
	struct mt_unw_table t;
};

/*
 * A process's executable mappings, sorted by start: those below
 * chunk_lo[0] (at most MT_UNW_MAPS) in its `unw_procs` entry, the rest in
 * up to MT_UNW_CHUNKS chunks of `unw_chunks` (the same struct, directory
 * unused), chunk i holding the mappings from chunk_lo[i] up to
 * chunk_lo[i + 1]. A fork copies the entry in BPF, so parent and child
 * share the chunks: user space never changes a chunk, it writes new ones
 * for the parts that changed (a new mapping: the entry and at most one
 * chunk, split in two when full) and drops those no process names any
 * more (unwind.c). Up to MT_UNW_MAPS * (1 + MT_UNW_CHUNKS) mappings
 * (33,024) when packed; beyond: frame pointers (user space warns).
 */
#define MT_UNW_MAPS 256
#define MT_UNW_CHUNKS 128

struct mt_unw_proc {
	unsigned int n;
	unsigned int nchunks;
	struct mt_unw_map m[MT_UNW_MAPS];	/* sorted by start */
	unsigned int chunk_id[MT_UNW_CHUNKS];	/* keys of unw_chunks */
	unsigned long long chunk_lo[MT_UNW_CHUNKS]; /* ascending */
};

#endif /* MEMTRACK_BPF_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-unwind.h - the interposer's call stacks,
 * unwound in-process with libunwind through .eh_frame (no frame pointers
 * needed).
 *
 * Frames are return addresses, innermost first: frames[0] is where the
 * function that called mtpl_unwind() returns to; called from malloc, a
 * return address in the allocator's caller. That is what the eBPF source
 * puts in the MTKT stack table, and `memtrack report` looks each one up
 * at address - 1 (report/symbolize.c), so the two sources name frames
 * alike.
 *
 * Memory: nothing here calls malloc (tests/progs/stk-chain counts hook
 * reentries: none, the first capture of the process and of each thread
 * included). libunwind 1.6's local unwinder takes its caches from mmap
 * and finds unwind tables with dl_iterate_phdr. One glibc path remains:
 * libunwind registers each thread's frame cache with
 * pthread_setspecific(), which callocs once per thread when the process
 * already has more than 32 pthread keys. The hook must tolerate that
 * reentrant malloc (record it untraced, as any call made while the hook
 * is busy), or the interposer can make each thread's first capture in
 * its pthread_create wrapper, outside any hook. libunwind's set-up also
 * opens a pipe (two O_CLOEXEC descriptors) it checks addresses with.
 *
 * Threads: any thread, any number. unw_backtrace's frame cache is per
 * thread (mmap'd, 256 KiB at the first capture of a thread, freed at its
 * exit). Its register-state cache, used only for frames not cached yet,
 * is per thread when libunwind is built with --enable-per-thread-cache;
 * Debian's is not, and the per-thread policy asked for falls back to the
 * global cache, behind a mutex libunwind takes with all signals blocked.
 *
 * Signals: a capture from a signal handler works (libunwind steps through
 * the signal frame). A handler that interrupts a capture in progress on
 * the same thread gets 0 frames, because libunwind's frame cache is not
 * reentrant; a handler interrupting dlopen/dlclose in the same thread may
 * see the loader's object list mid-update (dl_iterate_phdr's lock is
 * recursive). libunwind's one-time initialisation takes a mutex with
 * signals blocked, and libunwind is opened then (dlopen): call
 * mtpl_unwind_init() from the constructor, before any thread or handler
 * exists; mtpl_unwind() gives no frames before it.
 *
 * fork: libunwind's mutex and glibc's lock of the loader's list (taken by
 * dl_iterate_phdr, not reset in the child by glibc 2.36) would stay
 * locked forever in a child forked while another thread held them, and
 * its next capture of a new frame would hang. The atfork functions below
 * prevent it: register them with pthread_atfork().
 *
 * errno is preserved.
 */
#ifndef MTPL_STACK_UNWIND_H
#define MTPL_STACK_UNWIND_H

#include <stdint.h>

/* libunwind, opened at mtpl_unwind_init() (stack-unwind.c says why): the
 * soname of the ABI Debian 12 ships (libunwind8) */
#define MTPL_UNWIND_SONAME "libunwind.so.8"

/* The deepest stack the MTKT format (and the report) accepts. */
#define MTPL_UNWIND_MAX 127

/*
 * Initialise libunwind for local unwinding (per-thread caches where it
 * has them) and do its one-time set-up now. Idempotent and cheap after
 * the first call; mtpl_unwind() calls it too. Returns 0 or a negative
 * errno.
 */
int mtpl_unwind_init(void);

/*
 * Capture the caller's stack: at most max (<= MTPL_UNWIND_MAX) return
 * addresses into frames, innermost first, after dropping the skip
 * innermost ones. skip 0: frames[0] is where the function that calls
 * mtpl_unwind returns to, so a malloc that calls it directly gets its
 * caller's return address first; a malloc that calls it through a
 * helper of its own passes 1 (the helper and malloc must then be real
 * frames: not inlined, no tail call to the helper). The innermost frames
 * are kept when the stack is deeper than max. Returns the number of
 * frames (0 when nothing could be unwound, or when called from a signal
 * handler that interrupted a capture on the same thread). deeper, if
 * not NULL, is set to 1 when the unwinder found more frames than max
 * (the stack was cut at its root end and must say so), else 0.
 */
int mtpl_unwind(uint64_t *frames, int max, int skip, int *deeper);

/*
 * A section of code that may take libunwind's or the loader's locks: any
 * call of dl_iterate_phdr from the hooks goes between these (stack-maps
 * does; mtpl_unwind does it itself). Nests in one thread (signal
 * handlers). While a fork is being prepared, enter waits for its end.
 */
void mtpl_loader_enter(void);
void mtpl_loader_leave(void);

/*
 * pthread_atfork(mtpl_unwind_atfork_prepare, mtpl_unwind_atfork_parent,
 * mtpl_unwind_atfork_child): prepare waits until no other thread is
 * between mtpl_loader_enter and leave (captures take microseconds) and
 * holds new ones at the door until parent/child reopen it, so that the
 * child starts with those locks free. The forking thread itself is let
 * through (fork handlers that run after this prepare may allocate). A
 * thread held at the door holds what it held when it called: capture
 * before taking any lock a fork handler may need.
 */
void mtpl_unwind_atfork_prepare(void);
void mtpl_unwind_atfork_parent(void);
void mtpl_unwind_atfork_child(void);

#endif /* MTPL_STACK_UNWIND_H */

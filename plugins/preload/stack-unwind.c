/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/stack-unwind.c - see stack-unwind.h.
 *
 * unw_backtrace() rather than an unw_init_local()/unw_step() loop: it
 * walks libunwind's per-thread frame cache (CFA rule and return-address
 * slot per IP, from .eh_frame) and reads each return address straight
 * from the stack, falling back to unw_step() only for frames it cannot
 * describe. tests/progs/stk-bench measures both, for a chain ten deep
 * (14 frames down to _start) on a 2-core VM: warm, unw_backtrace takes
 * 0.17 us per capture, the unw_step loop 12 us (it looks each frame's
 * unwind table up again through dl_iterate_phdr); cold (ten frames never
 * seen) 23 us against 30 us. The process's first capture, libunwind's
 * set-up, takes about 0.4 ms.
 *
 * unw_backtrace's first entry is the return address into this function,
 * the second the one into its caller; the caller wants its own return
 * address first, hence the 2 + skip entries dropped. This function must therefore stay a real frame: never
 * inlined into its caller, and its call to unw_backtrace never a tail
 * call (the copy after it sees to that).
 */
#include "config.h"

#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <signal.h>
#include <string.h>

#include "stack-unwind.h"

/* more skipped frames than this is a caller's bug, not a stack */
#define SKIP_MAX 16

static int inited;

/* set while this thread is inside libunwind: a signal handler that
 * interrupts it must not reenter libunwind's per-thread caches */
static __thread volatile sig_atomic_t busy
	__attribute__((tls_model("initial-exec")));

int mtpl_unwind_init(void)
{
	void *warm[4];
	int saved = errno;
	int err = 0;

	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) {
		return 0;
	}
	/* per-thread caches: no lock, so no deadlock with a signal handler
	 * (the global cache takes a mutex) */
	if (unw_set_caching_policy(unw_local_addr_space,
				   UNW_CACHE_PER_THREAD)) {
		err = -EINVAL;
		goto end;
	}
	/* unw_set_cache_size() is not offered for per-thread caches in 1.6
	 * (it returns -1): their size is libunwind's built-in one. */

	/* libunwind's one-time set-up (a mutex, a pipe it uses to validate
	 * addresses) happens now, in the caller's context, not later in a
	 * hook or a signal handler */
	busy = 1;
	unw_backtrace(warm, 4);
	busy = 0;
	__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
end:
	errno = saved;
	return err;
}

__attribute__((noinline)) int mtpl_unwind(uint64_t *frames, int max,
					  int skip)
{
	void *ips[2 + SKIP_MAX + MTPL_UNWIND_MAX];
	int saved, n, i, drop;

	if (max <= 0 || skip < 0 || skip > SKIP_MAX || busy) {
		return 0;
	}
	if (max > MTPL_UNWIND_MAX) {
		max = MTPL_UNWIND_MAX;
	}
	if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE) &&
	    mtpl_unwind_init()) {
		return 0;
	}
	saved = errno;
	drop = 2 + skip;
	busy = 1;
	n = unw_backtrace(ips, drop + max);
	busy = 0;
	n = n > drop ? n - drop : 0;
	for (i = 0; i < n; i++) {
		frames[i] = (uint64_t)(uintptr_t)ips[drop + i];
	}
	errno = saved;
	return n;
}

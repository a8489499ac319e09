/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-unwind.c - see stack-unwind.h.
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
 *
 * libunwind is opened with dlopen(RTLD_LOCAL) at mtpl_unwind_init(), not
 * linked: Debian's libunwind.so.8 exports the _Unwind_* exception ABI,
 * and a library in the program's global scope ahead of libgcc_s would
 * take over the program's C++ exceptions (seen: __cxa_throw went through
 * libunwind's _Unwind_RaiseException). Opened locally it serves only us,
 * and a run without --stacks maps nothing of it (and of its liblzma), so
 * that the syscall events of the program stay its own.
 */
#include "config.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "loader-walk.h"
#include "stack-unwind.h"

/* more skipped frames than this is a caller's bug, not a stack */
#define SKIP_MAX 16

static int inited;

#define SYM_NAME(x) SYM_STR(x)
#define SYM_STR(x) #x

static int (*p_backtrace)(void **, int);
static int (*p_set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
static unw_addr_space_t *p_local_as;

/* The three entry points we use, by their real (macro-expanded) names. */
/* Is an object of file name soname loaded? (Not dlopen(RTLD_NOLOAD):
 * that maps /etc/ld.so.cache again, a pair of events in the program's
 * recording.) */
static int loaded_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name, *slash;

	(void)size;
	if (!name) {
		return 0;
	}
	slash = strrchr(name, '/');
	return !strcmp(slash ? slash + 1 : name, (const char *)data);
}

static int open_libunwind(void)
{
	/* the program's own libunwind, if it has one, is left as it is */
	int had = dl_iterate_phdr(loaded_cb, (void *)MTPL_UNWIND_SONAME);
	void *h = dlopen(MTPL_UNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		return -ENOENT;
	}
	if (!had) {
		/* its lookup of a new address walks every object: the one
		 * holding it first (loader-walk.h) */
		(void)pl_dl_redirect_iterate(h);
	}
	p_backtrace = (int (*)(void **, int))dlsym(h, SYM_NAME(unw_backtrace));
	p_set_caching_policy =
		(int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(
			h, SYM_NAME(unw_set_caching_policy));
	p_local_as = (unw_addr_space_t *)dlsym(h,
					       SYM_NAME(unw_local_addr_space));
	if (!p_backtrace || !p_set_caching_policy || !p_local_as) {
		return -ENOENT;
	}
	return 0;
}

/* set while this thread is inside libunwind: a signal handler that
 * interrupts it must not reenter libunwind's per-thread caches */
static __thread volatile sig_atomic_t busy
	__attribute__((tls_model("initial-exec")));

/*
 * The fork gate. Threads inside a loader section count themselves in one
 * of GATE_SLOTS counters (by thread id, each on its own cache line, so
 * that the capture path does not bounce one line between cores); the
 * forking thread raises `forking`, then waits for every counter to drop.
 * Both sides write then read with sequential consistency: either the
 * entering thread sees `forking` and backs out, or the forking thread
 * sees its count.
 */
#define GATE_SLOTS 64

static struct {
	int n;
	char pad[60];
} inside[GATE_SLOTS] __attribute__((aligned(64)));
static int forking;

/* this thread's counter (+1; 0: not chosen yet) and its nesting depth */
static __thread int gate_slot __attribute__((tls_model("initial-exec")));
static __thread volatile sig_atomic_t gate_depth
	__attribute__((tls_model("initial-exec")));
/* set in the forking thread between prepare and parent/child: it goes
 * through the gate (a fork handler that runs after ours may allocate, and
 * so capture; its section ends before the fork) */
static __thread int gate_forker __attribute__((tls_model("initial-exec")));

static int my_slot(void)
{
	if (!gate_slot) {
		gate_slot = 1 + (int)((unsigned)gettid() % GATE_SLOTS);
	}
	return gate_slot - 1;
}

void mtpl_loader_enter(void)
{
	int i;

	if (gate_depth++ > 0) {
		return; /* a handler on top of a section: already counted */
	}
	i = my_slot();
	for (;;) {
		__atomic_add_fetch(&inside[i].n, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST) ||
		    gate_forker) {
			return;
		}
		__atomic_sub_fetch(&inside[i].n, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&forking, __ATOMIC_ACQUIRE)) {
			sched_yield();
		}
	}
}

void mtpl_loader_leave(void)
{
	if (--gate_depth > 0) {
		return;
	}
	__atomic_sub_fetch(&inside[my_slot()].n, 1, __ATOMIC_RELEASE);
}

void mtpl_unwind_atfork_prepare(void)
{
	int i, mine = my_slot();

	gate_forker = 1;
	__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < GATE_SLOTS; i++) {
		/* a fork from a handler on top of our own section: that
		 * one will not end before the fork */
		int own = i == mine && gate_depth > 0;

		while (__atomic_load_n(&inside[i].n, __ATOMIC_SEQ_CST) > own) {
			sched_yield();
		}
	}
}

void mtpl_unwind_atfork_parent(void)
{
	gate_forker = 0;
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
}

void mtpl_unwind_atfork_child(void)
{
	int i;

	/* the other threads are gone, and their counts with them */
	for (i = 0; i < GATE_SLOTS; i++) {
		inside[i].n = 0;
	}
	gate_slot = 0;
	gate_forker = 0;
	if (gate_depth > 0) {
		inside[my_slot()].n = 1;
	}
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
}

int mtpl_unwind_init(void)
{
	void *warm[4];
	int saved = errno;
	int err = 0;

	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) {
		return 0;
	}
	/* per-thread caches where libunwind has them: no lock on the path
	 * (elsewhere, as in Debian's build, this means the global cache) */
	err = open_libunwind();
	if (err) {
		goto end;
	}
	if (p_set_caching_policy(*p_local_as, UNW_CACHE_PER_THREAD)) {
		err = -EINVAL;
		goto end;
	}
	/* unw_set_cache_size() is left alone: it sizes the register-state
	 * cache, which only serves frames unw_backtrace's per-thread frame
	 * cache does not hold yet (measured: no difference cold or warm) */

	/* libunwind's one-time set-up (a mutex, a pipe it uses to validate
	 * addresses) happens now, in the caller's context, not later in a
	 * hook or a signal handler */
	busy = 1;
	mtpl_loader_enter();
	p_backtrace(warm, 4);
	mtpl_loader_leave();
	busy = 0;
	__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
end:
	errno = saved;
	return err;
}

__attribute__((noinline)) int mtpl_unwind(uint64_t *frames, int max,
					  int skip, int *deeper)
{
	/* one entry more than can be kept: the only way to know that the
	 * stack goes on past max */
	void *ips[2 + SKIP_MAX + MTPL_UNWIND_MAX + 1];
	int saved, n, i, drop;

	if (deeper) {
		*deeper = 0;
	}
	if (max <= 0 || skip < 0 || skip > SKIP_MAX || busy) {
		return 0;
	}
	if (max > MTPL_UNWIND_MAX) {
		max = MTPL_UNWIND_MAX;
	}
	/* never set up from here: opening libunwind allocates and takes the
	 * loader's lock, which a hook may be called under */
	if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) {
		return 0;
	}
	saved = errno;
	drop = 2 + skip;
	busy = 1;
	mtpl_loader_enter();
	n = p_backtrace(ips, drop + max + 1);
	mtpl_loader_leave();
	busy = 0;
	n = n > drop ? n - drop : 0;
	if (n > max) {
		n = max;
		if (deeper) {
			*deeper = 1;
		}
	}
	for (i = 0; i < n; i++) {
		frames[i] = (uint64_t)(uintptr_t)ips[drop + i];
	}
	errno = saved;
	return n;
}

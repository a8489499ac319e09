/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stk-hook.h - the allocator hooks of the stk- programs: what
 * the preload interposer does with stacks, reduced to that. The program
 * defines malloc & co., which take the place of libc's for every caller
 * in the process (libc's own, libunwind's, libstdc++'s operator new) and
 * forward to glibc's __libc_* entry points. Every call is unwound,
 * interned and, for a new stack, checked against the mappings, all from
 * inside the hook; a call made while a hook of the same thread is busy is
 * counted as a reentry (nothing of the stack machinery may allocate),
 * except during a thread's first capture: libunwind is opened with
 * dlopen (stack-unwind.c), so its thread-local variables are dynamic TLS,
 * which glibc allocates with malloc at a thread's first use of them.
 *
 * The allocation of STK_MAGIC bytes is the one the test looks at: its
 * frames are kept in `stk_last` for stk_print().
 */
#ifndef STK_HOOK_H
#define STK_HOOK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "stack-maps.h"
#include "stack-table.h"
#include "stack-unwind.h"

#define STK_MAGIC 12345
#define STK_DEPTH 64

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size);
void __libc_free(void *p);

/* the hooks are real frames, as they are in an interposer library: never
 * inlined into the program's calls */
#define STK_HOOK_FN __attribute__((noinline))

static __thread int stk_in_hook;
static __thread int stk_warm; /* this thread has captured once */
static unsigned long stk_reentries, stk_hooked, stk_new, stk_known;
static uint64_t stk_last[STK_DEPTH];
static int stk_nlast;
static struct mtpl_stack_table stk_table;
static uint32_t stk_ids;
static struct mtpl_maps stk_maps;
static int stk_ready;
static unsigned char stk_mapbuf[1 << 16];

/*
 * The order the interposer follows; "ring:" marks where it writes into
 * the ring memtrack reads (here the records are only encoded):
 *   unwind; intern;
 *   new stack: maps lock; if the mappings changed, ring: MTKM records;
 *              maps unlock; ring: the MTKT record; publish (always);
 *   ring: the event, with the id.
 * noinline: the hook is the one frame between malloc and mtpl_unwind,
 * which skips it.
 */
static __attribute__((noinline)) void stk_hook(size_t size)
{
	uint64_t frames[STK_DEPTH];
	unsigned char rec[12 + 8 * STK_DEPTH];
	struct mtpl_stack_ref ref;
	int n;

	if (stk_in_hook) {
		if (stk_warm) {
			__atomic_add_fetch(&stk_reentries, 1,
					   __ATOMIC_RELAXED);
		}
		return;
	}
	stk_in_hook = 1;
	/* skip 1: this function's return into malloc */
	n = mtpl_unwind(frames, STK_DEPTH, 1, NULL);
	stk_warm = 1;
	__atomic_add_fetch(&stk_hooked, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&stk_ready, __ATOMIC_ACQUIRE) && n > 0) {
		int r = mtpl_stack_intern(&stk_table, frames, (uint32_t)n,
					  &ref);

		if (r == MTPL_STACK_NEW) {
			__atomic_add_fetch(&stk_new, 1, __ATOMIC_RELAXED);
			if (!mtpl_maps_lock(&stk_maps)) {
				uint32_t recs = 0;
				size_t need = 0;

				if (mtpl_maps_changed(&stk_maps)) {
					/* ring: stk_mapbuf's records */
					mtpl_maps_write(&stk_maps,
							(uint32_t)getpid(), 0,
							stk_mapbuf,
							sizeof(stk_mapbuf),
							&recs, &need);
				}
				mtpl_maps_unlock(&stk_maps);
			}
			/* ring: the stack's record */
			mtpl_stack_record(rec, sizeof(rec), ref.id,
					  (uint32_t)getpid(), frames,
					  (uint32_t)n);
			mtpl_stack_publish(&stk_table, &ref);
		} else if (r == MTPL_STACK_KNOWN) {
			__atomic_add_fetch(&stk_known, 1, __ATOMIC_RELAXED);
		}
	}
	/* ring: the event */
	if (size == STK_MAGIC) {
		memcpy(stk_last, frames, sizeof(frames[0]) * (size_t)n);
		stk_nlast = n;
	}
	stk_in_hook = 0;
}

STK_HOOK_FN void *malloc(size_t size)
{
	void *p;

	stk_hook(size);
	p = __libc_malloc(size);
	__asm__ volatile("" : "+r"(p)); /* no tail call: keep this frame */
	return p;
}

STK_HOOK_FN void *calloc(size_t n, size_t size)
{
	void *p;

	stk_hook(n * size);
	p = __libc_calloc(n, size);
	__asm__ volatile("" : "+r"(p));
	return p;
}

STK_HOOK_FN void *realloc(void *old, size_t size)
{
	void *p;

	stk_hook(size);
	p = __libc_realloc(old, size);
	__asm__ volatile("" : "+r"(p));
	return p;
}

STK_HOOK_FN void *memalign(size_t align, size_t size)
{
	void *p;

	stk_hook(size);
	p = __libc_memalign(align, size);
	__asm__ volatile("" : "+r"(p));
	return p;
}

void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = memalign(align, size);

	if (!p) {
		return ENOMEM;
	}
	*out = p;
	return 0;
}

void free(void *p)
{
	if (stk_in_hook && stk_warm) {
		__atomic_add_fetch(&stk_reentries, 1, __ATOMIC_RELAXED);
	}
	__libc_free(p);
}

static pid_t stk_parent;

static void stk_atfork_prepare(void)
{
	stk_parent = getpid();
	mtpl_unwind_atfork_prepare();
}

static void stk_atfork_child(void)
{
	unsigned char rec[9];

	mtpl_unwind_atfork_child();
	mtpl_stack_table_atfork_child(&stk_table);
	mtpl_maps_atfork_child(&stk_maps);
	/* ring: the fork record, before any event or stack of the child */
	mtpl_maps_fork_record(rec, sizeof(rec), (uint32_t)getpid(),
			      (uint32_t)stk_parent);
}

/* What the interposer does when it attaches with stacks on: libunwind
 * is opened and set up here, outside any hook (it allocates); captures
 * in the hooks allocate nothing (a reentry would show it). */
static void __attribute__((constructor)) stk_init(void)
{
	if (mtpl_unwind_init() ||
	    mtpl_stack_table_init(&stk_table, 16, 16 << 20, &stk_ids) ||
	    mtpl_maps_init(&stk_maps)) {
		fprintf(stderr, "stk: init failed\n");
		_exit(99);
	}
	pthread_atfork(stk_atfork_prepare, mtpl_unwind_atfork_parent,
		       stk_atfork_child);
	if (!mtpl_maps_lock(&stk_maps)) {
		uint32_t recs = 0;
		size_t need = 0;

		/* ring: the exec record and every mapping, before any
		 * stack */
		mtpl_maps_write(&stk_maps, (uint32_t)getpid(), MTPL_MAPS_EXEC,
				stk_mapbuf, sizeof(stk_mapbuf), &recs, &need);
		mtpl_maps_unlock(&stk_maps);
	}
	__atomic_store_n(&stk_ready, 1, __ATOMIC_RELEASE);
}

/* One line per frame of the STK_MAGIC allocation: the object's base name
 * and the symbol dladdr gives ("?" for none). The return address is
 * looked up at address - 1, as `memtrack report` does. */
static void stk_print(const char *label)
{
	int i;

	printf("begin %s\n", label);
	for (i = 0; i < stk_nlast; i++) {
		Dl_info info;
		const char *file = "?", *sym = "?", *slash;

		if (dladdr((void *)(uintptr_t)(stk_last[i] - 1), &info)) {
			if (info.dli_fname) {
				slash = strrchr(info.dli_fname, '/');
				file = slash ? slash + 1 : info.dli_fname;
			}
			if (info.dli_sname) {
				sym = info.dli_sname;
			}
		}
		printf("frame %s %s\n", file, sym);
	}
	printf("end %s\n", label);
	fflush(stdout);
}

static void stk_summary(void)
{
	printf("reentries %lu hooked %lu new %lu known %lu\n",
	       __atomic_load_n(&stk_reentries, __ATOMIC_RELAXED),
	       __atomic_load_n(&stk_hooked, __ATOMIC_RELAXED),
	       __atomic_load_n(&stk_new, __ATOMIC_RELAXED),
	       __atomic_load_n(&stk_known, __ATOMIC_RELAXED));
	fflush(stdout);
}

#ifdef __cplusplus
}
#endif

#endif /* STK_HOOK_H */

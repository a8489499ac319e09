/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/alloc-probe-api.c - a program that uses an allocator's own
 * API only when the process has it, as libraries do: a weak reference,
 * and dlsym(RTLD_DEFAULT, name). It links none of them. For each of
 * jemalloc's mallocx, mimalloc's mi_malloc and tcmalloc's tc_malloc it
 * prints whether each way found the name; a name found is called, and a
 * NULL block from it (a phantom: found, with nothing behind it) makes the
 * program exit 1. tests/test-preload-harm.sh compares what it prints
 * under memtrack with what it prints alone.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

extern void *mallocx(size_t size, int flags) __attribute__((weak));
extern void *mi_malloc(size_t size) __attribute__((weak));
extern void *tc_malloc(size_t size) __attribute__((weak));

typedef void *(*alloc2_fn)(size_t, int);
typedef void *(*alloc1_fn)(size_t);

/* One way of finding an API: 0 absent, 1 found and working, -1 found
 * and handing out NULL. */
static int try2(alloc2_fn f)
{
	return !f ? 0 : f(64, 0) ? 1 : -1;
}

static int try1(alloc1_fn f)
{
	return !f ? 0 : f(64) ? 1 : -1;
}

static int say(const char *name, int weak, int dl)
{
	printf("%s weak=%s dlsym=%s\n", name,
	       weak ? "found" : "absent", dl ? "found" : "absent");
	if (weak < 0 || dl < 0) {
		fprintf(stderr, "alloc-probe-api: %s is there and returns NULL\n",
			name);
		return 1;
	}
	return 0;
}

int main(void)
{
	int bad = 0;

	/* the blocks are not given back: their free is the allocator's */
	bad |= say("mallocx", try2(mallocx),
		   try2((alloc2_fn)dlsym(RTLD_DEFAULT, "mallocx")));
	bad |= say("mi_malloc", try1(mi_malloc),
		   try1((alloc1_fn)dlsym(RTLD_DEFAULT, "mi_malloc")));
	bad |= say("tc_malloc", try1(tc_malloc),
		   try1((alloc1_fn)dlsym(RTLD_DEFAULT, "tc_malloc")));
	return bad;
}

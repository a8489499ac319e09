/* SPDX-License-Identifier: MIT */
/* An executable with an allocator of its own (as with jemalloc or
 * mimalloc linked in statically), exported (-rdynamic): every malloc of
 * the process is this one, none reaches a preloaded interposer. */
#include <stddef.h>
#include <string.h>

#include "report.h"

static _Alignas(64) char arena[1 << 22];
static size_t used;

void *malloc(size_t size);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);

/* noinline: a probe on its entry sees main's calls (eBPF source) */
__attribute__((noinline)) void *malloc(size_t size)
{
	void *p;

	size = (size + 63) & ~(size_t)63;
	if (size > sizeof(arena) - used) {
		return NULL;
	}
	p = arena + used;
	used += size;
	return p;
}

__attribute__((noinline)) void free(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

void *calloc(size_t n, size_t size)
{
	return n && size > (size_t)-1 / n ? NULL : malloc(n * size);
}

void *realloc(void *p, size_t size)
{
	void *q = malloc(size);

	if (q && p) {
		memcpy(q, p, size); /* the arena is larger than any block */
	}
	return q;
}

int main(void)
{
	void *p = malloc(10401);

	report("Malloc", p, 10401, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* A tiny allocator with tcmalloc's entry point names, for alloc-dlopen. It
 * hands out blocks of a static arena: nothing it does calls malloc. */
#include <stddef.h>

void *tc_malloc(size_t size);
void tc_free(void *p);

static _Alignas(64) char arena[1 << 20];
static size_t used;

__attribute__((noinline)) void *tc_malloc(size_t size)
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

__attribute__((noinline)) void tc_free(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/lw-lookup.c - a library that looks an address up as
 * libunwind does: dl_iterate_phdr() with the address as the first word of
 * the callback's data, the callback returning 1 at the object that holds
 * it. Linked lazily, so that its import of dl_iterate_phdr is writable
 * (tests/test-inproc-stacks: loader_walk_redirect).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

int lw_lookup(const void *ip, int *calls, int *distinct);

struct lookup {
	uintptr_t ip; /* first, as in libunwind's dwarf_callback_data */
	int calls, found;
	const void *phdr[4096];
};

static int cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	int i;

	(void)size;
	if (l->calls < 4096) {
		l->phdr[l->calls] = info->dlpi_phdr;
	}
	l->calls++;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && l->ip >= a &&
		    l->ip < a + ph->p_memsz) {
			l->found = 1;
			return 1;
		}
	}
	return 0;
}

/* 1 if an object holds ip; *calls: the callback's calls; distinct: 1 when
 * no object was offered twice */
int lw_lookup(const void *ip, int *calls, int *distinct)
{
	static struct lookup l;
	int i, j;

	l.ip = (uintptr_t)ip;
	l.calls = l.found = 0;
	dl_iterate_phdr(cb, &l);
	*calls = l.calls;
	*distinct = 1;
	for (i = 0; i < l.calls && i < 4096; i++) {
		for (j = 0; j < i; j++) {
			if (l.phdr[i] == l.phdr[j]) {
				*distinct = 0;
			}
		}
	}
	return l.found;
}

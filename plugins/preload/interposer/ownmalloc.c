/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>

#include "ownmalloc.h"

int pl_malloc_is_defined_at(void *addr)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info di;

	/* dladdr matches undefined symbols with a value too: exactly the
	 * canonical PLT entries (glibc's elf/dl-addr.c) */
	if (!dladdr1(addr, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
		return 1;
	}
	return sym->st_shndx != SHN_UNDEF;
}

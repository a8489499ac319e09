/* SPDX-License-Identifier: MIT */
/*
 * The function symbols of an ELF file, from .symtab and .dynsym: the one
 * walk that the eBPF source (which allocator entry points to probe) and
 * the report's symbolizer (which function an address is in) both need.
 */
#ifndef MT_COMMON_ELF_SYMBOLS_H
#define MT_COMMON_ELF_SYMBOLS_H

#include <gelf.h>

/* Called for one symbol; a non-zero return stops the walk. */
typedef int (*mt_elf_func_cb)(const GElf_Sym *sym, const char *name,
			      void *arg);

/*
 * Calls cb for every defined function symbol of elf (STT_FUNC, a section,
 * a non-zero value, a name that resolves) of both symbol tables, in file
 * order; a symbol in both tables is seen twice. Returns 0, or the first
 * non-zero value cb returned.
 */
int mt_elf_for_each_func(Elf *elf, mt_elf_func_cb cb, void *arg);

#endif /* MT_COMMON_ELF_SYMBOLS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The debug information of one ELF file, through elfutils' libdw: what a
 * debugger says of an address (function, source file and line, the calls
 * inlined there). The DWARF comes from the file itself or from its
 * separate debug file, found by build-id under /usr/lib/debug/.build-id/
 * or by .gnu_debuglink; without any, the function is the ELF symbol
 * (.symtab of the file or of its debug file, else .dynsym).
 *
 * Single-threaded: one caller at a time per handle.
 */
#ifndef MT_REPORT_SYM_DWARF_H
#define MT_REPORT_SYM_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_dw;

/* One function at an address: several when calls were inlined there. */
struct mt_dw_func {
	char *name;    /* as the file has it (mangled C++), malloc'd */
	char *file;    /* the source file, malloc'd; NULL: unknown */
	uint32_t line; /* 0: unknown */
	bool inlined;  /* inlined into the next function of the list */
};

/* The file at path, read through fd (a regular file the caller opened:
 * libdw gets its own duplicate); NULL (errno set) when libdw cannot read
 * it. Separate debug files are looked up by libdw itself. */
struct mt_dw *mt_dw_open(const char *path, int fd);
void mt_dw_close(struct mt_dw *d);

/*
 * The functions at vaddr (an ELF virtual address of the file, the address
 * of an instruction), innermost first, into out[max]. Returns how many:
 * 0 when nothing names it. The caller frees each name and file.
 */
size_t mt_dw_lookup(struct mt_dw *d, uint64_t vaddr, struct mt_dw_func *out,
		    size_t max);

#endif /* MT_REPORT_SYM_DWARF_H */

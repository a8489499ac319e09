/* SPDX-License-Identifier: MIT */
/*
 * report/sym-dwarf.c - see sym-dwarf.h.
 *
 * One Dwfl per file, holding that file alone, reported at bias 0 for a
 * shared object (its ELF virtual addresses are the Dwfl's addresses) and
 * where it was linked for an executable: either way the caller's virtual
 * address plus the module's bias is the Dwfl address. libdwfl finds the
 * separate debug file itself (dwfl_standard_find_debuginfo: build-id
 * under the debuginfo path, then .gnu_debuglink) and reads its symbol
 * table too, which names the local functions a stripped library's
 * .dynsym lacks (libc's __libc_start_call_main).
 *
 * The inlined frames: dwarf_getscopes() lists the DIEs containing the
 * address, innermost first. The innermost function's line is the line
 * table's; each inlined instance's DW_AT_call_file/call_line is the line
 * of the function it was inlined into, up to the DW_TAG_subprogram.
 */
#include "config.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym-dwarf.h"

struct mt_dw {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias; /* Dwfl address = ELF virtual address + bias */
};

/* NULL: libdwfl's default, ":.debug:/usr/lib/debug" */
static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct mt_dw *mt_dw_open(const char *path)
{
	struct mt_dw *d = calloc(1, sizeof(*d));

	if (!d) {
		return NULL;
	}
	d->dwfl = dwfl_begin(&callbacks);
	if (!d->dwfl) {
		goto error;
	}
	dwfl_report_begin(d->dwfl);
	d->mod = dwfl_report_elf(d->dwfl, path, path, -1, 0, false);
	if (!d->mod || dwfl_report_end(d->dwfl, NULL, NULL) != 0 ||
	    !dwfl_module_getelf(d->mod, &d->bias)) {
		goto error;
	}
	return d;
error:
	if (d->dwfl) {
		dwfl_end(d->dwfl);
	}
	free(d);
	errno = EINVAL;
	return NULL;
}

void mt_dw_close(struct mt_dw *d)
{
	if (d) {
		dwfl_end(d->dwfl);
		free(d);
	}
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name;

	/* the linkage name: C++ names demangle to the qualified signature,
	 * as the symbol table names them */
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name,
						     &a));
	if (!name) {
		name = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	}
	return name ? name : dwarf_diename(die);
}

/* The file and line an inlined instance was called from. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file,
		      uint32_t *line)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word w;
	size_t nfiles;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &w) == 0) {
		*line = (uint32_t)w;
	}
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &w) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && w < nfiles) {
		*file = dwarf_filesrc(files, w, NULL, NULL);
	}
}

/* The compilation directory of the CU, which relative file names are
 * relative to (NULL: unknown). */
static const char *comp_dir(Dwarf_Die *cu)
{
	Dwarf_Attribute a;

	return cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)) :
		    NULL;
}

/* file, made absolute with dir when it is relative: pprof and editors
 * open what the frame names. malloc'd; NULL for no file or no memory. */
static char *abs_file(const char *dir, const char *file)
{
	char *p;

	if (!file) {
		return NULL;
	}
	if (file[0] == '/' || !dir || !*dir) {
		return strdup(file);
	}
	if (asprintf(&p, "%s/%s", dir, file) < 0) {
		return NULL;
	}
	return p;
}

static bool put(struct mt_dw_func *out, size_t *n, size_t max,
		const char *name, const char *dir, const char *file,
		uint32_t line, bool inlined)
{
	struct mt_dw_func *f;

	if (*n >= max) {
		return false;
	}
	f = &out[*n];
	f->name = strdup(name ? name : "??");
	f->file = abs_file(dir, file);
	f->line = line;
	f->inlined = inlined;
	if (!f->name || (file && !f->file)) {
		free(f->name);
		free(f->file);
		return false;
	}
	(*n)++;
	return true;
}

size_t mt_dw_lookup(struct mt_dw *d, uint64_t vaddr, struct mt_dw_func *out,
		    size_t max)
{
	Dwarf_Addr addr = vaddr + d->bias, cubias;
	Dwarf_Die *cu, *scopes = NULL;
	const char *file = NULL, *dir = NULL, *sym;
	uint32_t line = 0;
	Dwfl_Line *l;
	size_t n = 0;
	int nscopes, i, lineno;
	GElf_Off symoff;
	GElf_Sym esym;

	l = dwfl_module_getsrc(d->mod, addr);
	if (l) {
		file = dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
		line = lineno > 0 ? (uint32_t)lineno : 0;
	}
	cu = dwfl_module_addrdie(d->mod, addr, &cubias);
	dir = comp_dir(cu);
	nscopes = cu ? dwarf_getscopes(cu, addr - cubias, &scopes) : 0;
	for (i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_subprogram) {
			continue; /* a lexical block */
		}
		if (!put(out, &n, max, die_name(&scopes[i]), dir, file, line,
			 tag == DW_TAG_inlined_subroutine) ||
		    tag == DW_TAG_subprogram) {
			break;
		}
		call_site(cu, &scopes[i], &file, &line);
	}
	free(scopes);
	if (n && !out[n - 1].inlined) {
		return n;
	}
	/* no DWARF function (or only inlined ones, cut): the symbol table
	 * names the function the code belongs to */
	sym = dwfl_module_addrinfo(d->mod, addr, &symoff, &esym, NULL, NULL,
				   NULL);
	if (sym) {
		put(out, &n, max, sym, dir, file, line, false);
	}
	return n;
}

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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym-dwarf.h"

/* A function symbol, at its Dwfl address. */
struct dw_sym {
	GElf_Addr addr;
	GElf_Xword size;
	const char *name; /* libdwfl's, valid until dwfl_end() */
	bool local;
};

struct mt_dw {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias; /* Dwfl address = ELF virtual address + bias */
	/* the module's function symbols sorted by address, built at the
	 * first lookup that needs them: dwfl_module_addrinfo() scans the
	 * whole table on every call (cc1's 13,000 stacks took 20 s) */
	struct dw_sym *syms;
	size_t nsyms;
	bool syms_read;
};

/* NULL: libdwfl's default, ":.debug:/usr/lib/debug" */
static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct mt_dw *mt_dw_open(const char *path, int fd)
{
	struct mt_dw *d = calloc(1, sizeof(*d));
	int own;

	if (!d) {
		return NULL;
	}
	d->dwfl = dwfl_begin(&callbacks);
	if (!d->dwfl) {
		goto error;
	}
	/* never by path: a recording is input, and the path it names could
	 * be a FIFO by now (libdwfl keeps and closes the descriptor) */
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0) {
		goto error;
	}
	dwfl_report_begin(d->dwfl);
	d->mod = dwfl_report_elf(d->dwfl, path, path, own, 0, false);
	if (!d->mod) {
		close(own); /* consumed only on success */
		goto error;
	}
	if (dwfl_report_end(d->dwfl, NULL, NULL) != 0 ||
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
		free(d->syms);
		free(d);
	}
}

static int sym_cmp(const void *a, const void *b)
{
	const struct dw_sym *x = a, *y = b;

	if (x->addr != y->addr) {
		return x->addr < y->addr ? -1 : 1;
	}
	/* of aliases, a sized one first, then an exported one: the name
	 * callers use (_IO_doallocbuf, not __GI__IO_doallocbuf) */
	if ((x->size == 0) != (y->size == 0)) {
		return (x->size == 0) - (y->size == 0);
	}
	return (int)x->local - (int)y->local;
}

/* libdwfl's symbol table: the file's .symtab, else its debug file's,
 * else .dynsym (and the minidebuginfo's), whichever it found best */
static void read_syms(struct mt_dw *d)
{
	int n = dwfl_module_getsymtab(d->mod), i;

	d->syms_read = true;
	if (n <= 0) {
		return;
	}
	d->syms = calloc((size_t)n, sizeof(*d->syms));
	if (!d->syms) {
		return; /* no memory: frames keep what DWARF says */
	}
	for (i = 1; i < n; i++) {
		const char *name;
		GElf_Addr addr;
		GElf_Word shndx;
		GElf_Sym sym;

		name = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx,
					       NULL, NULL);
		/* an undefined symbol's value is its PLT entry, in a
		 * non-PIE executable: code that is not the function */
		if (!name || !*name || !addr || shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)) {
			continue;
		}
		d->syms[d->nsyms++] = (struct dw_sym){
			addr, sym.st_size, name,
			GELF_ST_BIND(sym.st_info) == STB_LOCAL
		};
	}
	qsort(d->syms, d->nsyms, sizeof(*d->syms), sym_cmp);
}

/* The function symbol containing addr, or NULL. */
static const char *sym_at(struct mt_dw *d, GElf_Addr addr)
{
	size_t lo = 0, hi;

	if (!d->syms_read) {
		read_syms(d);
	}
	if (!d->nsyms || addr < d->syms[0].addr) {
		return NULL;
	}
	/* the last symbol starting at or below addr */
	hi = d->nsyms;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].addr <= addr) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	while (lo > 0 && d->syms[lo - 1].addr == d->syms[lo].addr) {
		lo--; /* the sized one of aliases */
	}
	if (d->syms[lo].size && addr >= d->syms[lo].addr + d->syms[lo].size) {
		return NULL;
	}
	return d->syms[lo].name;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name;

	/* a C++ linkage name demangles to the qualified signature, as the
	 * symbol table names it; any other is an assembler label (glibc's
	 * __GI_ aliases), not the name in the source */
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name,
						     &a));
	if (!name) {
		name = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	}
	if (name && !strncmp(name, "_Z", 2)) {
		return name;
	}
	name = dwarf_diename(die);
	return name ? name : "??";
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
	/* a relative directory makes nothing more findable (glibc's
	 * "./libio", whose files already begin with it) */
	if (file[0] == '/' || !dir || dir[0] != '/') {
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
	/* "name@@GLIBC_2.2.5": the version is the symbol's, not the
	 * function's name */
	f->name = strndup(name ? name : "??", name ? strcspn(name, "@") : 2);
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
	sym = sym_at(d, addr);
	if (sym) {
		put(out, &n, max, sym, dir, file, line, false);
	}
	return n;
}

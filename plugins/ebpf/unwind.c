/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/unwind.c - the unwind tables the stack capture walks code
 * built without frame pointers with (source arg `stacks`).
 *
 * As the Parca agent and the OpenTelemetry eBPF profiler do, everything
 * costly happens once per executable file, here: its call-frame
 * information (.eh_frame, or .debug_frame when that is all there is) is
 * read with libdw and compacted to one 8-byte row per PC range (struct
 * mt_unw_row: how to find the CFA, where the caller's rbp was saved; the
 * return address is at CFA - 8 on x86-64), the PLT and the signal
 * trampoline as kinds of their own. A file's rows are a slice of the one
 * `unw_rows` array map, shared by every process that maps the file; user
 * space writes it through mmap (BPF_F_MMAPABLE), so a table costs no
 * syscall per row. Each process then gets its executable mappings, with
 * their file's slice and load bias, in `unw_procs` (struct mt_unw_proc),
 * sorted by address so that BPF finds a pc's mapping by binary search;
 * each table ends with an index of its rows by pc bucket, so that the
 * search for a pc's row halves a few rows only (index_rows()).
 *
 * When: the tables of a file are built the first time a traced process
 * maps it, while the process waits: in the exec gate for a library the
 * loader maps at a fixed address (gate.c), else stopped by BPF at exec or
 * at the executable mmap. A dlopen'd library has its table before the
 * dlopen returns; the process's mappings are pushed before it goes on.
 *
 * Memory: unw_rows has a fixed size (`stack-table-size=`, default 16 MiB:
 * 2M rows). A file that does not fit is unwound by frame pointers, said
 * once. What the tables cost is in the source's stats (--stats).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "array.h"
#include "key-index.h"
#include "elf-symbols.h"
#include "kernel-dev.h"

/* DWARF register numbers, x86-64 */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RIP 16

#define MAX_LOADS 8

/* a table being built */
struct rows {
	struct mt_unw_row *r;
	size_t n, cap;
};

static int rows_put(struct rows *t, const struct mt_unw_row *row)
{
	struct mt_unw_row *p;

	/* the same rule as the row before: it only extends that one */
	if (t->n && t->r[t->n - 1].kind == row->kind &&
	    t->r[t->n - 1].cfa_off == row->cfa_off &&
	    t->r[t->n - 1].rbp_off == row->rbp_off) {
		return 0;
	}
	if (t->n && t->r[t->n - 1].pc == row->pc) {
		t->r[t->n - 1] = *row; /* an empty range before: replaced */
		return 0;
	}
	p = mt_array_grow(t->r, &t->cap, t->n + 1, sizeof(*t->r));
	if (!p) {
		return -ENOMEM;
	}
	t->r = p;
	t->r[t->n++] = *row;
	return 0;
}

/* An "offset(N)" rule (libdw: call_frame_cfa [plus_uconst N]): 0 and
 * the offset in *off, -1 for any other rule. */
static int cfa_offset_rule(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa) {
		return -1;
	}
	if (nops == 1) {
		*off = 0;
		return 0;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 0;
	}
	return -1;
}

/* The PLT's CFA expression (binutils): rsp + 8, + 8 once the entry has
 * pushed: breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus. */
static int plt_threshold(const Dwarf_Op *ops, size_t nops)
{
	if (nops == 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
	    ops[1].atom == DW_OP_breg16 && ops[2].atom == DW_OP_lit15 &&
	    ops[3].atom == DW_OP_and && ops[4].atom >= DW_OP_lit0 &&
	    ops[4].atom <= DW_OP_lit31 && ops[5].atom == DW_OP_ge) {
		return ops[4].atom - DW_OP_lit0;
	}
	return -1;
}

/* The row of frame (whose range starts at pc). */
static void frame_row(Dwarf_Frame *frame, uint64_t pc, bool signal,
		      struct mt_unw_row *row)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int64_t off;
	int thr;

	memset(row, 0, sizeof(*row));
	row->pc = (unsigned int)pc;
	row->kind = MT_UNW_NONE;
	if (signal) {
		row->kind = MT_UNW_SIGNAL;
		return;
	}
	if (dwarf_frame_register(frame, DW_RIP, ops_mem, &ops, &nops)) {
		return;
	}
	if (nops == 0 && ops == ops_mem) {
		row->kind = MT_UNW_END; /* undefined: the outermost frame */
		return;
	}
	if (cfa_offset_rule(ops, nops, &off) || off != -8) {
		return;
	}
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops == 0) {
		return;
	}
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DW_RSP || ops[0].number == DW_RBP) &&
	    (int64_t)ops[0].number2 >= INT16_MIN &&
	    (int64_t)ops[0].number2 <= INT16_MAX) {
		row->kind = ops[0].number == DW_RSP ? MT_UNW_CFA_RSP :
						      MT_UNW_CFA_RBP;
		row->cfa_off = (short)(int64_t)ops[0].number2;
	} else if ((thr = plt_threshold(ops, nops)) >= 0) {
		row->kind = MT_UNW_PLT;
		row->rbp_off = (signed char)thr;
		return; /* rbp untouched */
	} else {
		return;
	}
	if (dwarf_frame_register(frame, DW_RBP, ops_mem, &ops, &nops)) {
		row->kind = MT_UNW_NONE;
		return;
	}
	if (nops == 0) {
		return; /* same value, or undefined: left as it is */
	}
	if (cfa_offset_rule(ops, nops, &off) || off % 8 || off == 0 ||
	    off / 8 < INT8_MIN || off / 8 > INT8_MAX) {
		row->kind = MT_UNW_NONE;
		return;
	}
	row->rbp_off = (signed char)(off / 8);
}

/* Rows from start on while the CFI covers the range; returns where it
 * stopped covering. */
static uint64_t rows_from(Dwarf_CFI *cfi, uint64_t start, uint64_t floor,
			  uint64_t limit, struct rows *t, int *err)
{
	uint64_t addr = start;

	while (addr < limit) {
		Dwarf_Frame *frame;
		Dwarf_Addr lo, hi;
		struct mt_unw_row row;
		bool signal = false;

		if (dwarf_cfi_addrframe(cfi, addr, &frame)) {
			break;
		}
		if (dwarf_frame_info(frame, &lo, &hi, &signal) < 0 ||
		    hi <= addr) {
			free(frame);
			break;
		}
		/* a start from the symbols can be past the FDE's (glibc's
		 * __restore_rt: its FDE begins at the nop before it, so that
		 * return-address lookups at pc - 1 land in it) */
		frame_row(frame, lo < addr && lo >= floor ? lo : addr, signal,
			  &row);
		free(frame);
		*err = rows_put(t, &row);
		if (*err) {
			break;
		}
		addr = hi;
	}
	return addr;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct starts {
	uint64_t *a;
	size_t n, cap;
};

static int starts_put(struct starts *s, uint64_t v)
{
	uint64_t *p = mt_array_grow(s->a, &s->cap, s->n + 1, sizeof(*s->a));

	if (!p) {
		return -ENOMEM;
	}
	s->a = p;
	s->a[s->n++] = v;
	return 0;
}

/* Where FDEs start, from .eh_frame_hdr's search table (datarel sdata4,
 * what every linker writes); -ENOENT when there is none. */
static int hdr_starts(Elf *elf, struct starts *s)
{
	size_t phnum, i, size;
	const unsigned char *raw = (const unsigned char *)elf_rawfile(elf,
								     &size);
	int err = -ENOENT;

	if (!raw || elf_getphdrnum(elf, &phnum)) {
		return -ENOENT;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		const unsigned char *h;
		uint32_t count, j;

		if (!gelf_getphdr(elf, (int)i, &ph) ||
		    ph.p_type != PT_GNU_EH_FRAME || ph.p_offset + 12 > size ||
		    ph.p_offset + ph.p_filesz > size) {
			continue;
		}
		h = raw + ph.p_offset;
		/* version 1; eh_frame_ptr pcrel sdata4; count udata4;
		 * table datarel sdata4 */
		if (h[0] != 1 || (h[1] & 0x0f) != 0x0b || h[2] != 0x03 ||
		    h[3] != 0x3b) {
			continue;
		}
		memcpy(&count, h + 8, 4);
		if (12 + (uint64_t)count * 8 > ph.p_filesz) {
			continue;
		}
		for (j = 0; j < count; j++) {
			int32_t loc;

			memcpy(&loc, h + 12 + (size_t)j * 8, 4);
			err = starts_put(s, ph.p_vaddr + (int64_t)loc);
			if (err) {
				return err;
			}
		}
		return 0;
	}
	return err;
}

static int sym_start(const GElf_Sym *sym, const char *name, void *arg)
{
	return starts_put(arg, sym->st_value);
}

/* The executable PT_LOAD ranges (file vaddr) and every segment's
 * offset -> vaddr. */
static int file_loads(Elf *elf, struct ebpf_unw_file *f, uint64_t *text_lo,
		      uint64_t *text_hi)
{
	size_t phnum, i;

	*text_lo = UINT64_MAX;
	*text_hi = 0;
	if (elf_getphdrnum(elf, &phnum)) {
		return -EINVAL;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD) {
			continue;
		}
		if (f->nloads < MAX_LOADS) {
			f->load_off[f->nloads] = ph.p_offset;
			f->load_vaddr[f->nloads] = ph.p_vaddr;
			f->load_size[f->nloads] = ph.p_filesz;
			f->nloads++;
		}
		if (ph.p_flags & PF_X) {
			if (ph.p_vaddr < *text_lo) {
				*text_lo = ph.p_vaddr;
			}
			if (ph.p_vaddr + ph.p_memsz > *text_hi) {
				*text_hi = ph.p_vaddr + ph.p_memsz;
			}
		}
	}
	return *text_hi > *text_lo ? 0 : -ENOENT;
}

/* Whether elf has a section of that name (.debug_frame: libdw is only
 * asked for DWARF where there is some). */
static int has_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx)) {
		return 0;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name)) {
			return 1;
		}
	}
	return 0;
}

/*
 * The rows of an ELF file into t: .eh_frame's, and .debug_frame's for the
 * code .eh_frame does not cover (a program built with
 * -fno-asynchronous-unwind-tables -g has .eh_frame for its start files
 * only). Where the FDEs start: .eh_frame_hdr's table, and with
 * .debug_frame (or without the table) the function symbols too.
 */
static int build_rows(Elf *elf, struct ebpf_unw_file *f, struct rows *t)
{
	struct starts s = { 0 };
	Dwarf_CFI *eh, *dbg = NULL;
	Dwarf *dw = NULL;
	uint64_t lo, hi, addr;
	size_t i;
	int err;

	err = file_loads(elf, f, &lo, &hi);
	if (err) {
		return err;
	}
	if (hi > UINT32_MAX) {
		return -ERANGE; /* rows hold 32-bit pcs */
	}
	eh = dwarf_getcfi_elf(elf);
	if (has_section(elf, ".debug_frame")) {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		dbg = dw ? dwarf_getcfi(dw) : NULL;
	}
	if (!eh && !dbg) {
		if (dw) {
			dwarf_end(dw);
		}
		return -ENOENT;
	}
	err = eh ? hdr_starts(elf, &s) : -ENOENT;
	if (err == -ENOENT || (!err && dbg)) {
		err = mt_elf_for_each_func(elf, sym_start, &s);
		if (!err) {
			err = starts_put(&s, lo);
		}
	}
	if (!err) {
		qsort(s.a, s.n, sizeof(*s.a), u64_cmp);
	}
	addr = 0;
	for (i = 0; !err && i < s.n; i++) {
		struct mt_unw_row gap = { .kind = MT_UNW_NONE };
		uint64_t end = s.a[i];

		if (s.a[i] < addr || s.a[i] < lo || s.a[i] >= hi) {
			continue; /* inside a range done, or not code */
		}
		if (eh) {
			end = rows_from(eh, s.a[i], addr, hi, t, &err);
		}
		if (!err && end == s.a[i] && dbg) {
			end = rows_from(dbg, s.a[i], addr, hi, t, &err);
		}
		if (!err && end > s.a[i]) {
			/* up to the next covered range: no CFI */
			gap.pc = (unsigned int)end;
			err = rows_put(t, &gap);
			addr = end;
		}
	}
	free(s.a);
	if (eh) {
		dwarf_cfi_end(eh);
	}
	if (dw) {
		dwarf_end(dw);
	}
	return err;
}

/* rows a bucket of the index holds, about */
#define IDX_ROWS_PER_BUCKET 8
/* and at most (MT_UNW_SEARCH_ROWS), so that BPF's search is short */
#define IDX_MIN_SHIFT 6 /* a bucket this small never holds more */
_Static_assert((1u << IDX_MIN_SHIFT) <= MT_UNW_SEARCH_ROWS,
	       "rows are at distinct pcs");

/* The index entry of each bucket of 2^shift bytes from pc0 (nb of them)
 * into out, when given; returns the most rows a bucket's search sees. */
static size_t index_fill(const struct mt_unw_row *r, size_t n, uint64_t pc0,
			 unsigned int shift, size_t nb, struct mt_unw_row *out)
{
	size_t b, row = 0, prev = 0, most = 0;

	for (b = 0; b < nb; b++) {
		uint64_t at = pc0 + ((uint64_t)b << shift);

		while (row + 1 < n && r[row + 1].pc <= at) {
			row++;
		}
		if (b && row - prev + 1 > most) {
			most = row - prev + 1; /* bucket b - 1: prev .. row */
		}
		prev = row;
		if (out) {
			memset(&out[b], 0, sizeof(out[b]));
			out[b].pc = (unsigned int)row;
		}
	}
	return most;
}

/*
 * Append the index (memtrack.h: struct mt_unw_table) to the n rows of t:
 * buckets of 2^shift bytes from the first row's pc, shift chosen for
 * about IDX_ROWS_PER_BUCKET rows a bucket (the index costs an eighth of
 * the rows or so), made smaller where a bucket would hold more than
 * MT_UNW_SEARCH_ROWS: BPF's search then takes a few bounded steps instead
 * of halving the whole table. Fills tab's row_count and index fields
 * (not row_first).
 */
static int index_rows(struct rows *t, struct mt_unw_table *tab)
{
	uint64_t pc0 = t->r[0].pc, span = t->r[t->n - 1].pc - pc0 + 1;
	size_t nb, n = t->n;
	unsigned int shift = IDX_MIN_SHIFT;
	struct mt_unw_row *p;

	memset(tab, 0, sizeof(*tab));
	tab->row_count = (uint32_t)n;
	if (n <= MT_UNW_SEARCH_ROWS) {
		return 0; /* searched whole in as many steps */
	}
	while ((span >> shift) > n / IDX_ROWS_PER_BUCKET) {
		shift++;
	}
	/* the last bucket's end too */
	while (shift > IDX_MIN_SHIFT &&
	       index_fill(t->r, n, pc0, shift, (size_t)(span >> shift) + 2,
			  NULL) > MT_UNW_SEARCH_ROWS) {
		shift--;
	}
	nb = (size_t)(span >> shift) + 2;
	p = mt_array_grow(t->r, &t->cap, n + nb, sizeof(*t->r));
	if (!p) {
		return -ENOMEM;
	}
	t->r = p;
	index_fill(t->r, n, pc0, shift, nb, t->r + n);
	t->n = n + nb;
	tab->idx_pc0 = (uint32_t)pc0;
	tab->idx_count = (uint32_t)nb;
	tab->idx_shift = shift;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The table of a file, built once (rows 0: frame pointers there). */
static struct ebpf_unw_file *file_get(struct ebpf_state *st, uint64_t dev,
				      uint64_t ino, const char *path,
				      const char *shown)
{
	struct ebpf_unw_file *f;
	struct rows t = { 0 };
	uint32_t idx;
	uint64_t t0;
	Elf *elf;
	int fd, err;

	if (!mt_key_get(&st->unw_files_idx, dev, ino, &idx)) {
		return &st->unw_files[idx];
	}
	f = mt_array_grow(st->unw_files, &st->unw_files_cap,
			  st->nunw_files + 1, sizeof(*f));
	if (!f) {
		return NULL;
	}
	st->unw_files = f;
	if (mt_key_put(&st->unw_files_idx, dev, ino,
		       (uint32_t)st->nunw_files)) {
		return NULL;
	}
	f = &st->unw_files[st->nunw_files++];
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	t0 = now_ns();
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return f;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf && elf_kind(elf) == ELF_K_ELF ? build_rows(elf, f, &t) :
						  -EINVAL;
	if (elf) {
		elf_end(elf);
	}
	close(fd);
	if (!err && t.n && index_rows(&t, &f->t)) {
		memset(&f->t, 0, sizeof(f->t)); /* frame pointers there */
		err = -ENOMEM;
	}
	if (!err && t.n) {
		if (st->unw_nrows + t.n > st->unw_max_rows) {
			if (!st->unw_full_warned) {
				ebpf_log(st, MT_LOG_WARN,
					 "unwind tables full (stack-table-size=%zu bytes): %s, and any other file that does not fit, is unwound by frame pointers",
					 st->unw_max_rows *
						 sizeof(struct mt_unw_row),
					 shown);
				st->unw_full_warned = 1;
			}
			st->unw_files_skipped++;
			memset(&f->t, 0, sizeof(f->t));
		} else {
			memcpy(st->unw_rows + st->unw_nrows, t.r,
			       t.n * sizeof(*t.r));
			f->t.row_first = (uint32_t)st->unw_nrows;
			st->unw_nrows += t.n;
			st->unw_files_built++;
		}
	}
	free(t.r);
	t0 = now_ns() - t0;
	st->unw_build_ns += t0;
	if (st->host->log_level >= MT_LOG_DEBUG) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "%s: %u unwind rows, %u index entries (%zu bytes), built in %.3f s",
			 shown, f->t.row_count, f->t.idx_count,
			 (size_t)(f->t.row_count + f->t.idx_count) *
				 sizeof(struct mt_unw_row),
			 (double)t0 / 1e9);
	}
	return f;
}

int ebpf_unw_mapping(struct ebpf_state *st, struct ebpf_range *r,
		     uint64_t dev, uint64_t ino, uint64_t off,
		     const char *path, const char *shown)
{
	struct ebpf_unw_file *f;
	size_t i;

	memset(&r->t, 0, sizeof(r->t));
	r->bias = 0;
	if (!st->unw_rows) {
		return 0;
	}
	f = file_get(st, dev, ino, path, shown);
	if (!f) {
		return -ENOMEM;
	}
	for (i = 0; i < f->nloads; i++) {
		if (off >= f->load_off[i] &&
		    off < f->load_off[i] + f->load_size[i]) {
			r->bias = r->start - (off - f->load_off[i] +
					      f->load_vaddr[i]);
			r->t = f->t;
			break;
		}
	}
	return 0;
}

/*
 * Prefetch. libdw allocates a frame for every row it computes, and once a
 * traced process's libc has our uprobes, so has ours (uprobes are per
 * file, in every process that maps it): each row then costs memtrack
 * three traps (malloc, its return, free), some 20 us. On jq the tables
 * built after its libc stop took 0.104 s (libm, 5.9K rows) and 0.072 s
 * (libonig, 4.6K rows), against 0.009 s for libc's 28K rows built before
 * the attach. So at each stop, before its uprobes are attached, the
 * tables of the libraries the mapped files need (DT_NEEDED, closed over,
 * looked for in the directories those files are in, as the loader mostly
 * finds them) are built too; when the process maps them, they are there.
 * A guess that misses (a library the loader takes from elsewhere, or one
 * never mapped) costs its table's memory, nothing else.
 */
#define PREFETCH_MAX 64
#define PREFETCH_DIRS 16

/* DT_NEEDED names of the ELF file at path, each passed to fn. */
static void needed_each(const char *path,
			void (*fn)(const char *name, void *arg), void *arg)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL))) {
			continue;
		}
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(d, (int)i, &dyn) ||
			    dyn.d_tag == DT_NULL) {
				break;
			}
			if (dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val))) {
				fn(name, arg);
			}
		}
		break;
	}
	if (elf) {
		elf_end(elf);
	}
	close(fd);
}

struct prefetch {
	struct ebpf_state *st;
	char *queue[PREFETCH_MAX]; /* paths whose needs are looked at */
	size_t n;
	char *dirs[PREFETCH_DIRS];
	size_t ndirs;
};

static int prefetch_has(const struct prefetch *pf, const char *path)
{
	size_t i;

	for (i = 0; i < pf->n; i++) {
		if (!strcmp(pf->queue[i], path)) {
			return 1;
		}
	}
	return 0;
}

static void prefetch_add_dir(struct prefetch *pf, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t i, len;

	if (!slash || pf->ndirs == PREFETCH_DIRS) {
		return;
	}
	len = (size_t)(slash - path);
	for (i = 0; i < pf->ndirs; i++) {
		if (strlen(pf->dirs[i]) == len &&
		    !strncmp(pf->dirs[i], path, len)) {
			return;
		}
	}
	pf->dirs[pf->ndirs] = strndup(path, len);
	if (pf->dirs[pf->ndirs]) {
		pf->ndirs++;
	}
}

/* Build the table of the file at path and queue it for its own needs,
 * when it is a regular file; 1 when it is, 0 when it is not there. */
static int prefetch_try(struct prefetch *pf, const char *path)
{
	struct stat sb;

	if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
		return 0;
	}
	if (pf->n < PREFETCH_MAX && !prefetch_has(pf, path) &&
	    (pf->queue[pf->n] = strdup(path))) {
		file_get(pf->st,
			 mt_kernel_dev(major(sb.st_dev), minor(sb.st_dev)),
			 sb.st_ino, path, path);
		pf->n++;
	}
	return 1;
}

static void prefetch_needed(const char *name, void *arg)
{
	struct prefetch *pf = arg;
	char cand[PATH_MAX];
	size_t i;

	if (strchr(name, '/')) {
		prefetch_try(pf, name);
		return;
	}
	for (i = 0; i < pf->ndirs; i++) {
		if (snprintf(cand, sizeof(cand), "%s/%s", pf->dirs[i], name) <
			    (int)sizeof(cand) &&
		    prefetch_try(pf, cand)) {
			return;
		}
	}
}

void ebpf_unw_prefetch(struct ebpf_state *st, char *const *paths, size_t n)
{
	struct prefetch pf = { .st = st };
	size_t i;

	if (!st->unw_rows) {
		return;
	}
	for (i = 0; i < n && pf.n < PREFETCH_MAX; i++) {
		if (paths[i][0] == '/' && !prefetch_has(&pf, paths[i])) {
			pf.queue[pf.n] = strdup(paths[i]);
			if (pf.queue[pf.n]) {
				prefetch_add_dir(&pf, paths[i]);
				pf.n++;
			}
		}
	}
	/* the queue grows as it is walked: the needs' needs */
	for (i = 0; i < pf.n; i++) {
		needed_each(pf.queue[i], prefetch_needed, &pf);
	}
	for (i = 0; i < pf.n; i++) {
		free(pf.queue[i]);
	}
	for (i = 0; i < pf.ndirs; i++) {
		free(pf.dirs[i]);
	}
}

static void chunk_ref(struct ebpf_state *st, uint32_t id, int by)
{
	if (id >= st->unw_chunk_refs_cap) {
		size_t cap = st->unw_chunk_refs_cap;
		uint32_t *r = mt_array_grow(st->unw_chunk_refs, &cap, id + 1,
					    sizeof(*r));

		if (!r) {
			return; /* never dropped: memory, not a wrong stack */
		}
		memset(r + st->unw_chunk_refs_cap, 0,
		       (cap - st->unw_chunk_refs_cap) * sizeof(*r));
		st->unw_chunk_refs = r;
		st->unw_chunk_refs_cap = cap;
	}
	if (by > 0) {
		st->unw_chunk_refs[id]++;
	} else if (st->unw_chunk_refs[id] && !--st->unw_chunk_refs[id]) {
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.unw_chunks),
				    &id);
	}
}

void ebpf_unw_chunks_ref(struct ebpf_state *st, const struct ebpf_seen *seen)
{
	uint32_t i;

	for (i = 0; i < seen->nchunks; i++) {
		chunk_ref(st, seen->chunk[i], 1);
	}
}

void ebpf_unw_chunks_release(struct ebpf_state *st, struct ebpf_seen *seen)
{
	while (seen->nchunks) {
		chunk_ref(st, seen->chunk[--seen->nchunks], -1);
	}
}

/* A digest of ranges [a, b) as BPF would see them: a chunk whose first
 * address and digest are those of one written before holds the same. */
static uint64_t unw_digest(const struct ebpf_range *r, size_t a, size_t b)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)(b - a);
	size_t i;

	for (i = a; i < b; i++) {
		uint64_t v[5] = { r[i].start, r[i].end, r[i].bias,
				  (uint64_t)r[i].t.row_first << 32 |
					  r[i].t.row_count,
				  (uint64_t)r[i].t.idx_pc0 << 32 |
					  r[i].t.idx_count << 8 |
					  r[i].t.idx_shift };
		size_t k;

		for (k = 0; k < 5; k++) {
			/* splitmix64's finaliser over the running hash */
			uint64_t z = h ^ v[k];

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			h = z ^ (z >> 31);
		}
	}
	return h;
}

static void unw_fill(struct mt_unw_proc *p, const struct ebpf_range *r,
		     size_t a, size_t b)
{
	size_t i;

	for (i = a; i < b && p->n < MT_UNW_MAPS; i++) {
		struct mt_unw_map *m = &p->m[p->n++];

		m->start = r[i].start;
		m->end = r[i].end;
		m->bias = r[i].bias;
		m->t = r[i].t;
	}
}

/* The first range at or above address lo, from range from on. */
static size_t unw_first_at(const struct ebpf_seen *seen, size_t from,
			   uint64_t lo)
{
	while (from < seen->n && seen->range[from].start < lo) {
		from++;
	}
	return from;
}

/*
 * Where the process's mappings are cut into parts: the entry's (below
 * lo[0]) and one per chunk. The cuts of the last push are kept, so that
 * a new mapping changes only the part it falls in: an empty part loses
 * its cut, a part over MT_UNW_MAPS is cut in two halves. When that would
 * take more than MT_UNW_CHUNKS chunks the mappings are cut anew, packed
 * (MT_UNW_MAPS each). first[i]: the first range of part i (part 0 the
 * entry's), first[n + 1] == seen->n. Returns the number of chunks.
 */
static uint32_t unw_cut(const struct ebpf_seen *seen, uint64_t *lo,
			size_t *first)
{
	uint32_t n = 0, i;
	size_t at;

	/* the old cuts, without those whose part is empty now */
	for (i = 0, at = 0; i < seen->nchunks; i++) {
		at = unw_first_at(seen, at, seen->chunk_lo[i]);
		if (at < seen->n &&
		    (i + 1 == seen->nchunks ||
		     seen->range[at].start < seen->chunk_lo[i + 1])) {
			/* at its first mapping: the same cut unless that
			 * one went away, and then no mapping spans the cut
			 * (BPF looks a pc up in the part its cut says) */
			lo[n++] = seen->range[at].start;
		}
	}
	for (;;) {
		size_t worst = 0, wi = 0, a, b;

		first[0] = 0;
		for (i = 0; i < n; i++) {
			first[i + 1] = unw_first_at(seen, first[i], lo[i]);
		}
		first[n + 1] = seen->n;
		for (i = 0; i <= n; i++) {
			if (first[i + 1] - first[i] > worst) {
				worst = first[i + 1] - first[i];
				wi = i;
			}
		}
		if (worst <= MT_UNW_MAPS) {
			return n;
		}
		if (n == MT_UNW_CHUNKS) {
			break;
		}
		/* cut the fullest part in two */
		a = first[wi];
		b = first[wi + 1];
		memmove(lo + wi + 1, lo + wi, (n - wi) * sizeof(*lo));
		lo[wi] = seen->range[a + (b - a) / 2].start;
		n++;
	}
	/* packed: the entry's MT_UNW_MAPS, then full chunks */
	n = 0;
	first[0] = 0;
	for (at = MT_UNW_MAPS; at < seen->n && n < MT_UNW_CHUNKS;
	     at += MT_UNW_MAPS) {
		lo[n] = seen->range[at].start;
		first[++n] = at;
	}
	first[n + 1] = seen->n;
	return n;
}

/*
 * The process's mappings to BPF: its unw_procs entry (its own part and
 * the directory) and the chunks of the parts that changed since the last
 * push (a chunk is never changed: a forked child may name it); then the
 * chunks it named before and no longer does are dropped. seen->range is
 * sorted by start.
 */
int ebpf_unw_push(struct ebpf_state *st, struct ebpf_seen *seen)
{
	int cfd = bpf_map__fd(st->skel->maps.unw_chunks);
	uint32_t pid = (uint32_t)seen->pid, old[MT_UNW_CHUNKS], nold, n, i, j;
	uint64_t old_lo[MT_UNW_CHUNKS], old_sum[MT_UNW_CHUNKS];
	uint64_t lo[MT_UNW_CHUNKS];
	size_t first[MT_UNW_CHUNKS + 2];
	struct mt_unw_proc *p, *c;
	int err = 0, full = 0;

	if (!st->unw_rows) {
		return 0;
	}
	p = calloc(2, sizeof(*p));
	if (!p) {
		return -ENOMEM;
	}
	c = p + 1;
	st->unw_pushes++;
	n = unw_cut(seen, lo, first);
	unw_fill(p, seen->range, first[0], first[1]);
	nold = seen->nchunks;
	memcpy(old, seen->chunk, sizeof(old));
	memcpy(old_lo, seen->chunk_lo, sizeof(old_lo));
	memcpy(old_sum, seen->chunk_sum, sizeof(old_sum));
	seen->nchunks = 0;
	for (i = 0; i < n && !full; i++) {
		size_t a = first[i + 1], b = first[i + 2];
		uint64_t sum = unw_digest(seen->range, a, b);
		uint32_t id = 0;

		for (j = 0; j < nold; j++) {
			if (old[j] && old_lo[j] == lo[i] && old_sum[j] == sum) {
				id = old[j]; /* the same: named again */
				old[j] = 0;
				break;
			}
		}
		if (!id) {
			memset(c, 0, sizeof(*c));
			unw_fill(c, seen->range, a, b);
			id = ++st->unw_next_chunk;
			if (!id) {
				id = ++st->unw_next_chunk; /* 0 is no chunk */
			}
			if (bpf_map_update_elem(cfd, &id, c, BPF_ANY)) {
				/* the map is full: the rest by frame
				 * pointers */
				full = 1;
				break;
			}
			chunk_ref(st, id, 1);
			st->unw_chunk_writes++;
		}
		seen->chunk[seen->nchunks] = id;
		seen->chunk_lo[seen->nchunks] = lo[i];
		seen->chunk_sum[seen->nchunks++] = sum;
		p->chunk_id[p->nchunks] = id;
		p->chunk_lo[p->nchunks++] = lo[i];
	}
	if ((full || first[n + 1] - first[n] > MT_UNW_MAPS ||
	     first[1] > MT_UNW_MAPS) && !st->unw_maps_warned) {
		ebpf_log(st, MT_LOG_WARN,
			 "pid %d has %zu executable mappings: past what BPF holds, its stacks use frame pointers",
			 (int)pid, seen->n);
		st->unw_maps_warned = 1;
	}
	if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.unw_procs), &pid,
				p, BPF_ANY)) {
		err = -errno;
	}
	/* the chunks named before and not now, now that BPF names the new
	 * ones */
	while (nold) {
		if (old[--nold]) {
			chunk_ref(st, old[nold], -1);
		}
	}
	free(p);
	return err;
}

int ebpf_unw_prepare(struct ebpf_state *st)
{
	if (!st->stack_depth) {
		return bpf_map__set_max_entries(st->skel->maps.unw_rows, 1);
	}
	st->unw_max_rows = st->stack_table_size / sizeof(struct mt_unw_row);
	if (!st->unw_max_rows) {
		st->unw_max_rows = 1;
	}
	return bpf_map__set_max_entries(st->skel->maps.unw_rows,
					(uint32_t)st->unw_max_rows);
}

int ebpf_unw_init(struct ebpf_state *st)
{
	size_t len = st->unw_max_rows * sizeof(struct mt_unw_row);
	void *p;

	if (!st->stack_depth) {
		return 0;
	}
	elf_version(EV_CURRENT);
	len = (len + (size_t)st->page_size - 1) & ~((size_t)st->page_size - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(st->skel->maps.unw_rows), 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		ebpf_log(st, MT_LOG_ERROR, "mapping the unwind tables: %s",
			 strerror(-err));
		return err;
	}
	/* its pages are mapped one by one, as the rings' (ring.c):
	 * copied entry by entry into every fork; no child reads it */
	madvise(p, len, MADV_DONTFORK);
	st->unw_rows = p;
	st->unw_map_len = len;
	return 0;
}

void ebpf_unw_free(struct ebpf_state *st)
{
	if (st->unw_rows) {
		munmap(st->unw_rows, st->unw_map_len);
		st->unw_rows = NULL;
	}
	free(st->unw_files);
	st->unw_files = NULL;
	mt_key_free(&st->unw_files_idx);
	free(st->unw_chunk_refs);
	st->unw_chunk_refs = NULL;
	st->unw_chunk_refs_cap = 0;
}

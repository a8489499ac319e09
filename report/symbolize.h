/* SPDX-License-Identifier: MIT */
/*
 * Offline symbolization of the call stacks of a recording: the stack table
 * ("MTKT") and the processes' executable mappings ("MTKM") come from its
 * metadata frames (see plugins/ebpf/README.md); names, source files and
 * lines from the files' debug information (report/sym-dwarf.h), on this
 * machine, when the report is made.
 */
#ifndef MT_REPORT_SYMBOLIZE_H
#define MT_REPORT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_sym;

struct mt_sym *mt_sym_new(void);
void mt_sym_free(struct mt_sym *s);

/*
 * A metadata payload, in file order (each stack is tied to the mappings of
 * its process at the time it arrives). Payloads without a known tag are
 * ignored. A damaged one is left out with a warning naming `name`.
 * Returns 0 or -ENOMEM.
 */
int mt_sym_meta(struct mt_sym *s, const void *data, size_t len,
		const char *name);

/* Payloads left out as damaged (s may be NULL). */
size_t mt_sym_damaged(const struct mt_sym *s);

/* Stacks known (the recording has a stack table). */
size_t mt_sym_nstacks(const struct mt_sym *s);

/*
 * The frames of stack id, root first, into names[max][len]: one per
 * function, an address where calls were inlined giving several, shown
 * "function (file.c:LINE)" where the line is known, with " [inlined]"
 * after an inlined one; "file+0xoffset" when a frame cannot be named.
 * Each name is cut to len - 1 bytes (mt_sym_frame_name() gives it whole).
 * Returns how many (0: unknown id).
 */
size_t mt_sym_frames(struct mt_sym *s, uint32_t id, char *names, size_t len,
		     size_t max);

/* One function at a frame's address (demangled). */
struct mt_sym_func {
	const char *name;
	const char *file;  /* the source file as the debug info has it; NULL */
	uint32_t line;     /* 0: unknown */
	bool inlined;      /* inlined into the next function of the frame */
};

/* One frame of a stack. */
struct mt_sym_loc {
	int32_t mod;       /* -1: outside every known mapping */
	uint64_t addr;     /* the return address as recorded */
	uint64_t off;      /* its offset in the module's file */
	uint64_t map_start, map_end, map_off; /* the mapping it was in */
	size_t nfuncs;     /* 0: nothing names it */
	const struct mt_sym_func *funcs; /* innermost first */
};

/*
 * The frames of stack id, innermost first, resolved (*locs, valid until
 * mt_sym_free()). Returns how many (0: unknown id or out of memory).
 */
size_t mt_sym_stack(struct mt_sym *s, uint32_t id,
		    const struct mt_sym_loc **locs);

/*
 * The name of function k of l (0: innermost) as mt_sym_frames() shows it,
 * or of l itself when nothing names it (k 0), into buf[len], snprintf's
 * way: returns the length of the whole name, of which at most len - 1
 * bytes were written (buf may be NULL when len is 0).
 */
size_t mt_sym_frame_name(const struct mt_sym *s, const struct mt_sym_loc *l,
			 size_t k, char *buf, size_t len);

/* The file of module mod and its build-id (*bidlen 0: none recorded). */
const char *mt_sym_module(const struct mt_sym *s, int32_t mod,
			  const unsigned char **bid, size_t *bidlen);

/*
 * The smallest id of the stacks whose frames are shown exactly as those
 * of stack id (a site is what the stack names, not its addresses: calls
 * from one line, an unrolled loop, are one site). id itself when unknown.
 */
uint32_t mt_sym_canon(struct mt_sym *s, uint32_t id);

#endif /* MT_REPORT_SYMBOLIZE_H */

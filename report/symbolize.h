/* SPDX-License-Identifier: MIT */
/*
 * Offline symbolization of the call stacks of a recording: the stack table
 * ("MTKT") and the processes' executable mappings ("MTKM") come from its
 * metadata frames (see plugins/ebpf/README.md); names from the files' ELF symbol
 * tables, on this machine, when the report is made.
 */
#ifndef MT_REPORT_SYMBOLIZE_H
#define MT_REPORT_SYMBOLIZE_H

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

/* Stacks known (the recording has a stack table). */
size_t mt_sym_nstacks(const struct mt_sym *s);

/*
 * The frames of stack id, root first, into names[max][len] (function
 * names, demangled; "file+0xoffset" when a frame cannot be named). Returns
 * how many (0: unknown id).
 */
size_t mt_sym_frames(struct mt_sym *s, uint32_t id, char *names, size_t len,
		     size_t max);

#endif /* MT_REPORT_SYMBOLIZE_H */

/* SPDX-License-Identifier: MIT */
/*
 * common/elf-notes.h - the GNU build-id among ELF notes already in memory:
 * a loaded object's PT_NOTE segment (the interposer, which links nothing
 * of ours and may not allocate; the eBPF source's own build-id) or a file
 * of notes (/sys/kernel/notes). Header-only for the interposer's sake.
 * A file on disk goes through libelf instead (elf-build-id.h).
 */
#ifndef MT_COMMON_ELF_NOTES_H
#define MT_COMMON_ELF_NOTES_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MT_NT_GNU_BUILD_ID 3

/*
 * The build-id among the notes in buf (n bytes; each note's name and
 * descriptor padded to align bytes: 4, or 8 in a PT_NOTE segment aligned
 * so): points *id at it and returns its length, at most max; 0 when
 * there is none, or a note runs past buf (nothing outside buf is read).
 */
static inline size_t mt_notes_build_id(const void *buf, size_t n,
				       size_t align, size_t max,
				       const unsigned char **id)
{
	const unsigned char *b = buf;
	size_t at = 0, pad = align == 8 ? 7 : 3;

	while (at <= n && n - at >= 12) {
		uint32_t nsz, dsz, type;
		size_t name_at = at + 12, desc_at;

		memcpy(&nsz, b + at, 4);
		memcpy(&dsz, b + at + 4, 4);
		memcpy(&type, b + at + 8, 4);
		if (nsz > n - name_at) {
			return 0;
		}
		desc_at = name_at + ((nsz + pad) & ~pad);
		if (desc_at > n || dsz > n - desc_at) {
			return 0;
		}
		if (type == MT_NT_GNU_BUILD_ID && nsz == 4 &&
		    !memcmp(b + name_at, "GNU", 4) && dsz && dsz <= max) {
			*id = b + desc_at;
			return dsz;
		}
		at = desc_at + ((dsz + pad) & ~pad);
	}
	return 0;
}

/* The build-id in the PT_NOTE segments of a loaded object (one that
 * dl_iterate_phdr() names), as mt_notes_build_id() finds it. */
static inline size_t mt_phdr_build_id(const struct dl_phdr_info *info,
				      size_t max, const unsigned char **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		size_t n;

		if (ph->p_type == PT_NOTE &&
		    (n = mt_notes_build_id(
			     (const void *)(info->dlpi_addr + ph->p_vaddr),
			     ph->p_memsz, ph->p_align, max, id))) {
			return n;
		}
	}
	return 0;
}

#endif /* MT_COMMON_ELF_NOTES_H */

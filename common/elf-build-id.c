/* SPDX-License-Identifier: MIT */
#include "config.h"

/* The host builds without libelf too (no symbols then); the eBPF source
 * always has it. */
#ifdef HAVE_LIBELF
#include <string.h>

#include <gelf.h>

#include "elf-build-id.h"

size_t mt_elf_build_id(Elf *elf, unsigned char *out, size_t max)
{
	size_t phnum, i, n = 0;

	if (elf_getphdrnum(elf, &phnum)) {
		return 0;
	}
	for (i = 0; i < phnum && !n; i++) {
		size_t off = 0, name_off, desc_off;
		GElf_Phdr ph;
		GElf_Nhdr nh;
		Elf_Data *d;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE) {
			continue;
		}
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ELF_T_NHDR);
		if (!d) {
			continue;
		}
		while ((off = gelf_getnote(d, off, &nh, &name_off,
					   &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4)) {
				n = nh.n_descsz < max ? nh.n_descsz : max;
				memcpy(out, (char *)d->d_buf + desc_off, n);
				break;
			}
		}
	}
	return n;
}
#endif /* HAVE_LIBELF */

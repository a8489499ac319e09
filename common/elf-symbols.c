/* SPDX-License-Identifier: MIT */
#include "config.h"

/* The host builds without libelf too (no symbols then); the eBPF source
 * always has it. */
#ifdef HAVE_LIBELF
#include <stddef.h>

#include "elf-symbols.h"

int mt_elf_for_each_func(Elf *elf, mt_elf_func_cb cb, void *arg)
{
	Elf_Scn *scn = NULL;
	int err;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, count;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize) {
			continue;
		}
		data = elf_getdata(scn, NULL);
		if (!data) {
			continue;
		}
		count = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < count; i++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value) {
				continue;
			}
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name) {
				continue;
			}
			err = cb(&sym, name, arg);
			if (err) {
				return err;
			}
		}
	}
	return 0;
}
#endif /* HAVE_LIBELF */

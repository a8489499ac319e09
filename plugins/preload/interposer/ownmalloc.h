/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/ownmalloc.h - does the malloc the loader binds
 * every call to belong to an allocator of the program's own, or only look so?
 *
 * The interposer's constructor asks dlsym(RTLD_DEFAULT, "malloc"): an
 * executable that defines malloc comes first in the lookup order, and
 * then no call reaches our hook. But a non-PIE executable that takes
 * malloc's address in its code (Debian's /usr/bin/python3.11 does) gets a
 * canonical PLT entry: its dynamic symbol malloc is undefined (SHN_UNDEF)
 * with a non-zero value, the address of that PLT entry, so that &malloc
 * is the same in every object. The lookup returns that address, not
 * ours, though the PLT entry jumps to whichever malloc won (ours).
 *
 * No allocation, no lock of our own: called from the constructor.
 */
#ifndef MT_PRELOAD_OWNMALLOC_H
#define MT_PRELOAD_OWNMALLOC_H

/*
 * addr: what the loader's lookup of "malloc" returned. 1 when the symbol
 * there is a definition (an allocator the program brings), 0 when it is a
 * canonical PLT entry of an executable, which leads to the malloc that
 * won the lookup elsewhere. 1 as well when the loader cannot tell: the
 * warning is then kept, as before.
 */
int pl_malloc_is_defined_at(void *addr);

#endif /* MT_PRELOAD_OWNMALLOC_H */

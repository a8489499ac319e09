/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/loader-walk.h - dl_iterate_phdr() for a
 * caller that has seen a prefix of the loader's list already.
 *
 * The interposer looks at the loader's objects after every dlopen
 * (optional.c: hooks to bind; stack-maps.c: code mappings to send). Each
 * caller remembers the prefix of the list it has seen whole and skips it,
 * but dl_iterate_phdr() cannot start in the middle: every walk still
 * passes every object, so N dlopens cost N^2 / 2 steps of the loader's
 * loop, several walks per dlopen (issue 24: 5,000 libraries, a third of
 * the run in glibc's __dl_iterate_phdr).
 *
 * pl_dl_walk() calls back for the first object (the caller reads the
 * loader's counters there) and then from the prefix's last object on,
 * reaching it through the loader's list of link_maps (r_debug) from a
 * place it remembers, all while dl_iterate_phdr() holds the loader's lock.
 * The program headers of an object are not in the public part of struct
 * link_map: their place in glibc's is found once (pl_dl_walk's first
 * use), by matching what dl_iterate_phdr() says of every object of the
 * start-up with the words of its link_map. Anything that does not match
 * exactly (another libc, a layout that leaves the place ambiguous, an
 * object whose PT_DYNAMIC is not where l_ld says) leaves the plain
 * dl_iterate_phdr() walk, which is always right.
 */
#ifndef MT_PRELOAD_LOADER_WALK_H
#define MT_PRELOAD_LOADER_WALK_H

#include <link.h>
#include <stddef.h>

/*
 * As dl_iterate_phdr(cb, data), for a callback that counts the objects in
 * *idx (it reads *idx as the index of the object it is given, then adds
 * one) and ignores the objects 1 .. skip - 2 (a prefix it saw). Those may
 * not be passed to it: *idx is then set to skip - 1 before the object at
 * skip - 1 is. The info of an object after the first has no TLS fields
 * (dlpi_tls_modid 0, dlpi_tls_data NULL). Returns what dl_iterate_phdr()
 * returns.
 */
int pl_dl_walk(int (*cb)(struct dl_phdr_info *, size_t, void *),
	       void *data, size_t *idx, size_t skip);

/*
 * libunwind looks up the object of every return address it has not seen
 * with dl_iterate_phdr(), whose callback returns 1 at the object holding
 * it: a walk of every object per new address (with 10,000 libraries
 * loaded, a dlopen'd function's first stack cost 10,000 steps). Points
 * the import of dl_iterate_phdr of the object behind handle (libunwind,
 * opened by us with RTLD_LOCAL) at a walk that offers the callback the
 * object holding the address first (glibc's _dl_find_object()), then
 * the others as dl_iterate_phdr() would. The address is the first word of
 * the callback's data (libunwind's struct dwarf_callback_data, since
 * 2003): when it is not, the object offered first is just one more
 * object, each still offered once. Only an entry that is writable (lazy
 * binding; not RELRO) is changed. 0 when changed, -1 if not.
 */
int pl_dl_redirect_iterate(void *handle);

#endif /* MT_PRELOAD_LOADER_WALK_H */

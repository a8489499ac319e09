/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/optional.h - the hooks of allocators a
 * process may not have (jemalloc's mallocx family and its prefixed C API,
 * mimalloc, tcmalloc): never exported, bound into each loaded object's
 * GOT where that object already binds the name (optional.c says why and
 * how). Hidden inside libmemtrack-preload.so; interpose.c calls it, it
 * calls nothing of interpose.c.
 */
#ifndef MT_PRELOAD_OPTIONAL_H
#define MT_PRELOAD_OPTIONAL_H

#include <stddef.h>
#include <stdint.h>

/* One optional entry point and the hook that records it. */
struct pl_opt_hook {
	const char *name;
	void *hook;
	/* the hook's next definition (interpose.c's struct pl_real.fn):
	 * when still NULL, set here to the definition ld.so bound, so that
	 * a hook called by a tail call from an object opened RTLD_LOCAL
	 * (the caller's scope, not the definer's, is what resolve() sees)
	 * still has one */
	void **real;
};

/*
 * The table of every optional hook (sorted here, in place; it must stay
 * for the life of the process), the address of any function of this
 * library (its own objects are never bound), and a word that is non-zero
 * once a seccomp filter holds the process (pl_ring.quiet): from then on
 * no entry in RELRO is bound, since that takes mprotect(), which the
 * filter may not allow. Call once, from attach(), before
 * pl_opt_rescan().
 */
void pl_opt_init(struct pl_opt_hook *tab, size_t n, const void *self,
		 const uint32_t *filtered);

/* Non-zero when objects may have been loaded since the last rescan: set
 * by the exported dlopen (interpose.c) and by a rescan that found an
 * object ld.so had not relocated yet. */
extern int pl_opt_dirty;

/*
 * Bind the hooks into the objects loaded since the last call: each
 * GOT entry (PLT slot, GLOB_DAT, absolute pointer) of an optional name
 * that ld.so resolved to a definition gets the hook's address; an entry
 * resolved to nothing (a weak reference to an allocator the process does
 * not have) is left as it is, so the program sees what it sees without
 * us. Never blocks for another thread's rescan (it returns: that one does
 * the work), and a fork waits for a rescan to end; allocates nothing; its
 * only system call is mprotect() on RELRO pages, which ld.so itself makes
 * for the same pages, and none under a seccomp filter. Call with the
 * thread's depth raised.
 */
void pl_opt_rescan(void);

/*
 * Whether the program (the executable) defines the function name in its
 * dynamic symbol table: 1, 0, or -1 when its tables cannot be read. A
 * canonical PLT entry (undefined, with an address) is no definition.
 * Allocates nothing, unlike dlsym(), whose first call in a thread
 * callocs its error state: under --source auto, before the hello, that
 * calloc would be recorded by uprobes, and the program never made it.
 */
int pl_opt_program_defines(const char *name);

#endif /* MT_PRELOAD_OPTIONAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * common/interposer-path.h - where the preload source's interposer
 * (libmemtrack-preload.so) may be, in the order the preload source tries
 * them (plugins/preload/source/source.c: find_interposer()). The eBPF
 * source looks in the same places for the file it attaches ahead under
 * auto (plugins/ebpf/attach.c: ebpf_preattach_start()): both must find
 * the same file. Header-only: neither plugin links more for it.
 */
#ifndef MT_COMMON_INTERPOSER_PATH_H
#define MT_COMMON_INTERPOSER_PATH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_INTERPOSER "libmemtrack-preload.so"
#define MT_INTERPOSER_CANDS 3

/*
 * $MEMTRACK_PRELOAD_LIB; the build tree beside the plugin that holds the
 * address self (plugins/.libs -> plugins/preload/.libs); then libdir.
 * Fills cand; returns how many.
 */
static inline size_t mt_interposer_candidates(const void *self,
					      const char *libdir,
					      char (*cand)[PATH_MAX])
{
	const char *env = getenv("MEMTRACK_PRELOAD_LIB");
	size_t n = 0;
	Dl_info info;

	if (env && *env) {
		snprintf(cand[n++], PATH_MAX, "%s", env);
	}
	if (dladdr(self, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');
		int len = slash ? (int)(slash - info.dli_fname) : 1;

		snprintf(cand[n++], PATH_MAX, "%.*s/../preload/.libs/%s", len,
			 slash ? info.dli_fname : ".", MT_INTERPOSER);
	}
	snprintf(cand[n++], PATH_MAX, "%s/%s", libdir, MT_INTERPOSER);
	return n;
}

#endif /* MT_COMMON_INTERPOSER_PATH_H */

/* SPDX-License-Identifier: MIT */
/*
 * fuzz-stack-table.c - libFuzzer target: the MTKT stack table parser of
 * 'memtrack report' (report/symbolize.c: stacks_meta), then the naming of
 * every stack it accepted.
 *
 * Before the fuzzed table the harness sends fixed mappings (MTKM) that put
 * a real library at 0x400000 in processes 1, 2 and 3, so that fuzzed
 * addresses are located, and named with real ELF symbols: libz (libelf
 * needs it), small enough that reading its symbols for every input costs
 * little; this program's own file, whose symbols take 20 times longer,
 * when libz cannot be found.
 * Input: see fuzz_payload() in fuzz-sym.h.
 */
#include "config.h"

#include <dlfcn.h>

#include "fuzz-sym.h"
#include "symbolize.h"

static uint8_t maps[4096];
static size_t maps_len;

/* One MAPS_MAP record per pid: [0x400000, +256 MiB) of a library. */
static void make_maps(void)
{
	void *zlib = dlsym(RTLD_DEFAULT, "zlibVersion");
	char exe[1024];
	ssize_t n;
	size_t at = 16;
	uint32_t pid, v;
	Dl_info info;

	if (zlib && dladdr(zlib, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/' &&
	    strlen(info.dli_fname) < sizeof(exe)) {
		n = (ssize_t)strlen(info.dli_fname);
		memcpy(exe, info.dli_fname, (size_t)n);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	}
	if (n <= 0) {
		abort();
	}
	memcpy(maps, "MTKM", 4);
	v = 1;
	memcpy(maps + 4, &v, 4);
	v = 3;
	memcpy(maps + 8, &v, 4);
	for (pid = 1; pid <= 3; pid++) {
		uint64_t start = 0x400000, end = start + (256u << 20), off = 0;

		maps[at] = 2;
		memcpy(maps + at + 1, &pid, 4);
		memcpy(maps + at + 5, &start, 8);
		memcpy(maps + at + 13, &end, 8);
		memcpy(maps + at + 21, &off, 8);
		maps[at + 29] = 0; /* no build-id */
		maps[at + 30] = (uint8_t)n;
		maps[at + 31] = (uint8_t)(n >> 8);
		memcpy(maps + at + 32, exe, (size_t)n);
		at += 32 + (size_t)n;
	}
	v = fuzz_fnv1a(maps + 16, at - 16);
	memcpy(maps + 12, &v, 4);
	maps_len = at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_sym *s;
	uint8_t *p;
	size_t len, at;
	uint32_t count;

	if (!maps_len) {
		make_maps();
	}
	p = fuzz_payload("MTKT", data, size, &len);
	if (fuzz_known_stack_blowup(p, len)) {
		free(p);
		return 0;
	}
	s = mt_sym_new();
	if (!s) {
		abort();
	}
	if (mt_sym_meta(s, maps, maps_len, "fuzz") < 0 ||
	    mt_sym_meta(s, p, len, "fuzz") < 0) {
		abort(); /* -ENOMEM: inputs are small */
	}
	/* name the stacks the records name, as far as they can be read */
	fuzz_name_stack(s, 0);
	fuzz_name_stack(s, UINT32_MAX);
	count = len >= 16 ? fuzz_rd32(p + 8) : 0;
	for (at = 16; count-- > 0 && at + 12 <= len;) {
		uint32_t n = fuzz_rd32(p + at + 8);

		fuzz_name_stack(s, fuzz_rd32(p + at));
		if (n > 127) {
			break;
		}
		at += 12 + (size_t)n * 8;
	}
	(void)mt_sym_nstacks(s);
	mt_sym_free(s);
	free(p);
	return 0;
}

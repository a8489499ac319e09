/* SPDX-License-Identifier: MIT */
/*
 * fuzz-mappings.c - libFuzzer target: the MTKM mappings parser of
 * 'memtrack report' (report/symbolize.c: maps_meta: exec, map and fork
 * records), then stacks located in those mappings and named.
 *
 * After the fuzzed mappings the harness sends a stack table (MTKT) with,
 * for each map record it can read in the input, one stack of that process
 * at the mapping's first, middle and last address, so that every mapping
 * the parser kept is looked up and its module opened and named.
 * Input: see fuzz_payload() in fuzz-sym.h.
 */
#include "config.h"

#include "fuzz-sym.h"
#include "symbolize.h"

#define MAX_STACKS 256

/* The stack table for the map records of p (read as maps_meta reads them). */
static size_t make_stacks(const uint8_t *p, size_t len, uint8_t *out)
{
	size_t at = 16, o = 16;
	uint32_t count = len >= 16 ? fuzz_rd32(p + 8) : 0, id = 1, v;

	memcpy(out, "MTKT", 4);
	v = 1;
	memcpy(out + 4, &v, 4);
	while (count-- > 0 && at + 5 <= len && id <= MAX_STACKS) {
		uint8_t type = p[at];
		uint32_t pid = fuzz_rd32(p + at + 1), n = 3;
		uint64_t start, end, f[3];
		size_t bidlen, plen;

		at += 5;
		if (type == 1) {
			continue;
		}
		if (type == 3) {
			at += 4;
			continue;
		}
		if (type != 2 || at + 25 > len) {
			break;
		}
		memcpy(&start, p + at, 8);
		memcpy(&end, p + at + 8, 8);
		bidlen = p[at + 24];
		at += 25 + bidlen;
		if (at + 2 > len) {
			break;
		}
		plen = (size_t)p[at] | (size_t)p[at + 1] << 8;
		at += 2 + plen;
		f[0] = start;
		f[1] = start + (end - start) / 2;
		f[2] = end - 1;
		memcpy(out + o, &id, 4);
		memcpy(out + o + 4, &pid, 4);
		memcpy(out + o + 8, &n, 4);
		memcpy(out + o + 12, f, sizeof(f));
		o += 12 + sizeof(f);
		id++;
	}
	v = id - 1;
	memcpy(out + 8, &v, 4);
	v = fuzz_fnv1a(out + 16, o - 16);
	memcpy(out + 12, &v, 4);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stacks[16 + MAX_STACKS * (12 + 24)];
	struct mt_sym *s;
	size_t len, slen;
	uint32_t id;
	uint8_t *p;

	p = fuzz_payload("MTKM", data, size, &len);
	slen = make_stacks(p, len, stacks);
	s = mt_sym_new();
	if (!s) {
		abort();
	}
	if (mt_sym_meta(s, p, len, "fuzz") < 0 ||
	    mt_sym_meta(s, stacks, slen, "fuzz") < 0) {
		abort(); /* -ENOMEM: inputs are small */
	}
	for (id = 1; id <= fuzz_rd32(stacks + 8); id++) {
		fuzz_name_stack(s, id);
	}
	mt_sym_free(s);
	free(p);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz-zstd.h - for the targets that read recordings (fuzz-decoder,
 * fuzz-report): mutated zstd data seldom decompresses, so a target may
 * take its input as a MessagePack stream and compress it here, in two
 * frames cut at a point the first byte chooses (records then straddle
 * frames), with a skippable frame between them when asked.
 */
#ifndef MT_FUZZ_ZSTD_H
#define MT_FUZZ_ZSTD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Append a zstd frame of src to out; returns the new length. */
static inline size_t fuzz_add_frame(uint8_t *out, size_t at, size_t cap,
				    const uint8_t *src, size_t len)
{
	size_t r = ZSTD_compress(out + at, cap - at, src, len, 1);

	if (ZSTD_isError(r)) {
		abort();
	}
	return at + r;
}

/* data[0] chooses the cut, the rest is the stream; malloc'd. */
static inline uint8_t *fuzz_zstd_stream(const uint8_t *data, size_t size,
					int skippable, size_t *out_len)
{
	size_t cut = 0, cap, at = 0;
	uint8_t *out;

	if (size) {
		cut = data[0] % (size + 1);
		data++;
		size--;
		if (cut > size) {
			cut = size;
		}
	}
	cap = 2 * ZSTD_compressBound(size) + 64;
	out = malloc(cap);
	if (!out) {
		abort();
	}
	at = fuzz_add_frame(out, at, cap, data, cut);
	if (skippable) {
		static const uint8_t skip[] = { 0x50, 0x2a, 0x4d, 0x18, 4, 0,
						0, 0, 'M', 'T', 'K', 'X' };

		memcpy(out + at, skip, sizeof(skip));
		at += sizeof(skip);
	}
	at = fuzz_add_frame(out, at, cap, data + cut, size - cut);
	*out_len = at;
	return out;
}

#endif

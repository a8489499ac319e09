/* SPDX-License-Identifier: MIT */
/*
 * fuzz-decoder.c - libFuzzer target: the msgpack-zstd decoder
 * (plugins/msgpack-zstd/decoder.c and msgpack-read*.c), as 'memtrack dump'
 * and replay use it.
 *
 * Input: one mode byte, then the bytes. Mutated zstd data seldom
 * decompresses, so that the MessagePack reader is reached, mode bit 0 says
 * the bytes are a MessagePack stream: the harness compresses it (in two
 * frames, cut at a point the next byte chooses, so that records straddle
 * frames, with a skippable frame between them when bit 1 is set).
 * Otherwise the bytes are the file as it is.
 */
#include "config.h"

#include "fuzz-common.h"
#include "fuzz-zstd.h"
#include "../plugins/msgpack-zstd/internal.h"

static const struct mt_host fuzz_host = {
	MT_OPS_HEADER(mt_host),
	.log = fuzz_host_log,
};

static int on_events(void *ctx, const struct mt_event *ev, size_t n)
{
	uint64_t *sum = ctx;
	size_t i;

	/* read every field: uninitialised or out-of-bounds data shows */
	for (i = 0; i < n; i++) {
		*sum += (uint64_t)ev[i].pid + (uint64_t)ev[i].tid +
			ev[i].timestamp + ev[i].addr + ev[i].size +
			ev[i].old_addr + ev[i].stack_id + ev[i].kind +
			ev[i].flags;
	}
	return 0;
}

static int on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len)
{
	uint64_t *sum = ctx;
	const uint8_t *p = data;
	size_t i;

	if (variant > 15) {
		abort();
	}
	for (i = 0; i < len; i++) {
		*sum += p[i];
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mz_state st = { .host = &fuzz_host };
	uint8_t *buf = NULL;
	uint64_t sum = 0;
	unsigned int mode;
	int fd;

	if (size < 1) {
		return 0;
	}
	mode = data[0];
	data++;
	size--;
	if (mode & 1) {
		buf = fuzz_zstd_stream(data, size, mode & 2, &size);
		data = buf;
	}
	fd = fuzz_fd(data, size);
	(void)mz_decode(&st, fd, "fuzz", on_events, on_meta, &sum);
	close(fd);
	free(buf);
	return 0;
}

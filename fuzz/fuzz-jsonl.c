/* SPDX-License-Identifier: MIT */
/*
 * fuzz-jsonl.c - libFuzzer target: the JSON lines reader of the replay
 * source (plugins/replay/source.c, '--source replay:FILE' with JSON
 * input), through the plugin's own create/read/destroy as the host calls
 * them, with a small emitter so that batches fill and flush.
 *
 * An input whose first non-blank byte is not '{' goes to the host's
 * decoder, which this harness refuses: fuzz-decoder covers that path.
 */
#include "config.h"

#include "fuzz-common.h"

const struct mt_plugin_desc *memtrack_plugin_v1(void);

#define BATCH 16

static struct mt_event batch[BATCH];
static uint64_t sum;

static int fuzz_decode(const struct mt_host *h, const char *encoder, int fd,
		       const char *name, mt_event_cb on_events,
		       mt_meta_cb on_meta, void *ctx)
{
	return -EBADMSG;
}

static const struct mt_host fuzz_host = {
	MT_OPS_HEADER(mt_host),
	.log = fuzz_host_log,
	.decode = fuzz_decode,
};

static int flush(struct mt_emitter *em)
{
	size_t i;

	for (i = 0; i < (size_t)(em->cur - batch); i++) {
		sum += (uint64_t)batch[i].pid + batch[i].addr + batch[i].size +
		       batch[i].kind + batch[i].flags + batch[i].stack_id;
	}
	em->cur = batch;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mt_source_ops *ops = memtrack_plugin_v1()->ops.source;
	struct mt_emitter em = { batch, batch + BATCH, flush, NULL };
	char path[64];
	void *state;
	int fd, n, rounds;
	uint32_t flags = 0;

	fd = fuzz_fd(data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (ops->create(&fuzz_host, path, &state) < 0) {
		abort();
	}
	/* each read takes at most 7 lines: several reads per input */
	for (rounds = 0; rounds < 1 << 20 && !(flags & MT_SOURCE_EOF);
	     rounds++) {
		n = ops->read(state, &em, 7, &flags);
		if (n < 0) {
			break;
		}
	}
	flush(&em);
	ops->destroy(state);
	close(fd);
	return 0;
}

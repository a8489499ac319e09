/* SPDX-License-Identifier: MIT */
/*
 * test-encoder-write FILE N - write the first N events of the deterministic
 * sequence with the msgpack-zstd plugin, for an independent reader
 * (test-python-decode.py) to check: frames of 1000 events, a skippable
 * frame after the first one, and from event 5000 on one batch, which the
 * encoder cuts into several zstd frames when it holds more than ~768 KiB
 * of msgpack (N = 25000 does).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>

#include "test-encoder-util.h"

#define FRAME_EVENTS 1000
#define SMALL_FRAMES 5

static int write_frame(FILE *f, const struct mt_encoder_ops *ops,
		       struct mt_frame *frame)
{
	size_t len = frame->len;
	size_t n = fwrite(frame->data, 1, len, f);

	ops->frame_free(frame);
	return n == len ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct mt_encoder_ops *ops;
	struct mt_event *events = NULL;
	struct mt_frame frame;
	void *state = NULL;
	FILE *f = NULL;
	size_t n, i, done = 0;
	int ret = 99;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE N\n", argv[0]);
		return 99;
	}
	n = strtoul(argv[2], NULL, 10);
	if (te_load_plugin(&ops) < 0 ||
	    ops->create(&te_host, NULL, &state) < 0) {
		fprintf(stderr, "cannot load the plugin: %s\n", te_last_log);
		goto end;
	}
	events = calloc(n ? n : 1, sizeof(*events));
	f = fopen(argv[1], "wb");
	if (!events || !f) {
		perror(argv[1]);
		goto end;
	}
	for (i = 0; i < n; i++) {
		te_deterministic_event(i, &events[i]);
	}
	while (done < n) {
		size_t cnt = n - done < FRAME_EVENTS ||
					     done >= SMALL_FRAMES * FRAME_EVENTS ?
				     n - done :
				     FRAME_EVENTS;

		if (ops->encode(state, events + done, cnt, &frame) < 0 ||
		    write_frame(f, ops, &frame) < 0) {
			fprintf(stderr, "encode/write failed: %s\n",
				te_last_log);
			goto end;
		}
		if (done == 0 &&
		    (ops->encode_meta(state, 3, "meta", 4, &frame) < 0 ||
		     write_frame(f, ops, &frame) < 0)) {
			fprintf(stderr, "encode_meta failed: %s\n",
				te_last_log);
			goto end;
		}
		done += cnt;
	}
	ret = 0;
end:
	if (f && fclose(f) != 0) {
		perror(argv[1]);
		ret = 99;
	}
	free(events);
	if (state) {
		ops->destroy(state);
	}
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz-report.c - libFuzzer target: 'memtrack report' over a fuzzed
 * recording. The recording is decoded on the report's two threads
 * (report/report-pipe.c) into the analysis (peak, leaks, temporaries,
 * sites, stacks), then every output format is written to /dev/null, with
 * both weights, and the recording is compared with itself (--diff).
 *
 * Input: as fuzz-decoder's (a mode byte; bit 0: the rest is MessagePack
 * the harness compresses), mode bit 2 selects '--pid 1' and bit 3 the html
 * format's analysis (with its checkpoints).
 *
 * The decoder is linked in (mt_host_decode() below) instead of loaded from
 * the plugin directory: one instrumented program. Known defects being
 * fixed elsewhere (fuzz/KNOWN) are kept out: a stack table naming an id
 * at or above 2^16 is not passed on (the 1.6 GB table), and module files
 * are opened through fuzz-sym.h's open() (FIFOs block the report).
 */
#include "config.h"

#include "fuzz-sym.h"
#include "fuzz-zstd.h"
#include "../plugins/msgpack-zstd/internal.h"
#include "host.h"
#include "report-analyze.h"
#include "report-model.h"

static const struct mt_host fuzz_host = {
	MT_OPS_HEADER(mt_host),
	.log = fuzz_host_log,
};

static FILE *devnull;
static mt_meta_cb real_meta;

static int filter_meta(void *ctx, unsigned int variant, const void *data,
		       size_t len)
{
	if (fuzz_known_stack_blowup(data, len)) {
		return 0;
	}
	return real_meta(ctx, variant, data, len);
}

int mt_host_decode(const char *encoder, int fd, const char *name,
		   mt_event_cb on_events, mt_meta_cb on_meta, void *ctx)
{
	struct mz_state st = { .host = &fuzz_host };

	(void)encoder;
	real_meta = on_meta;
	return mz_decode(&st, fd, name, on_events,
			 on_meta ? filter_meta : NULL, ctx);
}

void mt_host_cleanup(void)
{
}

static void outputs(struct mt_rep *r, struct mt_report_opts *o)
{
	o->format = MT_REPORT_TEXT;
	mt_rep_text(devnull, r, o);
	o->format = MT_REPORT_JSON;
	mt_rep_json(devnull, r, o);
	o->format = MT_REPORT_COLLAPSED;
	mt_rep_collapsed(devnull, r, o);
	o->format = MT_REPORT_SVG;
	mt_rep_svg(devnull, r, o, false);
	o->format = MT_REPORT_HTML;
	mt_rep_html(devnull, r, o);
	o->format = MT_REPORT_TEXT;
	mt_rep_diff(devnull, r, r, o);
	o->format = MT_REPORT_HTML;
	mt_rep_diff(devnull, r, r, o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_report_opts o = { .path = "fuzz" };
	struct mt_rep_state *st;
	struct mt_rep *r;
	uint8_t *buf = NULL;
	unsigned int mode;
	int fd;

	if (size < 1) {
		return 0;
	}
	if (!devnull && !(devnull = fopen("/dev/null", "w"))) {
		abort();
	}
	mode = data[0];
	data++;
	size--;
	if (mode & 1) {
		buf = fuzz_zstd_stream(data, size, 0, &size);
		data = buf;
	}
	if (mode & 4) {
		o.has_pid = true;
		o.pid = 1;
	}
	/* the analysis keeps the html's checkpoints for that format only */
	if (mode & 8) {
		o.format = MT_REPORT_HTML;
	}
	st = mt_rep_begin(&o, "fuzz");
	if (!st) {
		abort();
	}
	fd = fuzz_fd(data, size);
	(void)mt_rep_decode(st, fd, "fuzz");
	close(fd);
	r = mt_rep_finish(st);
	if (r->events) {
		o.weight = MT_REPORT_BYTES;
		outputs(r, &o);
		o.weight = MT_REPORT_COUNT;
		outputs(r, &o);
	}
	mt_rep_free(st);
	free(buf);
	return 0;
}

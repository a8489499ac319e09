/* SPDX-License-Identifier: MIT */
#ifndef MT_REPORT_REPORT_H
#define MT_REPORT_REPORT_H

#include <stdbool.h>
#include <stdint.h>

enum mt_report_format {
	MT_REPORT_TEXT,
	MT_REPORT_JSON,
	MT_REPORT_COLLAPSED,
	MT_REPORT_SVG,
	MT_REPORT_HTML,
	MT_REPORT_PPROF,
};

enum mt_report_weight {
	MT_REPORT_BYTES,
	MT_REPORT_COUNT,
};

struct mt_report_opts {
	enum mt_report_format format;
	enum mt_report_weight weight;
	bool has_pid;
	int32_t pid;     /* with has_pid: only this process */
	bool at_peak;    /* pprof's in-use values: at the peak, not the end */
	const char *path;   /* the recording ('-': stdin) */
	const char *diff_b; /* set: compare path (A) with diff_b (B) */
	/* text: callers shown per site; 0: the whole stack; -1 (the
	 * default): enough to tell the listed sites apart, 3 at least */
	int stack_lines;
};

/* Parse "--format" and "--weight" values; -EINVAL when unknown. */
int mt_report_parse_format(const char *s, enum mt_report_format *out);
int mt_report_parse_weight(const char *s, enum mt_report_weight *out);

/*
 * Report on a recording (or two, with diff_b) to stdout.
 *
 * Returns 0, or a negative errno when nothing could be read. A damaged file
 * (cut short, corrupt) still gives the report of the events before the
 * damage, with a warning on stderr, and returns 0 as long as some events
 * were read.
 */
int mt_report_run(const struct mt_report_opts *o);

/* The text summary of PATH: mt_report_run() with default options. */
int mt_report(const char *path);

#endif /* MT_REPORT_REPORT_H */

/* SPDX-License-Identifier: MIT */
/*
 * Run statistics: what the poller, the source and the pipeline did.
 *
 * --stats=FILE writes JSON lines as things happen (ring fill samples, each
 * stop and resume, chunk durations) and the totals at the end. The summary
 * (events, rate, drops, peak fill, stops, stop-to-resume latency, the share
 * of the run each process spent stopped, compression) is printed at exit
 * with --stats or -v, and always stored in the output file as a skippable
 * frame. On a terminal a one-line live status is kept on stderr.
 *
 * Threading: everything runs on the poller thread.
 */
#ifndef MT_HOST_STATS_H
#define MT_HOST_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include <memtrack/plugin.h>

#include "pipeline.h"

struct mt_stats;

struct mt_stats_opts {
	const char *jsonl_path; /* NULL: no JSON lines */
	bool print_summary;
	bool live;              /* a status line on stderr, once a second */
};

int mt_stats_open(const struct mt_stats_opts *opts, struct mt_stats **out);

/* A source's stop or resume of pid (mt_host.note). */
void mt_stats_note(struct mt_stats *s, const char *what, int32_t pid,
		   uint64_t ts_ns);

/* After each chunk read: its duration and size, and the source's counters
 * (ring fill). */
void mt_stats_chunk(struct mt_stats *s, uint64_t start_ns, uint64_t dur_ns,
		    int events, const struct mt_source_stats *ss);

/* On every poll tick: sample the fill, refresh the live line. */
void mt_stats_tick(struct mt_stats *s, const struct mt_source_stats *ss,
		   uint64_t events);

/* The summary as one JSON object (malloc'd, NUL-terminated), after the
 * last event was written; prints it for people when asked to. */
char *mt_stats_summary(struct mt_stats *s, const struct mt_pipeline_stats *ps,
		       const struct mt_source_stats *ss);

void mt_stats_close(struct mt_stats *s);

uint64_t mt_now_ns(void);

/* The tag of the run summary's metadata frame (JSON follows). */
#define MT_META_STATS "MTKS"

#endif /* MT_HOST_STATS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The analysis of 'memtrack report' (report.c) as the front end
 * (report-run.c) drives it: begin, feed decoded events, finish, free.
 */
#ifndef MT_REPORT_REPORT_ANALYZE_H
#define MT_REPORT_REPORT_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>

#include <memtrack/event.h>

struct mt_rep;
struct mt_rep_state;
struct mt_report_opts;

/* o must outlive the state; path names the recording in outputs. */
struct mt_rep_state *mt_rep_begin(const struct mt_report_opts *o,
				  const char *path);
/* An mt_event_cb: ctx is the state. Returns 0 or -ENOMEM. */
int mt_rep_on_events(void *ctx, const struct mt_event *ev, size_t n);
/* An mt_meta_cb: ctx is the state. The stack table and mappings, kept
 * apart from what mt_rep_on_events() touches (another thread may run
 * it). Returns 0 or -ENOMEM. */
int mt_rep_on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len);
/* A payload that changes how the events after it count (the sampling
 * record, "MTKR"): mt_rep_decode() hands it to mt_rep_on_meta() once
 * the analysis has taken every event before it, not beside them. */
bool mt_rep_meta_ordered(const void *data, size_t len);
/* Completes the figures (sites' bytes at the peak); the model stays valid
 * until mt_rep_free(). */
struct mt_rep *mt_rep_finish(struct mt_rep_state *st);
void mt_rep_free(struct mt_rep_state *st);

/* Decode fd into the analysis, on two threads (report-pipe.c). Returns
 * the decoder's result, or the analysis's error when it failed first. */
int mt_rep_decode(struct mt_rep_state *st, int fd, const char *name);

#endif /* MT_REPORT_REPORT_ANALYZE_H */

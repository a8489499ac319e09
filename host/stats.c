/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "open-output.h"
#include "stats.h"

/* Fill samples closer than this are not worth a line each. */
#define FILL_SAMPLE_NS 1000000ULL
#define LIVE_NS 1000000000ULL
#define TOP_STOPPED 10

struct proc_stop {
	int32_t pid;
	uint64_t since;      /* stopped at, 0: running */
	uint64_t stopped_ns; /* total */
	uint64_t stops;
};

struct mt_stats {
	struct mt_stats_opts opts;
	FILE *jsonl;
	uint64_t t0;
	uint64_t last_fill_ns;
	uint64_t last_live_ns;
	uint64_t last_live_events;
	uint64_t peak_fill;
	uint64_t ring_size;
	uint64_t chunks;
	uint64_t chunk_ns_max;
	uint64_t chunk_ns_sum;
	/* stop-to-resume latencies, ns */
	uint64_t *lat;
	size_t nlat, cap_lat;
	struct proc_stop *procs;
	size_t nprocs, cap_procs;
	uint64_t stops, resumes;
};

uint64_t mt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int mt_stats_open(const struct mt_stats_opts *opts, struct mt_stats **out)
{
	struct mt_stats *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s) {
		return -ENOMEM;
	}
	s->opts = *opts;
	s->t0 = mt_now_ns();
	s->last_live_ns = s->t0;
	if (opts->jsonl_path) {
		/* the sink's rules: no symlink, no FIFO (open-output.h) */
		const char *why;
		int fd = mt_open_output(opts->jsonl_path, &why);

		s->jsonl = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!s->jsonl) {
			int err = fd < 0 ? fd : -errno;

			mt_err("--stats=%s: %s", opts->jsonl_path,
			       why ? why : strerror(-err));
			if (fd >= 0) {
				close(fd);
			}
			free(s);
			return err;
		}
	}
	*out = s;
	return 0;
}

/* Times in the JSON lines are ns since memtrack started. */
static uint64_t rel(const struct mt_stats *s, uint64_t ts)
{
	return ts > s->t0 ? ts - s->t0 : 0;
}

static struct proc_stop *proc(struct mt_stats *s, int32_t pid)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pid == pid) {
			return &s->procs[i];
		}
	}
	if (s->nprocs == s->cap_procs) {
		size_t cap = s->cap_procs ? s->cap_procs * 2 : 16;
		struct proc_stop *n = realloc(s->procs, cap * sizeof(*n));

		if (!n) {
			return NULL;
		}
		s->procs = n;
		s->cap_procs = cap;
	}
	memset(&s->procs[s->nprocs], 0, sizeof(s->procs[0]));
	s->procs[s->nprocs].pid = pid;
	return &s->procs[s->nprocs++];
}

static void add_latency(struct mt_stats *s, uint64_t ns)
{
	if (s->nlat == s->cap_lat) {
		size_t cap = s->cap_lat ? s->cap_lat * 2 : 256;
		uint64_t *n = realloc(s->lat, cap * sizeof(*n));

		if (!n) {
			return;
		}
		s->lat = n;
		s->cap_lat = cap;
	}
	s->lat[s->nlat++] = ns;
}

void mt_stats_note(struct mt_stats *s, const char *what, int32_t pid,
		   uint64_t ts)
{
	struct proc_stop *p;

	if (!s) {
		return;
	}
	p = proc(s, pid);
	if (strcmp(what, "stop") == 0) {
		s->stops++;
		if (p && !p->since) {
			p->since = ts ? ts : 1;
			p->stops++;
		}
	} else if (strcmp(what, "resume") == 0) {
		s->resumes++;
		if (p && p->since) {
			uint64_t d = ts > p->since ? ts - p->since : 0;

			p->stopped_ns += d;
			p->since = 0;
			add_latency(s, d);
		}
	}
	if (s->jsonl) {
		fprintf(s->jsonl, "{\"t\":%" PRIu64 ",\"what\":\"%s\",\"pid\":%d}\n",
			rel(s, ts), what, (int)pid);
	}
}

static void sample_fill(struct mt_stats *s, uint64_t now,
			const struct mt_source_stats *ss)
{
	if (!ss || !ss->ring_size) {
		return;
	}
	s->ring_size = ss->ring_size;
	if (ss->ring_used > s->peak_fill) {
		s->peak_fill = ss->ring_used;
	}
	if (s->jsonl && now - s->last_fill_ns >= FILL_SAMPLE_NS) {
		s->last_fill_ns = now;
		fprintf(s->jsonl,
			"{\"t\":%" PRIu64 ",\"what\":\"fill\",\"used\":%" PRIu64
			",\"size\":%" PRIu64 ",\"stopped\":%u}\n",
			rel(s, now), ss->ring_used, ss->ring_size, ss->stopped);
	}
}

void mt_stats_chunk(struct mt_stats *s, uint64_t start, uint64_t dur,
		    int events, const struct mt_source_stats *ss)
{
	if (!s) {
		return;
	}
	s->chunks++;
	s->chunk_ns_sum += dur;
	if (dur > s->chunk_ns_max) {
		s->chunk_ns_max = dur;
	}
	if (s->jsonl) {
		fprintf(s->jsonl,
			"{\"t\":%" PRIu64 ",\"what\":\"chunk\",\"ns\":%" PRIu64
			",\"events\":%d}\n",
			rel(s, start), dur, events);
	}
	sample_fill(s, start + dur, ss);
}

static void clear_live(struct mt_stats *s)
{
	if (s->opts.live && mt_log_status_line) {
		fputs("\r\033[K", stderr);
		mt_log_status_line = 0;
	}
}

void mt_stats_tick(struct mt_stats *s, const struct mt_source_stats *ss,
		   uint64_t events)
{
	uint64_t now;
	double secs, rate;

	if (!s) {
		return;
	}
	now = mt_now_ns();
	sample_fill(s, now, ss);
	if (!s->opts.live || now - s->last_live_ns < LIVE_NS) {
		return;
	}
	secs = (double)(now - s->last_live_ns) / 1e9;
	rate = (double)(events - s->last_live_events) / secs;
	s->last_live_ns = now;
	s->last_live_events = events;
	fprintf(stderr, "\r\033[Kmemtrack: %" PRIu64 " events, %.0f/s", events,
		rate);
	if (ss && ss->ring_size) {
		fprintf(stderr, ", ring %.0f%% full, %u stopped",
			100.0 * (double)ss->ring_used / (double)ss->ring_size,
			ss->stopped);
	}
	mt_log_status_line = 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_stopped(const void *a, const void *b)
{
	const struct proc_stop *x = a, *y = b;

	return x->stopped_ns > y->stopped_ns ? -1 :
	       x->stopped_ns < y->stopped_ns;
}

/* Appends to a growing string; on failure the string is dropped. */
static void append(char **buf, size_t *len, const char *fmt, ...)
	MT_PRINTF(3, 4);

static void append(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *more = NULL, *n;
	int m;

	if (!*buf) {
		return;
	}
	va_start(ap, fmt);
	m = vasprintf(&more, fmt, ap);
	va_end(ap);
	n = m < 0 ? NULL : realloc(*buf, *len + (size_t)m + 1);
	if (!n) {
		free(*buf);
		free(m < 0 ? NULL : more);
		*buf = NULL;
		return;
	}
	memcpy(n + *len, more, (size_t)m + 1);
	*len += (size_t)m;
	*buf = n;
	free(more);
}

char *mt_stats_summary(struct mt_stats *s, const struct mt_pipeline_stats *ps,
		       const struct mt_source_stats *ss)
{
	uint64_t now = mt_now_ns(), run = now - s->t0, lmin = 0, lmed = 0,
		 lmax = 0;
	double secs = (double)run / 1e9;
	double ratio = ps->bytes_out && ps->bytes_raw ?
			       (double)ps->bytes_raw / (double)ps->bytes_out :
			       0.0;
	uint64_t dropped = ss ? ss->dropped : 0;
	/* producers that wait in place for room (the preload source) */
	uint64_t waits = ss ? ss->waits : 0, wait_ns = ss ? ss->wait_ns : 0;
	size_t len = 0, i;
	char *json = strdup("");

	clear_live(s);
	/* Processes still stopped at the end count until now. */
	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i].since) {
			s->procs[i].stopped_ns += now - s->procs[i].since;
			s->procs[i].since = 0;
		}
	}
	if (s->nlat) {
		qsort(s->lat, s->nlat, sizeof(*s->lat), cmp_u64);
		lmin = s->lat[0];
		lmed = s->lat[s->nlat / 2];
		lmax = s->lat[s->nlat - 1];
	}
	if (s->nprocs > 1) {
		/* qsort(NULL, 0) is undefined: a replay has no process */
		qsort(s->procs, s->nprocs, sizeof(*s->procs), cmp_stopped);
	}

	append(&json, &len,
	       "{\"what\":\"summary\",\"events\":%" PRIu64
	       ",\"seconds\":%.3f,\"events_per_s\":%.0f,\"dropped\":%" PRIu64
	       ",\"ring_size\":%" PRIu64 ",\"peak_fill\":%" PRIu64
	       ",\"stops\":%" PRIu64 ",\"resumes\":%" PRIu64
	       ",\"waits\":%" PRIu64 ",\"wait_ns\":%" PRIu64
	       ",\"stop_to_resume_ns\":{\"count\":%zu,\"min\":%" PRIu64
	       ",\"median\":%" PRIu64 ",\"max\":%" PRIu64 "}"
	       ",\"chunks\":%" PRIu64 ",\"chunk_ns_max\":%" PRIu64
	       ",\"encode_ns\":%" PRIu64 ",\"write_ns\":%" PRIu64
	       ",\"frames\":%" PRIu64 ",\"bytes_raw\":%" PRIu64
	       ",\"bytes_out\":%" PRIu64 ",\"compression_ratio\":%.2f"
	       ",\"stopped_share\":[",
	       ps->events, secs, secs > 0 ? (double)ps->events / secs : 0.0,
	       dropped, s->ring_size, s->peak_fill, s->stops, s->resumes,
	       waits, wait_ns, s->nlat, lmin, lmed, lmax, s->chunks, s->chunk_ns_max,
	       ps->encode_ns, ps->write_ns, ps->frames, ps->bytes_raw,
	       ps->bytes_out, ratio);
	for (i = 0; i < s->nprocs; i++) {
		append(&json, &len, "%s{\"pid\":%d,\"stops\":%" PRIu64
			     ",\"share\":%.4f}",
		       i ? "," : "", (int)s->procs[i].pid, s->procs[i].stops,
		       run ? (double)s->procs[i].stopped_ns / (double)run : 0.0);
	}
	append(&json, &len, "]");
	if (ss && ss->stacks) {
		append(&json, &len,
		       ",\"stacks\":%" PRIu64 ",\"stacks_truncated\":%" PRIu64
		       ",\"unwind_files\":%" PRIu64 ",\"unwind_bytes\":%" PRIu64
		       ",\"unwind_bytes_max\":%" PRIu64
		       ",\"unwind_build_ns\":%" PRIu64,
		       ss->stacks, ss->stacks_truncated, ss->unwind_files,
		       ss->unwind_bytes, ss->unwind_bytes_max,
		       ss->unwind_build_ns);
	}
	if (ss && ss->untracked) {
		append(&json, &len, ",\"untracked\":%" PRIu64, ss->untracked);
	}
	if (ss && ss->unrecorded) {
		append(&json, &len, ",\"unrecorded\":%" PRIu64,
		       ss->unrecorded);
	}
	if (ss && (ss->procs_interposer || ss->procs_uprobes)) {
		append(&json, &len,
		       ",\"processes\":{\"interposer\":%" PRIu64
		       ",\"uprobes\":%" PRIu64 "}",
		       ss->procs_interposer, ss->procs_uprobes);
	}
	append(&json, &len, "}");
	if (s->jsonl && json) {
		fprintf(s->jsonl, "%s\n", json);
	}

	if (!s->opts.print_summary) {
		return json;
	}
	fprintf(stderr,
		"memtrack: %" PRIu64 " events in %.2f s (%.0f/s), %" PRIu64
		" dropped\n",
		ps->events, secs, secs > 0 ? (double)ps->events / secs : 0.0,
		dropped);
	if (ss && (ss->procs_interposer || ss->procs_uprobes)) {
		fprintf(stderr,
			"memtrack: processes recorded: %" PRIu64
			" by the interposer, %" PRIu64 " by uprobes\n",
			ss->procs_interposer, ss->procs_uprobes);
	}
	if (s->ring_size) {
		fprintf(stderr,
			"memtrack: ring %" PRIu64 " bytes, peak fill %.0f%%\n",
			s->ring_size,
			100.0 * (double)s->peak_fill / (double)s->ring_size);
	}
	if (s->stops) {
		fprintf(stderr,
			"memtrack: %" PRIu64 " stops, stop to resume min %.2f ms, median %.2f ms, max %.2f ms\n",
			s->stops, (double)lmin / 1e6, (double)lmed / 1e6,
			(double)lmax / 1e6);
		for (i = 0; i < s->nprocs && i < TOP_STOPPED; i++) {
			fprintf(stderr,
				"memtrack:   pid %d stopped %.1f%% of the run (%" PRIu64
				" stops)\n",
				(int)s->procs[i].pid,
				run ? 100.0 * (double)s->procs[i].stopped_ns /
					      (double)run :
				      0.0,
				s->procs[i].stops);
		}
	}
	if (waits) {
		fprintf(stderr,
			"memtrack: producers waited for room %" PRIu64
			" times, %.3f s in all\n",
			waits, (double)wait_ns / 1e9);
	}
	if (ss && ss->stacks) {
		fprintf(stderr,
			"memtrack: %" PRIu64 " stacks, %" PRIu64
			" truncated; unwind tables of %" PRIu64 " files: %" PRIu64
			" bytes (bound %" PRIu64 "), built in %.3f s\n",
			ss->stacks, ss->stacks_truncated, ss->unwind_files,
			ss->unwind_bytes, ss->unwind_bytes_max,
			(double)ss->unwind_build_ns / 1e9);
	}
	fprintf(stderr,
		"memtrack: %" PRIu64 " frames, %" PRIu64 " bytes written",
		ps->frames, ps->bytes_out);
	if (ratio > 0) {
		fprintf(stderr, ", compression %.1fx", ratio);
	}
	fprintf(stderr, "; encode %.2f s, write %.2f s\n",
		(double)ps->encode_ns / 1e9, (double)ps->write_ns / 1e9);
	return json;
}

void mt_stats_close(struct mt_stats *s)
{
	if (!s) {
		return;
	}
	clear_live(s);
	if (s->jsonl) {
		fclose(s->jsonl);
	}
	free(s->lat);
	free(s->procs);
	free(s);
}

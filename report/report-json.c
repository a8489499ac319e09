/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format json: the text report's figures for programs.
 * One object; bytes and counts are exact integers, times are in ns relative
 * to the first event (ms in the text), so nothing is lost to rounding.
 * A byte figure of 2^64 - 1 saturated ("saturated": true): at least that.
 * A site's "name" is the frame the text and html reports name it by
 * (mt_rep_site_name()).
 *
 * A process recorded from an attach on (memtrack --pid) is "attached",
 * with the attach's time (below 0 when it came before the first event);
 * its frees of blocks the recording lacks are "frees_before_attach", its
 * "unmatched_frees" 0.
 *
 * A sampled recording (memtrack --sample-bytes) has "sampled": its mean
 * bytes between samples and its seed (null when none was given); its
 * allocation figures (counts, bytes, peaks, leaks, the timeline's heap)
 * are then estimates. An unsampled one has no "sampled" at all.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "report-model.h"

/* nattached: of the total, how many of its processes were attached */
static void json_proc(FILE *out, const struct mt_rep_proc *p, bool total,
		      size_t nattached)
{
	unsigned int k;
	bool first = true;

	if (!total) {
		fprintf(out, "{\"pid\":%d,", (int)p->pid);
	} else {
		fputc('{', out);
	}
	fprintf(out, "\"events\":{");
	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		if (p->by_kind[k]) {
			fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",",
				mt_event_kind_name(k), p->by_kind[k]);
			first = false;
		}
	}
	fprintf(out,
		"},\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64
		",\"unmatched_frees\":%" PRIu64
		",\"frees_before_attach\":%" PRIu64 ",\"temporary\":%" PRIu64
		",\"bytes_allocated\":%" PRIu64 ",\"bytes_freed\":%" PRIu64
		",\"peak\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64
		",\"leaked_blocks\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
		",\"peak_mmapped\":%" PRIu64 ",\"peak_mmapped_time_ns\":%" PRIu64
		",\"mmapped\":%" PRIu64 ",\"munmapped\":%" PRIu64,
		p->allocs, p->frees, p->unmatched_frees,
		p->frees_before_attach, p->temporary,
		p->bytes_allocated, p->bytes_freed, p->peak, p->peak_ts,
		p->live_blocks, p->live, p->peak_mapped, p->peak_mapped_ts,
		p->bytes_mmapped, p->bytes_munmapped);
	if (total) {
		fprintf(out, ",\"brk_growth_max\":%" PRIu64
			",\"brk_growth_end\":%" PRIu64,
			p->brk_max, p->brk_last);
	} else if (p->has_brk) {
		fprintf(out, ",\"brk_growth_max\":%" PRIu64
			",\"brk_growth_end\":%" PRIu64,
			p->brk_max - p->brk_first,
			p->brk_last > p->brk_first ?
				p->brk_last - p->brk_first : 0);
	} else {
		fprintf(out, ",\"brk_growth_max\":0,\"brk_growth_end\":0");
	}
	if (!total) {
		fprintf(out, ",\"first_time_ns\":%" PRIu64
			",\"last_time_ns\":%" PRIu64,
			p->first_ts, p->last_ts);
		if (p->attached) {
			fprintf(out, ",\"attached\":true,\"attached_time_ns\":%" PRId64,
				p->attached_ts);
		} else {
			fprintf(out, ",\"attached\":false,\"attached_time_ns\":null");
		}
		fprintf(out, ",\"recorder\":%s",
			p->recorder == MT_REP_REC_INTERPOSER ? "\"interposer\"" :
			p->recorder == MT_REP_REC_UPROBES ? "\"uprobes\"" :
							    "null");
	} else {
		fprintf(out, ",\"attached_processes\":%zu", nattached);
	}
	fputc('}', out);
}

static int json_site(FILE *out, struct mt_rep *r,
		     const struct mt_rep_site *s, struct mt_rep_frames *f)
{
	int n = mt_rep_site_frames(r, s, f), i;

	if (n < 0) {
		return n;
	}
	fprintf(out, "{\"pid\":%d,\"frames\":[", (int)s->pid);
	for (i = 0; i < n; i++) {
		if (i) {
			fputc(',', out);
		}
		mt_rep_json_str(out, f->name[i]);
	}
	fprintf(out, "],\"name\":");
	mt_rep_json_str(out, f->name[mt_rep_site_name(r, f)]);
	fprintf(out,
		",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"temporary\":%" PRIu64 ",\"at_peak\":%" PRIu64
		",\"leaked_blocks\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64 "}",
		s->count, s->bytes, s->temporary, s->at_peak, s->live_blocks,
		s->live);
	return 0;
}

int mt_rep_json(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	struct mt_rep_frames f = { 0 };
	struct mt_rep_proc total;
	size_t idx[MT_REP_TOP], i, n;
	uint64_t lo, hi, step;
	unsigned int k, rank;
	bool first;
	int err = 0;

	fprintf(out, "{\"file\":");
	mt_rep_json_str(out, r->path);
	fprintf(out, ",\"damaged\":%s,\"damaged_metadata\":%" PRIu64
		",\"saturated\":%s,\"events\":%" PRIu64,
		r->damaged ? "true" : "false", r->damaged_meta,
		mt_rep_saturated(r) ? "true" : "false", r->events);
	/* only when sampled: an unsampled recording's json is as it was */
	if (r->sample_bytes) {
		fprintf(out, ",\"sampled\":{\"mean_bytes\":%" PRIu64 ",\"seed\":",
			r->sample_bytes);
		if (r->sample_has_seed) {
			fprintf(out, "%" PRIu64 "}", r->sample_seed);
		} else {
			fprintf(out, "null}");
		}
	}
	if (o->has_pid) {
		fprintf(out, ",\"pid_filter\":%d", (int)o->pid);
	}
	fprintf(out, ",\"processes\":[");
	for (i = 0; i < r->nprocs; i++) {
		if (i) {
			fputc(',', out);
		}
		json_proc(out, &r->procs[i], false, 0);
	}
	mt_rep_total(r, &total);
	fprintf(out, "],\"total\":");
	json_proc(out, &total, true, r->nattached);

	fprintf(out, ",\"largest\":[");
	for (i = 0; i < r->nbig; i++) {
		fprintf(out, "%s{\"size\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"type\":\"%s\",\"time_ns\":%" PRIu64 "}",
			i ? "," : "", r->big[i].size, (int)r->big[i].pid,
			(int)r->big[i].tid, mt_event_kind_name(r->big[i].kind),
			r->big[i].ts);
	}
	fprintf(out, "],\"histogram\":[");
	first = true;
	for (k = 0; k < MT_REP_CLASSES; k++) {
		if (!r->hist_count[k]) {
			continue;
		}
		mt_rep_class_bounds(k, &lo, &hi);
		fprintf(out, "%s{\"min\":%" PRIu64 ",\"max\":%" PRIu64 ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			first ? "" : ",", lo, hi, r->hist_count[k],
			r->hist_bytes[k]);
		first = false;
	}
	fprintf(out, "],\"top_sites\":{");
	for (rank = 0; rank < MT_REP_RANKS; rank++) {
		n = mt_rep_top_sites(r, rank, idx, MT_REP_TOP);
		fprintf(out, "%s\"%s\":[", rank ? "," : "",
			mt_rep_rank_name(rank));
		for (i = 0; i < n; i++) {
			if (i) {
				fputc(',', out);
			}
			err = json_site(out, r, &r->sites[idx[i]], &f);
			if (err < 0) {
				goto end;
			}
		}
		fputc(']', out);
	}
	/* the timeline as the charts draw it: bucket maxima */
	step = mt_rep_align_series(r);
	fprintf(out, "},\"timeline\":{\"bucket_ns\":%" PRIu64 ",\"series\":[",
		step);
	first = true;
	for (i = 0; i < r->nprocs; i++) {
		const struct mt_rep_series *s = &r->procs[i].series;
		size_t j;

		if (!s->s || !s->n) {
			continue;
		}
		fprintf(out, "%s{\"pid\":%d,\"heap\":[", first ? "" : ",",
			(int)r->procs[i].pid);
		for (j = 0; j < s->n; j++) {
			fprintf(out, "%s%" PRIu64, j ? "," : "", s->s[j].heap);
		}
		fprintf(out, "],\"mmapped\":[");
		for (j = 0; j < s->n; j++) {
			fprintf(out, "%s%" PRIu64, j ? "," : "",
				s->s[j].mapped);
		}
		fprintf(out, "]}");
		first = false;
	}
	fprintf(out, "]}}\n");
	err = ferror(out) ? -EIO : 0;
end:
	mt_rep_frames_free(&f);
	return err;
}

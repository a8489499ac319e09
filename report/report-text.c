/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format text: the summary for a person, per process and
 * in total, then the largest allocations, the size histogram and the top
 * sites. Figures are exact (bytes, counts) with a human unit beside; of
 * a sampled recording, the allocation figures are estimates, as its first
 * line says.
 *
 * A site is printed the way a stack is read: its figures and the frame
 * that names it (mt_rep_site_name(): the allocator and its wrappers
 * skipped), then the rest of its frames one a line, innermost first, as
 * many callers as tell the sites of the list apart (report-stack-lines.c;
 * sites of other processes are told apart by their "in").
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report-model.h"

static void print_bytes(FILE *out, const char *label, uint64_t v)
{
	char h[32];

	if (v < 1024) {
		fprintf(out, "  %-22s %" PRIu64 " B\n", label, v);
		return;
	}
	mt_rep_human(v, h, sizeof(h));
	fprintf(out, "  %-22s %" PRIu64 " B (%s%s)\n", label, v, h,
		v == UINT64_MAX ? ", saturated: at least that" : "");
}

/* The human figure beside an exact one, blank when it would say the same. */
static const char *human(uint64_t v, char *buf, size_t len)
{
	if (v < 1024) {
		buf[0] = '\0';
	} else {
		mt_rep_human(v, buf, len);
	}
	return buf;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

enum attach {
	NONE,
	ATTACHED,      /* the process was recorded from an attach on */
	SOME_ATTACHED, /* the total, of which some processes were */
};

/* An attached process's figures say what they cover: the heap it had
 * before the attach is not in the recording (memtrack --pid). */
static void print_proc(FILE *out, const struct mt_rep_proc *p,
		       const char *title, enum attach attached)
{
	unsigned int k;

	fprintf(out, "%s\n", title);
	if (p->attached) {
		fprintf(out, "  %-22s %.3f ms (times are from the first event); what it did before is not in the recording\n",
			"attached at", (double)p->attached_ts / 1e6);
	}
	fprintf(out, "  %-22s", "events");
	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		if (p->by_kind[k]) {
			fprintf(out, " %s=%" PRIu64, mt_event_kind_name(k),
				p->by_kind[k]);
		}
	}
	fprintf(out, "\n");
	fprintf(out, "  %-22s %" PRIu64 "\n", "allocations", p->allocs);
	fprintf(out, "  %-22s %" PRIu64 "\n", "frees", p->frees);
	if (p->unmatched_frees) {
		fprintf(out, "  %-22s %" PRIu64 "\n", "unmatched frees",
			p->unmatched_frees);
	}
	if (attached) {
		/* a Free carries no size in the format: counted only */
		fprintf(out, "  %-22s %" PRIu64 " frees of blocks allocated before the attach (sizes not recorded)\n",
			"frees before attach", p->frees_before_attach);
	}
	fprintf(out, "  %-22s %" PRIu64 " (freed before the thread's next allocation)\n",
		"temporary", p->temporary);
	print_bytes(out, "bytes allocated", p->bytes_allocated);
	print_bytes(out, "bytes freed", p->bytes_freed);
	print_bytes(out, "peak live heap", p->peak);
	if (attached) {
		fprintf(out, "  %-22s %s\n", "",
			attached == ATTACHED ?
				"above the heap at the attach, which is unknown" :
				"of an attached process: above its heap at the attach, which is unknown");
	}
	fprintf(out, "  %-22s %.3f ms\n", "peak heap time", ms(p->peak_ts));
	fprintf(out, "  %-22s %" PRIu64 " blocks, %" PRIu64 " B%s\n",
		"live at end", p->live_blocks, p->live,
		attached == ATTACHED ? " (allocated after the attach)" :
		attached ? " (of an attached process: allocated after the attach)" :
			   "");
	if (p->peak_mapped || p->bytes_munmapped) {
		print_bytes(out, "peak mmap'd", p->peak_mapped);
		fprintf(out, "  %-22s %.3f ms\n", "peak mmap'd time",
			ms(p->peak_mapped_ts));
		print_bytes(out, "mmap'd", p->bytes_mmapped);
		print_bytes(out, "munmapped", p->bytes_munmapped);
	}
	if (p->has_brk) {
		/* growth of the break past its first recorded value: at
		 * most, and at the end */
		print_bytes(out, "brk growth (max)", p->brk_max - p->brk_first);
		print_bytes(out, "brk growth (end)",
			    p->brk_last > p->brk_first ?
				    p->brk_last - p->brk_first : 0);
	}
}

static int print_sites(FILE *out, struct mt_rep *r, enum mt_rep_rank rank,
		       const char *title, int stack_lines,
		       struct mt_rep_frames *fs)
{
	struct mt_rep_apart apart = { 0 };
	size_t idx[MT_REP_TOP], ats[MT_REP_TOP], n, i;
	const char *name;
	char h[32];

	n = mt_rep_top_sites(r, rank, idx, MT_REP_TOP);
	fprintf(out, "top sites by %s\n", title);
	if (!n) {
		fprintf(out, "  (none)\n");
	}
	for (i = 0; i < n; i++) {
		if (mt_rep_site_frames(r, &r->sites[idx[i]], &fs[i]) < 0) {
			mt_rep_apart_free(&apart);
			return -ENOMEM;
		}
		ats[i] = mt_rep_site_name(r, &fs[i]);
		/* out of memory: each shows the least callers */
		if (mt_rep_apart_add(&apart, &fs[i], ats[i], true) < 0) {
			break;
		}
	}
	mt_rep_apart_done(&apart);
	for (i = 0; i < n; i++) {
		const struct mt_rep_site *s = &r->sites[idx[i]];

		name = fs[i].name[ats[i]];
		switch (rank) {
		case MT_REP_BY_COUNT:
			fprintf(out, "  %2zu. %12" PRIu64 " allocs  ",
				i + 1, s->count);
			break;
		case MT_REP_BY_LEAK:
			fprintf(out, "  %2zu. %12" PRIu64 " B %10s in %" PRIu64 " blocks  ",
				i + 1, s->live, human(s->live, h, sizeof(h)),
				s->live_blocks);
			break;
		default:
			fprintf(out, "  %2zu. %12" PRIu64 " B %10s  ",
				i + 1, mt_rep_site_value(s, rank),
				human(mt_rep_site_value(s, rank), h, sizeof(h)));
			break;
		}
		mt_rep_line_str(out, name);
		fputc('\n', out);
		mt_rep_stack_lines(&fs[i], ats[i],
				   mt_rep_apart_callers(&apart, i, stack_lines),
				   stack_lines, true, mt_rep_text_line, out);
	}
	mt_rep_apart_free(&apart);
	return 0;
}

int mt_rep_text(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	struct mt_rep_frames f[MT_REP_TOP];
	struct mt_rep_proc total;
	char title[160], label[48], h[32], attached[40];
	uint64_t most = 0;
	unsigned int k;
	size_t i;
	int err;

	memset(f, 0, sizeof(f));
	/* first, before any figure it changes the meaning of */
	if (r->sample_bytes) {
		fprintf(out, "sampled: one allocation per %" PRIu64 " B on average (--sample-bytes",
			r->sample_bytes);
		if (r->sample_has_seed) {
			fprintf(out, ", seed %" PRIu64, r->sample_seed);
		}
		fprintf(out, "); allocation figures are estimates\n");
	}
	for (i = 0; i < r->nprocs; i++) {
		const struct mt_rep_proc *p = &r->procs[i];

		snprintf(title, sizeof(title), "process %d%s%s", (int)p->pid,
			 p->attached ? " (attached: recorded from the attach on)" :
				       "",
			 p->recorder == MT_REP_REC_INTERPOSER ?
				 " (recorded by the interposer)" :
			 p->recorder == MT_REP_REC_UPROBES ?
				 " (recorded by uprobes)" :
				 "");
		print_proc(out, p, title, p->attached ? ATTACHED : NONE);
	}
	mt_rep_total(r, &total);
	snprintf(attached, sizeof(attached), "; %zu attached", r->nattached);
	snprintf(title, sizeof(title), "total (%zu process%s%s%s)", r->nprocs,
		 r->nprocs == 1 ? "" : "es", r->nattached ? attached : "",
		 r->damaged ? "; damaged file: events before the damage" : "");
	print_proc(out, &total, title, r->nattached ? SOME_ATTACHED : NONE);
	if (r->damaged_meta) {
		fprintf(out, "  %-22s %" PRIu64 " payload%s left out\n",
			"damaged metadata", r->damaged_meta,
			r->damaged_meta == 1 ? "" : "s");
	}
	if (mt_rep_saturated(r)) {
		fprintf(out, "  %" PRIu64 " B, in any figure: saturated, the sum is at least that\n",
			UINT64_MAX);
	}

	fprintf(out, "largest allocations\n");
	if (!r->nbig) {
		fprintf(out, "  (none)\n");
	}
	for (i = 0; i < r->nbig; i++) {
		const struct mt_rep_big *b = &r->big[i];

		fprintf(out, "  %2zu. %12" PRIu64 " B %10s  pid %d tid %d  %s at %.3f ms\n",
			i + 1, b->size, human(b->size, h, sizeof(h)),
			(int)b->pid, (int)b->tid,
			mt_event_kind_name(b->kind), ms(b->ts));
	}

	fprintf(out, "size histogram (allocations per size class)\n");
	for (k = 0; k < MT_REP_CLASSES; k++) {
		if (r->hist_count[k] > most) {
			most = r->hist_count[k];
		}
	}
	for (k = 0; k < MT_REP_CLASSES; k++) {
		char bar[41];
		size_t w;

		if (!r->hist_count[k]) {
			continue;
		}
		w = (size_t)((r->hist_count[k] * 40 + most - 1) / most);
		memset(bar, '#', w);
		bar[w] = '\0';
		mt_rep_class_label(k, label, sizeof(label));
		fprintf(out, "  %-28s %12" PRIu64 " x %-40s %" PRIu64 " B\n",
			label, r->hist_count[k], bar, r->hist_bytes[k]);
	}

	mt_rep_human(r->peak, h, sizeof(h));
	snprintf(title, sizeof(title), "bytes live at the peak (%s at %.3f ms)",
		 h, ms(r->peak_ts));
	if ((err = print_sites(out, r, MT_REP_BY_BYTES, "bytes allocated",
			       o->stack_lines, f)) < 0 ||
	    (err = print_sites(out, r, MT_REP_BY_COUNT,
			       "number of allocations", o->stack_lines, f)) < 0 ||
	    (err = print_sites(out, r, MT_REP_BY_PEAK, title, o->stack_lines,
			       f)) < 0 ||
	    (err = print_sites(out, r, MT_REP_BY_LEAK,
			       r->nattached ?
				       "leaks (live at end; of an attached process, allocated after the attach)" :
				       "leaks (live at end)",
			       o->stack_lines, f)) < 0) {
		goto end;
	}
	err = ferror(out) ? -EIO : 0;
end:
	for (i = 0; i < MT_REP_TOP; i++) {
		mt_rep_frames_free(&f[i]);
	}
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format svg: one self-contained picture (no script, no
 * font or file fetched) with the memory over time of the biggest processes
 * (live heap solid, mmap'd dashed; at most MT_REP_SERIES points a line) and
 * the allocation flamegraph, each frame's figures in its <title> tooltip,
 * as tall as its deepest drawn frame. The html format embeds the same
 * drawing (inline_in_html); its script finds the frames in <g id="flame">.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-model.h"

#define WIDTH 1200
#define LEFT 80
#define RIGHT 20
#define CHART_TOP 50
#define CHART_H 300
#define ROW 17
#define MAX_LINES 8 /* processes drawn in the chart */
/* Frames narrower than this are not drawn (their figures are in their
 * parent's): it bounds the file whatever the number of stacks. */
#define MIN_FRAME_PX 0.3

static const char *const palette[MAX_LINES] = {
	"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
	"#ff7f0e", "#17becf", "#8c564b", "#e377c2",
};

void mt_rep_human_time(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000000000) {
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	} else {
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	}
}

static double proc_size(const struct mt_rep_proc *p)
{
	return (double)p->peak + (double)p->peak_mapped;
}

/* The processes the chart shows: the biggest, at most MAX_LINES. */
static size_t chart_procs(const struct mt_rep *r, size_t *idx)
{
	size_t n = 0, i, j;

	for (i = 0; i < r->nprocs; i++) {
		const struct mt_rep_proc *p = &r->procs[i];

		if (!p->series.s || !p->series.n) {
			continue;
		}
		if (n == MAX_LINES &&
		    proc_size(p) <= proc_size(&r->procs[idx[n - 1]])) {
			continue;
		}
		j = n < MAX_LINES ? n++ : n - 1;
		while (j > 0 && proc_size(&r->procs[idx[j - 1]]) <
					proc_size(p)) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
	return n;
}

static void polyline(FILE *out, const struct mt_rep_series *s, bool mapped,
		     uint64_t step, double span, double top, const char *color)
{
	double cw = WIDTH - LEFT - RIGHT;
	size_t j;

	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
		color, mapped ? " stroke-dasharray=\"5,3\"" : "");
	for (j = 0; j < s->n; j++) {
		double v = (double)(mapped ? s->s[j].mapped : s->s[j].heap);
		double x = LEFT + cw * (double)(j * step) / span;
		double y = CHART_TOP + CHART_H - CHART_H * v / top;

		fprintf(out, "%s%.1f,%.1f", j ? " " : "", x, y);
	}
	fprintf(out, "\"/>\n");
}

/* The time the chart of r spans and its top figure: c's span and ymax. */
void mt_rep_chart_scale(struct mt_rep *r, struct mt_rep_chart *c)
{
	size_t idx[MAX_LINES], n, i, j, maxn = 0;
	uint64_t step = mt_rep_align_series(r), top = 0;

	n = chart_procs(r, idx);
	for (i = 0; i < n; i++) {
		const struct mt_rep_series *s = &r->procs[idx[i]].series;

		if (s->n > maxn) {
			maxn = s->n;
		}
		for (j = 0; j < s->n; j++) {
			if (s->s[j].heap > top) {
				top = s->s[j].heap;
			}
			if (s->s[j].mapped > top) {
				top = s->s[j].mapped;
			}
		}
	}
	c->ymax = top ? top : 1;
	c->span = (double)(maxn > 1 ? maxn - 1 : 1) * (double)(step ? step : 1);
}

/* The chart at c's scale (mt_rep_chart_scale(), or one common to two
 * recordings: --diff). */
static void chart(FILE *out, struct mt_rep *r, const struct mt_rep_chart *c)
{
	size_t idx[MAX_LINES], n, i;
	uint64_t step = mt_rep_align_series(r), top = c->ymax;
	double span = c->span, cw = WIDTH - LEFT - RIGHT;
	char h[32], t[32];

	n = chart_procs(r, idx);
	fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"h\">Memory over time (solid: live heap, dashed: mmap'd)</text>\n",
		LEFT, CHART_TOP - 15);
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
		LEFT, CHART_TOP, cw, CHART_H);
	for (i = 0; i <= 4; i++) {
		double y = CHART_TOP + CHART_H - CHART_H * (double)i / 4;
		double x = LEFT + cw * (double)i / 4;
		double at = span * (double)i / 4;

		/* in integers: top * i / 4 as a double rounds up to 2^64
		 * for a top near UINT64_MAX, which no uint64_t holds */
		mt_rep_human(top / 4 * i + top % 4 * i / 4, h, sizeof(h));
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			LEFT, y, LEFT + cw, y);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			LEFT - 5, y + 4, h);
		/* a time at or above 2^64 ns is no uint64_t */
		mt_rep_human_time(at < 18446744073709551616.0 ? (uint64_t)at :
								   UINT64_MAX,
				  t, sizeof(t));
		/* the last label ends at the edge rather than past it */
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
			x, CHART_TOP + CHART_H + 15, i < 4 ? "middle" : "end",
			t);
	}
	for (i = 0; i < n; i++) {
		const struct mt_rep_proc *p = &r->procs[idx[i]];

		mt_rep_human(p->peak, h, sizeof(h));
		mt_rep_human(p->peak_mapped, t, sizeof(t));
		fprintf(out, "<g><title>pid %d: peak heap %s (%" PRIu64 " B), peak mmap'd %s (%" PRIu64 " B)</title>\n",
			(int)p->pid, h, p->peak, t, p->peak_mapped);
		polyline(out, &p->series, false, step, span, (double)top,
			 palette[i]);
		polyline(out, &p->series, true, step, span, (double)top,
			 palette[i]);
		fprintf(out, "</g>\n");
		fprintf(out, "<rect x=\"%zu\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%zu\" y=\"%d\">pid %d</text>\n",
			LEFT + i * 130, CHART_TOP + CHART_H + 25, palette[i],
			LEFT + i * 130 + 14, CHART_TOP + CHART_H + 34,
			(int)p->pid);
	}
	if (r->nprocs > n) {
		fprintf(out, "<text x=\"%d\" y=\"%d\">(%zu smaller processes not drawn)</text>\n",
			LEFT, CHART_TOP + CHART_H + 50, r->nprocs - n);
	}
}

int mt_rep_svg_chart(FILE *out, struct mt_rep *r, const char *id,
		     struct mt_rep_chart *c)
{
	/* room under the legend for the script's (report-html.js) */
	int height = CHART_TOP + CHART_H + 80;

	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		id, WIDTH, height, WIDTH, height);
	fprintf(out, "<style>.h { font-size: 15px; font-weight: bold; }</style>\n");
	chart(out, r, c);
	c->left = LEFT;
	c->top = CHART_TOP;
	c->width = WIDTH - LEFT - RIGHT;
	c->height = CHART_H;
	fprintf(out, "</svg>\n");
	return ferror(out) ? -EIO : 0;
}

struct flame_ctx {
	FILE *out;
	unsigned int depth; /* of the whole graph */
	double top;         /* y of the deepest row */
	bool html;
	const char *unit;
};

static unsigned int hash_name(const char *s)
{
	unsigned int h = 2166136261u;

	for (; *s; s++) {
		h = (h ^ (unsigned char)*s) * 16777619u;
	}
	return h;
}

static void flame_frame(void *ctx, const char *name, unsigned int depth,
			double x, double w, uint64_t weight, uint64_t total)
{
	struct flame_ctx *f = ctx;
	double cw = WIDTH - LEFT - RIGHT, px = w * cw;
	/* a flame: the root at the bottom */
	double y = f->top + (double)(f->depth - 1 - depth) * ROW;
	unsigned int hsh = hash_name(name);
	size_t chars, len = strlen(name);
	/* what fits in the frame: at most the graph's width, 7 px a byte */
	char shown[(WIDTH - LEFT - RIGHT) / 7 + 3];

	if (px < MIN_FRAME_PX) {
		return;
	}
	if (px > cw) {
		px = cw; /* saturated weights (report-flame.c): never wider */
	}
	fprintf(f->out, "<g class=\"f\"><title>");
	mt_rep_xml_str(f->out, name);
	fprintf(f->out, " (%" PRIu64 " %s, %.2f%%)</title>", weight, f->unit,
		100.0 * (double)weight / (double)total);
	fprintf(f->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"rgb(%u,%u,%u)\"/>",
		LEFT + x * cw, y, px, ROW - 1, 205 + hsh % 50,
		80 + (hsh >> 8) % 130, 40 + (hsh >> 16) % 40);
	chars = (size_t)(px / 7);
	if (chars >= 3) {
		if (len > chars) {
			snprintf(shown, sizeof(shown), "%.*s..",
				 (int)(chars - 2), name);
		} else {
			snprintf(shown, sizeof(shown), "%s", name);
		}
		fprintf(f->out, "<text x=\"%.2f\" y=\"%.1f\">", LEFT + x * cw + 3,
			y + ROW - 5);
		mt_rep_xml_str(f->out, shown);
		fprintf(f->out, "</text>");
	}
	fprintf(f->out, "</g>\n");
}

/* The graph is as tall as its deepest drawn frame: a deep stack of a few
 * bytes, too narrow to draw, must not leave a tall empty space above. */
static void count_frame(void *ctx, const char *name, unsigned int depth,
			double x, double w, uint64_t weight, uint64_t total)
{
	unsigned int *deepest = ctx;

	(void)name, (void)x, (void)weight, (void)total;
	if (w * (WIDTH - LEFT - RIGHT) >= MIN_FRAME_PX && depth >= *deepest) {
		*deepest = depth + 1;
	}
}

int mt_rep_svg(FILE *out, struct mt_rep *r, const struct mt_report_opts *o,
	       bool inline_in_html)
{
	struct flame_ctx f = { .out = out, .html = inline_in_html };
	struct mt_rep_chart c;
	unsigned int depth = 0;
	int height, flame_top = CHART_TOP + CHART_H + 100;
	int err = mt_rep_flame(r, o, count_frame, &depth);

	if (err < 0) {
		return err;
	}
	f.unit = o->weight == MT_REPORT_COUNT ? "allocations" : "bytes";
	height = flame_top + (int)(depth ? depth : 1) * ROW + 20;
	if (!inline_in_html) {
		fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	}
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		WIDTH, height, WIDTH, height);
	fprintf(out, "<style>.h { font-size: 15px; font-weight: bold; } .f text { font-size: 11px; pointer-events: none; } .f:hover rect { stroke: #000; }</style>\n");
	fprintf(out, "<title>memtrack report: ");
	mt_rep_xml_str(out, r->path);
	fprintf(out, "</title>\n");
	mt_rep_chart_scale(r, &c);
	chart(out, r, &c);
	if (r->sample_bytes) {
		/* right of the chart's heading, above it */
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-weight=\"bold\">Sampled recording: one allocation per %" PRIu64 " B on average; figures are estimates</text>\n",
			WIDTH - RIGHT, CHART_TOP - 15, r->sample_bytes);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"h\">Allocations by %s (flamegraph; hover for figures)</text>\n",
		LEFT, flame_top - 15,
		o->weight == MT_REPORT_COUNT ? "count" : "bytes");
	if (depth) {
		f.depth = depth;
		f.top = flame_top;
		fprintf(out, "<g id=\"flame\">\n");
		mt_rep_flame(r, o, flame_frame, &f);
		fprintf(out, "</g>\n");
	} else {
		fprintf(out, "<text x=\"%d\" y=\"%d\">(no allocation)</text>\n",
			LEFT, flame_top + 12);
	}
	fprintf(out, "</svg>\n");
	return ferror(out) ? -EIO : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format html: one self-contained page (inline style,
 * inline SVG, inline script; nothing fetched) with the summary table, the
 * chart and the flamegraph of the svg format and, beside them, the top
 * sites. The script (report-html.js.h) zooms into a clicked frame and
 * searches frames; with '#selftest=NAME' in the URL it also exercises both
 * on frame NAME and writes what it saw into <pre id="selftest">, which a
 * headless browser dumps for tests/test-report-html.sh.
 *
 * Written as XHTML-compatible markup so both HTML and XML parsers accept
 * it; the script sits in a CDATA section for the same reason.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "report-map.h"
#include "report-model.h"

/* Sites in the page's data: the biggest by any figure; the others of each
 * process are summed into one, so that every total stays whole. */
#define HTML_SITES 10000
#define HTML_FIGURES 5 /* allocated, allocations, temporary, at peak, leaked */

/* Figures are shown in human units (bytes in KiB, MiB...; counts in k,
 * M...); the exact value is in the title. */
static void td_bytes(FILE *out, uint64_t v)
{
	char h[32];

	mt_rep_human(v, h, sizeof(h));
	fprintf(out, "<td title=\"%" PRIu64 " B%s\">%s%s</td>", v,
		v == UINT64_MAX ? ", saturated: at least that" : "",
		v == UINT64_MAX ? "&#x2265; " : "", h);
}

static void td_time(FILE *out, uint64_t ns)
{
	char h[32];

	mt_rep_human_time(ns, h, sizeof(h));
	fprintf(out, "<td title=\"%" PRIu64 " ns\">%s</td>", ns, h);
}

static void td_count(FILE *out, uint64_t v)
{
	char h[32];

	mt_rep_human_count(v, h, sizeof(h));
	fprintf(out, "<td title=\"%" PRIu64 "\">%s</td>", v, h);
}

static void row(FILE *out, const char *name, const struct mt_rep_proc *p,
		bool attach_column)
{
	fprintf(out, "<tr><td>%s</td>", name);
	td_count(out, p->allocs);
	td_count(out, p->frees);
	if (attach_column) {
		td_count(out, p->frees_before_attach);
	}
	td_count(out, p->temporary);
	td_bytes(out, p->bytes_allocated);
	td_bytes(out, p->peak);
	td_time(out, p->peak_ts);
	td_count(out, p->live_blocks);
	td_bytes(out, p->live);
	td_bytes(out, p->peak_mapped);
	fprintf(out, "</tr>\n");
}

static void summary(FILE *out, const struct mt_rep *r)
{
	struct mt_rep_proc total;
	char name[32];
	size_t i;

	fprintf(out, "<table>\n<tr><th>process</th><th>allocations</th><th>frees</th>%s<th>temporary</th><th>bytes allocated</th><th>peak heap</th><th>peak at</th><th>leaked blocks</th><th>leaked bytes</th><th>peak mmap'd</th></tr>\n",
		r->nattached ? "<th>frees before attach</th>" : "");
	for (i = 0; i < r->nprocs; i++) {
		snprintf(name, sizeof(name), "pid %d%s", (int)r->procs[i].pid,
			 r->procs[i].attached ? " (attached)" : "");
		row(out, name, &r->procs[i], r->nattached);
	}
	mt_rep_total(r, &total);
	row(out, "total", &total, r->nattached);
	fprintf(out, "</table>\n");
}

/* What the figures of an attached process cover (memtrack --pid). */
static void attach_note(FILE *out, const struct mt_rep *r)
{
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		const struct mt_rep_proc *p = &r->procs[i];
		char t[32];

		if (!p->attached) {
			continue;
		}
		mt_rep_human_time(p->attached_ts < 0 ?
					  0 - (uint64_t)p->attached_ts :
					  (uint64_t)p->attached_ts,
				  t, sizeof(t));
		fprintf(out, "<p><strong>pid %d was attached to</strong> (%s %s the first event): its figures cover what it did from the attach on. "
			"%" PRIu64 " frees of blocks allocated before the attach are counted apart (their sizes are not recorded); "
			"its peak heap is above the heap it had at the attach, which is unknown; "
			"its leaks are blocks allocated after the attach and still live at the end.</p>\n",
			(int)p->pid, t,
			p->attached_ts < 0 ? "before" : "after",
			p->frees_before_attach);
	}
}

/* A line of a top site under its name: "from main (app.c:12)" */
static void site_line(void *ctx, const char *word, const char *name,
		      size_t more)
{
	FILE *out = ctx;

	if (!name) {
		fprintf(out, "<span class=\"call\">&#x2026; %zu more frame%s (click: the whole stack)</span>",
			more, more == 1 ? "" : "s");
		return;
	}
	fprintf(out, "<span class=\"call\">%s ", word);
	mt_rep_xml_str(out, name);
	fprintf(out, "</span>");
}

/* A site's frames, root first, as the script reads them (report-html.js:
 * markRows()): a JSON array in a single-quoted attribute. Not the title,
 * whose frames are joined by ';' and so escaped (\x3b): a search for a
 * name with a ';' in it must find it as the flame graph does. */
static void frames_attr(FILE *out, const struct mt_rep_frames *f)
{
	size_t i;

	fprintf(out, " data-frames='[");
	for (i = 0; i < f->n; i++) {
		if (i) {
			fputc(',', out);
		}
		mt_rep_json_str_markup(out, f->name[i]);
	}
	fprintf(out, "]'");
}

/*
 * The top sites by the flamegraph's weight: each named by its frame
 * (mt_rep_site_name(): the innermost one not in an allocator or a
 * wrapper of it), then, as the text report shows them, its wrappers and
 * as many callers as tell it apart from the other rows
 * (report-stack-lines.c), and its process: two sites of one function
 * read apart. The whole stack is in its title; a click shows it and
 * searches the flamegraph for the name.
 */
static int top_sites(FILE *out, struct mt_rep *r,
		     const struct mt_report_opts *o)
{
	struct mt_rep_frames f[MT_REP_TOP];
	struct mt_rep_apart apart = { 0 };
	bool by_count = o->weight == MT_REPORT_COUNT;
	size_t idx[MT_REP_TOP], ats[MT_REP_TOP], n, i;
	const char *stack;
	int err = 0;

	memset(f, 0, sizeof(f));
	n = mt_rep_top_sites(r, by_count ? MT_REP_BY_COUNT : MT_REP_BY_BYTES,
			     idx, MT_REP_TOP);
	fprintf(out, "<div id=\"sites\">\n<h2>Top sites by %s</h2>\n",
		by_count ? "allocations" : "bytes allocated");
	if (!n) {
		fprintf(out, "<p>(no allocation)</p>\n</div>\n");
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (mt_rep_site_frames(r, &r->sites[idx[i]], &f[i]) < 0) {
			err = -ENOMEM;
			goto end;
		}
		ats[i] = mt_rep_site_name(r, &f[i]);
		/* out of memory: each shows the least callers */
		if (mt_rep_apart_add(&apart, &f[i], ats[i], true) < 0) {
			break;
		}
	}
	mt_rep_apart_done(&apart);
	fprintf(out, "<table>\n<tr><th>#</th><th>site (click: its stack, a search)</th><th>allocated</th><th>allocations</th><th>at peak</th><th>leaked</th></tr>\n");
	for (i = 0; i < n; i++) {
		const struct mt_rep_site *s = &r->sites[idx[i]];

		stack = mt_rep_frames_join(&f[i], 0);
		if (!stack) {
			err = -ENOMEM;
			break;
		}
		fprintf(out, "<tr><td>%zu</td><td class=\"site\" title=\"",
			i + 1);
		mt_rep_xml_str(out, stack);
		fprintf(out, "\"");
		frames_attr(out, &f[i]);
		fprintf(out, "><span class=\"name\">");
		mt_rep_xml_str(out, f[i].name[ats[i]]);
		fprintf(out, "</span>");
		mt_rep_stack_lines(&f[i], ats[i],
				   mt_rep_apart_callers(&apart, i, -1), -1,
				   true, site_line, out);
		fprintf(out, "</td>");
		td_bytes(out, s->bytes);
		td_count(out, s->count);
		td_bytes(out, s->at_peak);
		td_bytes(out, s->live);
		fprintf(out, "</tr>\n");
	}
	fprintf(out, "</table>\n</div>\n");
end:
	for (i = 0; i < MT_REP_TOP; i++) {
		mt_rep_frames_free(&f[i]);
	}
	mt_rep_apart_free(&apart);
	return err;
}

/* Frame names, each once in the data: sites index them. */
struct names {
	const char **s; /* owned copies */
	size_t n, cap;
	struct mt_idx_map idx;
	uint64_t seed;
};

static int64_t name_id(struct names *t, const char *name)
{
	size_t len = strlen(name);
	uint64_t key = mt_map_str_hash(t->seed, name, len);
	const char **ns;
	char *copy;
	int64_t i;

	for (; (i = mt_idx_get(&t->idx, key)) >= 0; key++) {
		if (strcmp(t->s[i], name) == 0) {
			return i;
		}
	}
	if (t->n == t->cap) {
		ns = mt_array_grow(t->s, &t->cap, t->n + 1, sizeof(*ns));
		if (!ns) {
			return -ENOMEM;
		}
		t->s = ns;
	}
	copy = strdup(name);
	if (!copy || mt_idx_put(&t->idx, key, (uint32_t)t->n) < 0) {
		free(copy);
		return -ENOMEM;
	}
	t->s[t->n] = copy;
	return (int64_t)t->n++;
}

/* The data's "names" array, after its "sites" (closes that one). */
static void names_write(FILE *out, const struct names *t)
{
	size_t i;

	fprintf(out, "],\n\"names\":[");
	for (i = 0; i < t->n; i++) {
		fprintf(out, "%s", i ? ",\n" : "\n");
		mt_rep_json_str_markup(out, t->s[i]);
	}
}

static void names_free(struct names *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free((char *)t->s[i]);
	}
	free(t->s);
	free(t->idx.slots);
}

static void site_figures(const struct mt_rep_site *s, uint64_t *v)
{
	v[0] = s->bytes;
	v[1] = s->count;
	v[2] = s->temporary;
	v[3] = s->at_peak;
	v[4] = s->live;
}

struct ranked {
	double score;
	size_t idx;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->score != y->score) {
		return x->score > y->score ? -1 : 1;
	}
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Which sites the data holds whole: all when they are few, else the
 * HTML_SITES with the largest share of any figure. NULL: out of memory. */
static bool *kept_sites(const struct mt_rep *r)
{
	bool *kept = calloc(r->nsites + 1, sizeof(*kept));
	double total[HTML_FIGURES] = { 0 };
	struct ranked *rk;
	uint64_t v[HTML_FIGURES];
	size_t i, j;

	if (!kept || r->nsites <= HTML_SITES) {
		for (i = 0; kept && i < r->nsites; i++) {
			kept[i] = true;
		}
		return kept;
	}
	rk = malloc(r->nsites * sizeof(*rk));
	if (!rk) {
		free(kept);
		return NULL;
	}
	for (i = 0; i < r->nsites; i++) {
		site_figures(&r->sites[i], v);
		for (j = 0; j < HTML_FIGURES; j++) {
			total[j] += (double)v[j];
		}
	}
	for (i = 0; i < r->nsites; i++) {
		rk[i] = (struct ranked){ 0, i };
		site_figures(&r->sites[i], v);
		for (j = 0; j < HTML_FIGURES; j++) {
			double share = total[j] > 0 ? (double)v[j] / total[j] : 0;

			if (share > rk[i].score) {
				rk[i].score = share;
			}
		}
	}
	qsort(rk, r->nsites, sizeof(*rk), cmp_ranked);
	for (i = 0; i < HTML_SITES; i++) {
		kept[rk[i].idx] = true;
	}
	free(rk);
	return kept;
}

/* The sites of one process left out of the data, summed. */
struct others {
	int32_t pid;
	size_t n;
	uint64_t v[HTML_FIGURES];
	uint64_t cp[MT_REP_CP];
};

static void data_cp(FILE *out, const struct mt_rep *r, const uint64_t *cp)
{
	size_t k;
	bool any = false;

	for (k = 0; cp && k < r->cp_n; k++) {
		any |= cp[k] != 0;
	}
	if (!any) {
		fprintf(out, "0");
		return;
	}
	for (k = 0; k < r->cp_n; k++) {
		fprintf(out, "%c%" PRIu64, k ? ',' : '[', cp[k]);
	}
	fprintf(out, "]");
}

/* A side's figures of a site: its five (HTML_FIGURES) and its live bytes
 * at each of r's checkpoints (NULL: none kept, or always none). */
struct side_figs {
	const struct mt_rep *r;
	const uint64_t *v, *cp;
};

/* One site of the data: its frames and B's figures (a report's own); in
 * a diff, A's after them. */
static void data_site(FILE *out, bool first, const int64_t *frames,
		      size_t nframes, size_t name_at,
		      const struct side_figs *b, const struct side_figs *a)
{
	const struct side_figs *side[2] = { b, a };
	size_t j, k;

	fprintf(out, "%s\n[[", first ? "" : ",");
	for (j = 0; j < nframes; j++) {
		fprintf(out, "%s%" PRId64, j ? "," : "", frames[j]);
	}
	fprintf(out, "],%zu", name_at);
	for (k = 0; k < 2 && side[k]; k++) {
		for (j = 0; j < HTML_FIGURES; j++) {
			fprintf(out, ",%" PRIu64, side[k]->v[j]);
		}
		fprintf(out, ",");
		data_cp(out, side[k]->r, side[k]->cp);
	}
	fprintf(out, "]");
}

/* A chart of the data (see data()): its svg's id, where its plot is, the
 * time it spans, its top figure and its checkpoints; col: where each
 * site's checkpoints are among its figures. */
static void data_chart(FILE *out, const struct mt_rep *r, const char *id,
		       const struct mt_rep_chart *c, int col)
{
	fprintf(out, "{\"id\":\"%s\",\"plot\":[%d,%d,%d,%d],\"span\":%.0f,\"ymax\":%" PRIu64 ",\"cpStep\":%" PRIu64 ",\"cpN\":%zu,\"col\":%d}",
		id, c->left, c->top, c->width, c->height, c->span, c->ymax,
		(uint64_t)1 << r->cp_shift, r->want_cp ? r->cp_n : 0, col);
}

/*
 * The data the page's script draws its views from, as JSON in
 * <script type="application/json" id="mt-data">:
 *   weight   "bytes" or "count": the figure shown first (--weight)
 *   charts   [{id: the chart's svg, plot: [left, top, width, height] of
 *            its plot, span: the time it spans (ns), ymax: its top
 *            figure, cpStep, cpN: checkpoint k ends (k + 1) * cpStep ns
 *            after the first event (MT_REP_CP; 0 checkpoints when none
 *            were kept), col: 7, where each site's checkpoints are}]
 *   names    frame names; sites index them
 *   sites    [[frame, ...] root first, the process first; the index of
 *            the frame that names the site; allocated bytes, allocations,
 *            temporary, bytes at the peak, bytes leaked; the bytes live
 *            at each checkpoint, or 0 when always none]
 *   left_out sites summed into one "(N other sites)" of their process
 */
static int data(FILE *out, struct mt_rep *r, const struct mt_report_opts *o,
		const struct mt_rep_chart *c)
{
	struct names names = { .seed = mt_map_seed() };
	struct mt_rep_frames f = { 0 };
	int64_t ids[MT_REP_MAX_FRAMES];
	struct others *oth = NULL;
	size_t noth = 0, left_out = 0, i, j, k;
	bool *kept = kept_sites(r), first = true;
	uint64_t v[HTML_FIGURES];
	int err = 0, nf;

	if (!kept) {
		return -ENOMEM;
	}
	fprintf(out, "<script type=\"application/json\" id=\"mt-data\">\n{\"weight\":\"%s\",\"charts\":[",
		o->weight == MT_REPORT_COUNT ? "count" : "bytes");
	data_chart(out, r, "chart", c, 7);
	fprintf(out, "],\n\"sites\":[");
	for (i = 0; i < r->nsites && !err; i++) {
		const struct mt_rep_site *s = &r->sites[i];
		const uint64_t *cp = r->want_cp ? s->cp : NULL;

		site_figures(s, v);
		if (!kept[i]) {
			/* the processes' own sites are few: a scan will do */
			for (j = 0; j < noth && oth[j].pid != s->pid; j++) {
			}
			if (j == noth) {
				struct others *no = realloc(oth, (noth + 1) *
								 sizeof(*no));

				if (!no) {
					err = -ENOMEM;
					break;
				}
				oth = no;
				memset(&oth[noth++], 0, sizeof(*oth));
				oth[j].pid = s->pid;
			}
			oth[j].n++;
			for (k = 0; k < HTML_FIGURES; k++) {
				oth[j].v[k] = mt_rep_sat_add(oth[j].v[k], v[k]);
			}
			for (k = 0; cp && k < r->cp_n; k++) {
				oth[j].cp[k] = mt_rep_sat_add(oth[j].cp[k],
							      cp[k]);
			}
			left_out++;
			continue;
		}
		nf = mt_rep_site_frames(r, s, &f);
		if (nf < 0) {
			err = nf;
			break;
		}
		for (j = 0; j < f.n; j++) {
			ids[j] = name_id(&names, f.name[j]);
			if (ids[j] < 0) {
				err = (int)ids[j];
				break;
			}
		}
		if (!err) {
			struct side_figs b = { r, v, cp };

			data_site(out, first, ids, f.n,
				  mt_rep_site_name(r, &f), &b, NULL);
			first = false;
		}
	}
	for (i = 0; i < noth && !err; i++) {
		struct side_figs b = { r, oth[i].v,
				       r->want_cp ? oth[i].cp : NULL };
		char pid[32], label[64];

		snprintf(pid, sizeof(pid), "pid %d", (int)oth[i].pid);
		snprintf(label, sizeof(label), "(%zu other sites)", oth[i].n);
		ids[0] = name_id(&names, pid);
		ids[1] = name_id(&names, label);
		if (ids[0] < 0 || ids[1] < 0) {
			err = -ENOMEM;
			break;
		}
		data_site(out, first, ids, 2, 1, &b, NULL);
		first = false;
	}
	names_write(out, &names);
	fprintf(out, "],\n\"left_out\":%zu}\n</script>\n", left_out);
	names_free(&names);
	mt_rep_frames_free(&f);
	free(oth);
	free(kept);
	return err;
}

static const char script[] =
#include "report-html.js.h"
	;

static const char *const figure_names[HTML_FIGURES] = {
	"allocated", "allocations", "temporary", "at peak", "leaked"
};

/* The page up to its first heading, with title (and heading) title, and
 * then suffix after it. */
static void page_begin(FILE *out, const char *title, const char *suffix)
{
	fprintf(out, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>memtrack report: ");
	mt_rep_xml_str(out, title);
	mt_rep_xml_str(out, suffix);
	fprintf(out, "</title>\n<style>\n"
		"body { font-family: sans-serif; margin: 1em; }\n"
		"table { border-collapse: collapse; }\n"
		"td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }\n"
		"td.site { text-align: left; font-family: monospace; cursor: pointer; max-width: 30em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }\n"
		"td.site span { display: block; overflow: hidden; text-overflow: ellipsis; }\n"
		"td.site span.call { padding-left: 2em; color: #555; font-size: 90%%; }\n"
		"#main { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }\n"
		"#controls { margin: 0.5em 0; }\n"
		"#info { height: 1.5em; font-family: monospace; }\n"
		"#flame g.f { cursor: pointer; }\n"
		"#flame g.anc rect { opacity: 0.5; }\n"
		"#flame text { font-size: 11px; pointer-events: none; }\n"
		"#flame g.f:hover rect { stroke: #000; }\n"
		"#chart { cursor: crosshair; }\n"
		"#tree th { cursor: pointer; }\n"
		"#tree th.sorted { background: #eef; }\n"
		"#tree td.fn { text-align: left; font-family: monospace; white-space: nowrap; max-width: 60em; overflow: hidden; text-overflow: ellipsis; cursor: pointer; }\n"
		"#tree tr.hit td.fn, #sites tr.hit td.site, #live tr.hit td.site { background: #fbf; }\n"
		".grow { color: #c00; } .shrink { color: #06c; }\n"
		"#live td.site { cursor: default; }\n"
		"</style>\n</head>\n<body>\n<h1>memtrack report: ");
	mt_rep_xml_str(out, title);
	mt_rep_xml_str(out, suffix);
	fprintf(out, "</h1>\n");
}

static void page_notes(FILE *out, const struct mt_rep *r, const char *which)
{
	if (r->sample_bytes) {
		fprintf(out, "<p><strong>%sSampled recording: one allocation per %" PRIu64 " B on average (--sample-bytes); the allocation figures are estimates.</strong></p>\n",
			which, r->sample_bytes);
	}
	if (r->damaged) {
		fprintf(out, "<p><strong>%sDamaged file: this covers the %" PRIu64 " events before the damage.</strong></p>\n",
			which, r->events);
	}
	if (mt_rep_saturated(r)) {
		fprintf(out, "<p><strong>%sSome figures reached %" PRIu64 " B and saturated there (&#x2265;): the sums are at least that.</strong></p>\n",
			which, UINT64_MAX);
	}
	if (r->damaged_meta) {
		fprintf(out, "<p><strong>%sDamaged metadata: %" PRIu64 " payload%s left out.</strong></p>\n",
			which, r->damaged_meta, r->damaged_meta == 1 ? "" : "s");
	}
	attach_note(out, r);
}

/* The controls, the flame graph and the trees the script fills. */
static void page_views(FILE *out, const struct mt_report_opts *o, bool diff)
{
	size_t i;

	fprintf(out, "<div id=\"controls\"><select id=\"view\"><option value=\"flame\">flame graph</option>"
		"<option value=\"top-down\">top-down tree</option><option value=\"bottom-up\">bottom-up tree</option></select> "
		"<select id=\"metric\">");
	for (i = 0; i < HTML_FIGURES; i++) {
		fprintf(out, "<option value=\"%zu\"%s>%s</option>", i,
			i == (o->weight == MT_REPORT_COUNT) ?
				" selected=\"selected\"" : "",
			figure_names[i]);
	}
	fprintf(out, "<option value=\"5\" disabled=\"disabled\">live at the selection's end</option></select> "
		"<label><input type=\"checkbox\" id=\"invert\"/> inverted</label> "
		"<input type=\"search\" id=\"search\" placeholder=\"search frames\" size=\"30\"/> "
		"<button type=\"button\" id=\"reset\">reset zoom</button> "
		"<span id=\"match\"></span></div>\n"
		"<div id=\"info\">hover a frame for its figures, click it to zoom</div>\n"
		"<div id=\"flamebox\"><h3 id=\"flamehead\"></h3><svg xmlns=\"http://www.w3.org/2000/svg\" id=\"flamesvg\" width=\"1200\" height=\"40\" viewBox=\"0 0 1200 40\" font-family=\"sans-serif\" font-size=\"12\"><g id=\"flame\"></g></svg></div>\n"
		"<div id=\"treebox\" hidden=\"hidden\"><table id=\"tree\"><thead><tr><th>function (click: open, close)</th>");
	for (i = 0; i < HTML_FIGURES; i++) {
		fprintf(out, "<th data-m=\"%zu\">%s</th>", i, figure_names[i]);
	}
	fprintf(out, "<th data-m=\"5\" hidden=\"hidden\">live at the selection's end</th></tr></thead><tbody></tbody></table></div>\n"
		"<div id=\"livebox\" hidden=\"hidden\"><h2 id=\"livehead\"></h2><table id=\"live\"><thead><tr><th>#</th><th>site</th>%s</tr></thead><tbody></tbody></table></div>\n",
		diff ? "<th>live in A</th><th>live in B</th><th>B - A</th>" :
		       "<th>live</th><th>allocated</th><th>leaked</th>");
}

static int page_end(FILE *out)
{
	fprintf(out, "<pre id=\"selftest\" hidden=\"hidden\"></pre>\n");
	/* apart from the main script, so that its syntax errors show too */
	fprintf(out, "<script>\nwindow.onerror = function (msg, src, line) {\n\tdocument.getElementById('selftest').textContent += 'error: ' + msg + ' (line ' + line + ')\\n';\n};\n</script>\n");
	fprintf(out, "<script>\n//<![CDATA[\n%s//]]>\n</script>\n</body>\n</html>\n",
		script);
	return ferror(out) ? -EIO : 0;
}

/*
 * How exact the time selection is: the page keeps each site's live bytes
 * at the checkpoints only (MT_REP_CP at most, so that the analysis's
 * memory grows with sites and not with events), and a range's end snaps
 * to the end of the checkpoint that holds it. Said before the first drag.
 */
static void range_precision(FILE *out, const struct mt_rep *r)
{
	char step[32];

	if (!r->want_cp) {
		fprintf(out, "no checkpoints%s",
			r->cp_failed ? ": out of memory" : "");
		return;
	}
	mt_rep_human_time((uint64_t)1 << r->cp_shift, step, sizeof(step));
	fprintf(out, "%zu checkpoints, one every %s", r->cp_n, step);
}

int mt_rep_html(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	struct mt_rep_chart c;
	int err;

	page_begin(out, r->path, "");
	page_notes(out, r, "");
	summary(out, r);
	fprintf(out, "<div id=\"main\">\n<div id=\"charts\">\n");
	mt_rep_chart_scale(r, &c);
	err = mt_rep_svg_chart(out, r, "chart", &c);
	if (err < 0) {
		return err;
	}
	fprintf(out, "<p id=\"range\">drag across the chart to see what was live at the end of a time range; the end snaps to the end of its checkpoint (");
	range_precision(out, r);
	fprintf(out, ")</p>\n");
	page_views(out, o, false);
	err = data(out, r, o, &c);
	if (err < 0) {
		return err;
	}
	fprintf(out, "</div>\n");
	err = top_sites(out, r, o);
	if (err < 0) {
		return err;
	}
	fprintf(out, "</div>\n");
	return page_end(out);
}

/*
 * The live bytes of the diff's first kept rows at each checkpoint of each
 * side, summed over the sites of the row (row_of[k][i]: the row of site
 * i of side[k]), the other rows' in row kept: the row's side k's at
 * cp + (row * 2 + k) * MT_REP_CP. At most (HTML_SITES + 1) * 1 KiB,
 * whatever the number of sites. NULL: out of memory.
 */
static uint64_t *diff_cp(struct mt_rep *side[2],
			 const uint32_t *const row_of[2], size_t kept)
{
	uint64_t *cp = calloc((kept + 1) * 2 * MT_REP_CP, sizeof(*cp));
	size_t i, j, row;
	unsigned int k;

	for (k = 0; cp && k < 2; k++) {
		const struct mt_rep *r = side[k];

		for (i = 0; r->want_cp && i < r->nsites; i++) {
			const uint64_t *from = r->sites[i].cp;
			uint64_t *to;

			if (!from) {
				continue;
			}
			row = row_of[k][i] < kept ? row_of[k][i] : kept;
			to = cp + (row * 2 + k) * MT_REP_CP;
			for (j = 0; j < r->cp_n; j++) {
				to[j] = mt_rep_sat_add(to[j], from[j]);
			}
		}
	}
	return cp;
}

/*
 * Both recordings' memory charts, A above B, on one scale: the longer
 * run's time and the higher top. Overlaid, the lines of two runs'
 * processes (whose pids differ) and their sites' shares would hide each
 * other; apart on one scale they still read against each other, a
 * height in A as much memory as the same height in B, a moment in A as
 * long after its start as the same place in B.
 */
static int diff_charts(FILE *out, struct mt_rep *side[2],
		       struct mt_rep_chart c[2])
{
	static const char *const id[2] = { "chartA", "chartB" };
	unsigned int k;
	int err = 0;

	mt_rep_chart_scale(side[0], &c[0]);
	mt_rep_chart_scale(side[1], &c[1]);
	for (k = 0; k < 2; k++) {
		c[k].span = c[0].span > c[1].span ? c[0].span : c[1].span;
		c[k].ymax = c[0].ymax > c[1].ymax ? c[0].ymax : c[1].ymax;
	}
	for (k = 0; k < 2 && !err; k++) {
		fprintf(out, "<h3 class=\"side\">%c: ", "AB"[k]);
		mt_rep_xml_str(out, side[k]->path);
		fprintf(out, "</h3>\n");
		err = mt_rep_svg_chart(out, side[k], id[k], &c[k]);
	}
	fprintf(out, "<p id=\"range\">drag across either chart to see what was live in both at the end of a time range, times from each recording's start; the end snaps to the end of its checkpoint (A: ");
	range_precision(out, side[0]);
	fprintf(out, "; B: ");
	range_precision(out, side[1]);
	fprintf(out, ")</p>\n");
	return err;
}

/*
 * report --diff A B --format html: the same views of the sites of both
 * (matched as the diff matches them, the process left out), drawn by B's
 * figures plus A's so that what went away still shows, each frame red
 * where it grew and blue where it shrank; both memory charts, and a time
 * range on either selects what was live at its end in both. The data is
 * the single page's with "diff": true, two charts (A's, its checkpoints
 * at col 13; B's, at 7) and each site's figures B's five, B's
 * checkpoints, then A's five and A's checkpoints; past HTML_SITES sites
 * the rest is one "(N other sites)".
 */
int mt_rep_html_diff(FILE *out, struct mt_rep *side[2],
		     const struct mt_rep_diff_site *ds, size_t n,
		     const uint32_t *const row_of[2],
		     const struct mt_report_opts *o)
{
	struct names names = { .seed = mt_map_seed() };
	struct mt_rep_frames f = { 0 };
	struct mt_rep_chart c[2];
	uint64_t tot[2][HTML_FIGURES] = { { 0 } }, rest[2][HTML_FIGURES] = { { 0 } };
	uint64_t *cp = NULL;
	int64_t ids[MT_REP_MAX_FRAMES];
	size_t i, j, nrest = 0, kept = n < HTML_SITES ? n : HTML_SITES;
	unsigned int k;
	int err = 0, nf;
	char label[64];

	page_begin(out, side[0]->path, "");
	fprintf(out, "<p>compared with <strong>");
	mt_rep_xml_str(out, side[1]->path);
	fprintf(out, "</strong> (B); figures are B's, with B - A beside them: <span class=\"grow\">red grew</span>, <span class=\"shrink\">blue shrank</span>. Sites are matched by their frames, the process left out.</p>\n");
	page_notes(out, side[0], "A: ");
	page_notes(out, side[1], "B: ");
	for (i = 0; i < n; i++) {
		for (k = 0; k < 2; k++) {
			for (j = 0; j < HTML_FIGURES; j++) {
				tot[k][j] = mt_rep_sat_add(tot[k][j], ds[i].v[k][j]);
				if (i >= kept) {
					rest[k][j] = mt_rep_sat_add(rest[k][j],
								    ds[i].v[k][j]);
				}
			}
		}
	}
	fprintf(out, "<table id=\"difftotal\">\n<tr><th></th>");
	for (j = 0; j < HTML_FIGURES; j++) {
		fprintf(out, "<th>%s</th>", figure_names[j]);
	}
	for (k = 0; k < 3; k++) {
		fprintf(out, "</tr>\n<tr><td>%s</td>", k == 0 ? "A" : k == 1 ? "B" : "B - A");
		for (j = 0; j < HTML_FIGURES; j++) {
			uint64_t a = tot[0][j], b = tot[1][j];

			if (k < 2) {
				if (j == 1 || j == 2) {
					td_count(out, tot[k][j]);
				} else {
					td_bytes(out, tot[k][j]);
				}
			} else {
				char h[32];
				uint64_t d = a > b ? a - b : b - a;

				if (j == 1 || j == 2) {
					mt_rep_human_count(d, h, sizeof(h));
				} else {
					mt_rep_human(d, h, sizeof(h));
				}
				fprintf(out, "<td class=\"%s\" title=\"%s%" PRIu64 "\">%s%s</td>",
					b > a ? "grow" : b < a ? "shrink" : "",
					b < a ? "-" : "+", d, b < a ? "-" : "+", h);
			}
		}
	}
	fprintf(out, "</tr>\n</table>\n<div id=\"main\">\n<div id=\"charts\">\n");
	err = diff_charts(out, side, c);
	cp = err ? NULL : diff_cp(side, row_of, kept);
	if (!cp) {
		return err ? err : -ENOMEM;
	}
	page_views(out, o, true);
	fprintf(out, "<script type=\"application/json\" id=\"mt-data\">\n{\"diff\":true,\"weight\":\"%s\",\"charts\":[",
		o->weight == MT_REPORT_COUNT ? "count" : "bytes");
	data_chart(out, side[0], "chartA", &c[0], 13);
	fprintf(out, ",");
	data_chart(out, side[1], "chartB", &c[1], 7);
	fprintf(out, "],\n\"sites\":[");
	for (i = 0; i <= kept && !err; i++) {
		struct mt_rep *r;
		struct side_figs b = { side[1], i < kept ? ds[i].v[1] : rest[1],
				       cp + (i * 2 + 1) * MT_REP_CP };
		struct side_figs a = { side[0], i < kept ? ds[i].v[0] : rest[0],
				       cp + i * 2 * MT_REP_CP };
		size_t at;

		if (i == kept) {
			/* the rows past kept, as one */
			nrest = n - kept;
			if (!nrest) {
				break;
			}
			snprintf(label, sizeof(label), "(%zu other sites)",
				 nrest);
			ids[0] = name_id(&names, label);
			if (ids[0] < 0) {
				err = (int)ids[0];
				break;
			}
			data_site(out, kept == 0, ids, 1, 0, &b, &a);
			break;
		}
		r = side[ds[i].side];
		nf = mt_rep_site_frames(r, &r->sites[ds[i].site], &f);
		if (nf < 0) {
			err = nf;
			break;
		}
		for (j = 1; j < f.n; j++) {
			ids[j - 1] = name_id(&names, f.name[j]);
			if (ids[j - 1] < 0) {
				err = (int)ids[j - 1];
				break;
			}
		}
		if (err) {
			break;
		}
		at = mt_rep_site_name(r, &f);
		data_site(out, i == 0, ids, f.n - 1, at ? at - 1 : 0, &b, &a);
	}
	names_write(out, &names);
	fprintf(out, "],\n\"left_out\":%zu}\n</script>\n</div>\n</div>\n", nrest);
	names_free(&names);
	mt_rep_frames_free(&f);
	free(cp);
	return err ? err : page_end(out);
}

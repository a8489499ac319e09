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

#include "report-model.h"

/* Figures are shown in human units; the exact value is in the title. */
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
	fprintf(out, "<td>%" PRIu64 "</td>", v);
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

/*
 * The top sites by the flamegraph's weight: each named by its frame
 * (mt_rep_site_name(): the innermost one not in an allocator or a
 * wrapper of it), the whole stack in its title; a click searches the
 * flamegraph for it.
 */
static int top_sites(FILE *out, struct mt_rep *r,
		     const struct mt_report_opts *o)
{
	struct mt_rep_frames f = { 0 };
	bool by_count = o->weight == MT_REPORT_COUNT;
	size_t idx[MT_REP_TOP], n, i;
	const char *stack;
	int nf, err = 0;

	n = mt_rep_top_sites(r, by_count ? MT_REP_BY_COUNT : MT_REP_BY_BYTES,
			     idx, MT_REP_TOP);
	fprintf(out, "<div id=\"sites\">\n<h2>Top sites by %s</h2>\n",
		by_count ? "allocations" : "bytes allocated");
	if (!n) {
		fprintf(out, "<p>(no allocation)</p>\n</div>\n");
		return 0;
	}
	fprintf(out, "<table>\n<tr><th>#</th><th>site (click: search)</th><th>allocated</th><th>allocations</th><th>at peak</th><th>leaked</th></tr>\n");
	for (i = 0; i < n; i++) {
		const struct mt_rep_site *s = &r->sites[idx[i]];

		nf = mt_rep_site_frames(r, s, &f);
		stack = nf < 0 ? NULL : mt_rep_frames_join(&f, 0);
		if (!stack) {
			err = -ENOMEM;
			break;
		}
		fprintf(out, "<tr><td>%zu</td><td class=\"site\" title=\"",
			i + 1);
		mt_rep_xml_str(out, stack);
		fprintf(out, "\">");
		mt_rep_xml_str(out, f.name[mt_rep_site_name(r, &f)]);
		fprintf(out, "</td>");
		td_bytes(out, s->bytes);
		td_count(out, s->count);
		td_bytes(out, s->at_peak);
		td_bytes(out, s->live);
		fprintf(out, "</tr>\n");
	}
	fprintf(out, "</table>\n</div>\n");
	mt_rep_frames_free(&f);
	return err;
}

static const char script[] =
#include "report-html.js.h"
	;

int mt_rep_html(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	int err;

	fprintf(out, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>memtrack report: ");
	mt_rep_xml_str(out, r->path);
	fprintf(out, "</title>\n<style>\n"
		"body { font-family: sans-serif; margin: 1em; }\n"
		"table { border-collapse: collapse; }\n"
		"td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }\n"
		"td.site { text-align: left; font-family: monospace; cursor: pointer; max-width: 30em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }\n"
		"#main { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }\n"
		"#controls { margin: 0.5em 0; }\n"
		"#info { height: 1.5em; font-family: monospace; }\n"
		"#flame g.f { cursor: pointer; }\n"
		"#flame g.anc rect { opacity: 0.5; }\n"
		"</style>\n</head>\n<body>\n<h1>memtrack report: ");
	mt_rep_xml_str(out, r->path);
	fprintf(out, "</h1>\n");
	if (r->damaged) {
		fprintf(out, "<p><strong>Damaged file: this covers the %" PRIu64 " events before the damage.</strong></p>\n",
			r->events);
	}
	if (mt_rep_saturated(r)) {
		fprintf(out, "<p><strong>Some figures reached %" PRIu64 " B and saturated there (&#x2265;): the sums are at least that.</strong></p>\n",
			UINT64_MAX);
	}
	if (r->damaged_meta) {
		fprintf(out, "<p><strong>Damaged metadata: %" PRIu64 " payload%s left out.</strong></p>\n",
			r->damaged_meta, r->damaged_meta == 1 ? "" : "s");
	}
	attach_note(out, r);
	summary(out, r);
	fprintf(out, "<div id=\"main\">\n<div id=\"charts\">\n"
		"<div id=\"controls\"><input type=\"search\" id=\"search\" placeholder=\"search frames\" size=\"30\"/> "
		"<button type=\"button\" id=\"reset\">reset zoom</button> "
		"<span id=\"match\"></span></div>\n"
		"<div id=\"info\">hover a frame for its figures, click it to zoom</div>\n");
	err = mt_rep_svg(out, r, o, true);
	if (err < 0) {
		return err;
	}
	fprintf(out, "</div>\n");
	err = top_sites(out, r, o);
	if (err < 0) {
		return err;
	}
	fprintf(out, "</div>\n<pre id=\"selftest\" hidden=\"hidden\"></pre>\n");
	/* apart from the main script, so that its syntax errors show too */
	fprintf(out, "<script>\nwindow.onerror = function (msg, src, line) {\n\tdocument.getElementById('selftest').textContent += 'error: ' + msg + ' (line ' + line + ')\\n';\n};\n</script>\n");
	fprintf(out, "<script>\n//<![CDATA[\n%s//]]>\n</script>\n</body>\n</html>\n",
		script);
	return ferror(out) ? -EIO : 0;
}

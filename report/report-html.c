/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format html: one self-contained page (inline style,
 * inline SVG, a few lines of inline script; nothing fetched) with the
 * summary table, the chart and the flamegraph of the svg format. Written
 * as XHTML-compatible markup so both HTML and XML parsers accept it; the
 * script holds no '<' or '&' for the same reason.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "report-model.h"

static void row(FILE *out, const char *name, const struct mt_rep_proc *p)
{
	fprintf(out, "<tr><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.3f</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n",
		name, p->allocs, p->frees, p->temporary, p->bytes_allocated,
		p->peak, (double)p->peak_ts / 1e6, p->live_blocks, p->live,
		p->peak_mapped);
}

int mt_rep_html(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	struct mt_rep_proc total;
	char name[32];
	size_t i;
	int err;

	fprintf(out, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>memtrack report: ");
	mt_rep_xml_str(out, r->path);
	fprintf(out, "</title>\n<style>\nbody { font-family: sans-serif; margin: 1em; }\ntable { border-collapse: collapse; }\ntd, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }\n#info { height: 1.5em; font-family: monospace; }\n</style>\n</head>\n<body>\n<h1>memtrack report: ");
	mt_rep_xml_str(out, r->path);
	fprintf(out, "</h1>\n");
	if (r->damaged) {
		fprintf(out, "<p><strong>Damaged file: this covers the %" PRIu64 " events before the damage.</strong></p>\n",
			r->events);
	}
	fprintf(out, "<table>\n<tr><th>process</th><th>allocations</th><th>frees</th><th>temporary</th><th>bytes allocated</th><th>peak heap (B)</th><th>peak at (ms)</th><th>leaked blocks</th><th>leaked bytes</th><th>peak mmap'd (B)</th></tr>\n");
	for (i = 0; i < r->nprocs; i++) {
		snprintf(name, sizeof(name), "pid %d", (int)r->procs[i].pid);
		row(out, name, &r->procs[i]);
	}
	mt_rep_total(r, &total);
	row(out, "total", &total);
	fprintf(out, "</table>\n<div id=\"info\">hover a frame for its figures</div>\n");
	err = mt_rep_svg(out, r, o, true);
	if (err < 0) {
		return err;
	}
	fprintf(out, "<script>\nvar info = document.getElementById('info');\ndocument.querySelectorAll('g.f').forEach(function (g) {\n\tg.addEventListener('mouseover', function () {\n\t\tinfo.textContent = g.querySelector('title').textContent;\n\t});\n});\n</script>\n</body>\n</html>\n");
	return ferror(out) ? -EIO : 0;
}

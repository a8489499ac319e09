/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --diff A B: what changed between two recordings, site by
 * site. Process ids and stack ids differ from one run to the next, so a
 * site here is its frames without the process (the size class, or the
 * symbolized call stack), summed over processes, and matched by its whole
 * frames: two C++ instantiations whose names differ only past their
 * first hundred bytes are two sites. The text prints a site as the text
 * report does, named past its wrappers with the callers that tell it
 * apart from every other row (report-stack-lines.c).
 *
 * A side recorded from an attach (memtrack --pid) is said to be: its
 * sites count only what was allocated after the attach. A sampled side
 * (memtrack --sample-bytes) is said to be, and a diff of a sampled side
 * with an unsampled one says that it compares estimates with exact
 * figures.
 *
 * Sums saturate at 2^64 - 1 (mt_rep_sat_add()); a delta is exact, its
 * sign apart from its size, so that no difference of two such figures
 * wraps.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-map.h"
#include "report-model.h"

struct drow {
	/* the frames after the process, escaped and joined (whole: the key
	 * they are matched by) */
	char *label;
	/* where the frames come from, for the json's names */
	unsigned int side;
	size_t site;
	uint32_t made; /* the row's place before the sort */
	uint64_t count[2], bytes[2];
	uint64_t temporary[2], at_peak[2], leaked[2]; /* for the html */
};

static uint64_t mag(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* "+12", "-12", "+0" (text) or "12", "-12", "0" (json) */
static const char *delta(uint64_t a, uint64_t b, bool plus, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%s%" PRIu64, b < a ? "-" : plus ? "+" : "",
		 mag(a, b));
	return buf;
}

static int cmp_row(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;
	uint64_t da = mag(a->bytes[0], a->bytes[1]);
	uint64_t db = mag(b->bytes[0], b->bytes[1]);
	uint64_t ca = mag(a->count[0], a->count[1]);
	uint64_t cb = mag(b->count[0], b->count[1]);

	if (da != db) {
		return da > db ? -1 : 1;
	}
	if (ca != cb) {
		return ca > cb ? -1 : 1;
	}
	return strcmp(a->label, b->label);
}

/* The row of label, new (from site i of side k) when none has it yet;
 * -ENOMEM. */
static int64_t row_of(struct drow **rows, size_t *nrows, size_t *cap,
		      struct mt_idx_map *idx, uint64_t seed, const char *lab,
		      unsigned int k, size_t i)
{
	uint64_t key;
	int64_t at;
	struct drow *d;

	for (key = mt_map_str_hash(seed, lab, strlen(lab));
	     (at = mt_idx_get(idx, key)) >= 0; key++) {
		if (!strcmp((*rows)[at].label, lab)) {
			return at;
		}
	}
	if (*nrows == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;

		d = realloc(*rows, nc * sizeof(*d));
		if (!d) {
			return -ENOMEM;
		}
		*rows = d;
		*cap = nc;
	}
	d = &(*rows)[*nrows];
	memset(d, 0, sizeof(*d));
	d->label = strdup(lab);
	d->side = k;
	d->site = i;
	d->made = (uint32_t)*nrows;
	if (!d->label || mt_idx_put(idx, key, (uint32_t)*nrows) < 0) {
		free(d->label);
		return -ENOMEM;
	}
	return (int64_t)(*nrows)++;
}

static int json_row(FILE *out, struct mt_rep *side[2], const struct drow *d,
		    struct mt_rep_frames *f)
{
	struct mt_rep *r = side[d->side];
	char dc[24], db[24];
	int n = mt_rep_site_frames(r, &r->sites[d->site], f), i;
	size_t at;

	if (n < 0) {
		return n;
	}
	/* the report's shape: one string per frame, the process left out
	 * (a diff site is summed over processes, so it has no "pid") */
	fprintf(out, "{\"frames\":[");
	for (i = 1; i < n; i++) {
		if (i > 1) {
			fputc(',', out);
		}
		mt_rep_json_str(out, f->name[i]);
	}
	/* named as the report names it; a stack without a frame has only
	 * the process, which is no name for a site of both recordings */
	fprintf(out, "],\"name\":");
	at = mt_rep_site_name(r, f);
	if (at) {
		mt_rep_json_str(out, f->name[at]);
	} else {
		fprintf(out, "null");
	}
	fprintf(out, ",\"count_a\":%" PRIu64 ",\"count_b\":%" PRIu64 ",\"count_delta\":%s,\"bytes_a\":%" PRIu64 ",\"bytes_b\":%" PRIu64 ",\"bytes_delta\":%s}",
		d->count[0], d->count[1],
		delta(d->count[0], d->count[1], false, dc, sizeof(dc)),
		d->bytes[0], d->bytes[1],
		delta(d->bytes[0], d->bytes[1], false, db, sizeof(db)));
	return 0;
}

/* memtrack --pid: what a side's figures leave out */
static void attach_line(FILE *out, char name, const struct mt_rep *r)
{
	size_t i, n = 0;

	fprintf(out, "%c: recorded from an attach on (pid", name);
	for (i = 0; i < r->nprocs; i++) {
		if (r->procs[i].attached) {
			fprintf(out, "%s %d", n++ ? "," : "",
				(int)r->procs[i].pid);
		}
	}
	fprintf(out, "): what %s allocated before it is not counted\n",
		n == 1 ? "it" : "they");
}

/* memtrack --sample-bytes: a side's figures are estimates */
static void sample_lines(FILE *out, struct mt_rep *side[2])
{
	unsigned int k;

	for (k = 0; k < 2; k++) {
		if (side[k]->sample_bytes) {
			fprintf(out, "%c: sampled, one allocation per %" PRIu64 " B on average: its figures are estimates\n",
				"AB"[k], side[k]->sample_bytes);
		}
	}
	if (!side[0]->sample_bytes != !side[1]->sample_bytes) {
		fprintf(out, "%c is sampled and %c is not: the deltas compare estimates with exact figures\n",
			side[0]->sample_bytes ? 'A' : 'B',
			side[0]->sample_bytes ? 'B' : 'A');
	}
}

static void json_sampled(FILE *out, const char *key, const struct mt_rep *r)
{
	fprintf(out, ",\"%s\":", key);
	if (!r->sample_bytes) {
		fprintf(out, "null");
		return;
	}
	fprintf(out, "{\"mean_bytes\":%" PRIu64 ",\"seed\":", r->sample_bytes);
	if (r->sample_has_seed) {
		fprintf(out, "%" PRIu64 "}", r->sample_seed);
	} else {
		fprintf(out, "null}");
	}
}

/* The figures of a row, then its name (NULL: the caller writes it). */
static void text_row(FILE *out, const uint64_t bytes[2],
		     const uint64_t count[2], const char *name)
{
	char dc[24], db[24];

	fprintf(out, "%14" PRIu64 " %14" PRIu64 " %15s %10" PRIu64 " %10" PRIu64 " %11s  %s",
		bytes[0], bytes[1],
		delta(bytes[0], bytes[1], true, db, sizeof(db)), count[0],
		count[1], delta(count[0], count[1], true, dc, sizeof(dc)),
		name ? name : "");
	if (name) {
		fputc('\n', out);
	}
}

/*
 * The rows as the text report prints its sites: the naming frame, then
 * the callers that tell the row apart from every other row, one a line,
 * innermost first (report-stack-lines.c). A row is summed over
 * processes: no "in".
 */
static int text_rows(FILE *out, struct mt_rep *side[2], const struct drow *rows,
		     size_t nrows, const struct mt_report_opts *o,
		     struct mt_rep_frames *f)
{
	struct mt_rep_apart apart = { 0 };
	size_t i, at;
	int err = 0;

	/* --stack-lines N: no need to know what tells the rows apart */
	for (i = 0; o->stack_lines < 0 && i < nrows; i++) {
		struct mt_rep *r = side[rows[i].side];

		if (mt_rep_site_frames(r, &r->sites[rows[i].site], f) < 0) {
			err = -ENOMEM;
			goto end;
		}
		/* out of memory: each shows the least callers */
		if (mt_rep_apart_add(&apart, f, mt_rep_site_name(r, f),
				     false) < 0) {
			break;
		}
	}
	if (o->stack_lines < 0) {
		mt_rep_apart_done(&apart);
	}
	for (i = 0; i < nrows; i++) {
		struct mt_rep *r = side[rows[i].side];

		if (mt_rep_site_frames(r, &r->sites[rows[i].site], f) < 0) {
			err = -ENOMEM;
			goto end;
		}
		at = mt_rep_site_name(r, f);
		text_row(out, rows[i].bytes, rows[i].count, NULL);
		/* a stack without a frame: only the process, which a
		 * diff leaves out */
		if (at) {
			mt_rep_line_str(out, f->name[at]);
		} else {
			fprintf(out, "(no frame)");
		}
		fputc('\n', out);
		mt_rep_stack_lines(f, at,
				   mt_rep_apart_callers(&apart, i,
							o->stack_lines),
				   o->stack_lines, false, mt_rep_text_line, out);
	}
end:
	mt_rep_apart_free(&apart);
	return err;
}

/* The rows as the html format takes them (report-html.c); site_row[k][i]:
 * the row site i of side[k] was summed into, by its place before the
 * sort (the sorted one once this returns). */
static int html(FILE *out, struct mt_rep *side[2], const struct drow *rows,
		size_t nrows, uint32_t *const site_row[2],
		const struct mt_report_opts *o)
{
	struct mt_rep_diff_site *ds = calloc(nrows + 1, sizeof(*ds));
	uint32_t *sorted = calloc(nrows + 1, sizeof(*sorted));
	const uint32_t *const by_site[2] = { site_row[0], site_row[1] };
	size_t i;
	int err;
	unsigned int k;

	if (!ds || !sorted) {
		free(ds);
		free(sorted);
		return -ENOMEM;
	}
	for (i = 0; i < nrows; i++) {
		sorted[rows[i].made] = (uint32_t)i;
	}
	for (k = 0; k < 2; k++) {
		for (i = 0; i < side[k]->nsites; i++) {
			site_row[k][i] = sorted[site_row[k][i]];
		}
	}
	free(sorted);
	for (i = 0; i < nrows; i++) {
		ds[i].side = rows[i].side;
		ds[i].site = rows[i].site;
		for (k = 0; k < 2; k++) {
			ds[i].v[k][0] = rows[i].bytes[k];
			ds[i].v[k][1] = rows[i].count[k];
			ds[i].v[k][2] = rows[i].temporary[k];
			ds[i].v[k][3] = rows[i].at_peak[k];
			ds[i].v[k][4] = rows[i].leaked[k];
		}
	}
	err = mt_rep_html_diff(out, side, ds, nrows, by_site, o);
	free(ds);
	return err;
}

int mt_rep_diff(FILE *out, struct mt_rep *a, struct mt_rep *b,
		const struct mt_report_opts *o)
{
	struct mt_rep *side[2] = { a, b };
	struct mt_rep_frames f = { 0 };
	struct drow *rows = NULL;
	struct mt_idx_map idx = { 0 }; /* label: row */
	uint64_t seed = mt_map_seed();
	size_t nrows = 0, cap = 0, i;
	uint64_t tc[2] = { 0 }, tb[2] = { 0 };
	uint32_t *site_row[2] = { NULL, NULL }; /* html: each site's row */
	bool json = o->format == MT_REPORT_JSON;
	unsigned int k;
	int err;

	for (k = 0; o->format == MT_REPORT_HTML && k < 2; k++) {
		site_row[k] = calloc(side[k]->nsites + 1, sizeof(*site_row[k]));
		if (!site_row[k]) {
			goto nomem;
		}
	}
	for (k = 0; k < 2; k++) {
		for (i = 0; i < side[k]->nsites; i++) {
			const struct mt_rep_site *s = &side[k]->sites[i];
			const char *lab;
			struct drow *d;
			int64_t at;

			if (mt_rep_site_frames(side[k], s, &f) < 0 ||
			    !(lab = mt_rep_frames_join(&f, 1))) {
				goto nomem;
			}
			at = row_of(&rows, &nrows, &cap, &idx, seed, lab, k,
				    i);
			if (at < 0) {
				goto nomem;
			}
			if (site_row[k]) {
				site_row[k][i] = (uint32_t)at;
			}
			d = &rows[at];
			d->count[k] = mt_rep_sat_add(d->count[k], s->count);
			d->bytes[k] = mt_rep_sat_add(d->bytes[k], s->bytes);
			d->temporary[k] = mt_rep_sat_add(d->temporary[k],
							 s->temporary);
			d->at_peak[k] = mt_rep_sat_add(d->at_peak[k],
						       s->at_peak);
			d->leaked[k] = mt_rep_sat_add(d->leaked[k], s->live);
			tc[k] = mt_rep_sat_add(tc[k], s->count);
			tb[k] = mt_rep_sat_add(tb[k], s->bytes);
		}
	}
	if (nrows) {
		qsort(rows, nrows, sizeof(*rows), cmp_row);
	}
	if (o->format == MT_REPORT_HTML) {
		err = html(out, side, rows, nrows, site_row, o);
		goto end;
	}
	if (json) {
		char dc[24], db[24];

		fprintf(out, "{\"a\":");
		mt_rep_json_str(out, a->path);
		fprintf(out, ",\"b\":");
		mt_rep_json_str(out, b->path);
		fprintf(out, ",\"damaged\":%s,\"damaged_a\":%s,\"damaged_b\":%s",
			a->damaged || b->damaged ? "true" : "false",
			a->damaged ? "true" : "false",
			b->damaged ? "true" : "false");
		fprintf(out, ",\"attached\":%s,\"attached_a\":%s,\"attached_b\":%s",
			a->nattached || b->nattached ? "true" : "false",
			a->nattached ? "true" : "false",
			b->nattached ? "true" : "false");
		/* only when a side is sampled: as it was otherwise */
		if (a->sample_bytes || b->sample_bytes) {
			fprintf(out, ",\"sampled\":true");
			json_sampled(out, "sampled_a", a);
			json_sampled(out, "sampled_b", b);
			fprintf(out, ",\"estimates_vs_exact\":%s",
				!a->sample_bytes != !b->sample_bytes ? "true" :
								     "false");
		}
		fprintf(out, ",\"saturated\":%s",
			tb[0] == UINT64_MAX || tb[1] == UINT64_MAX ? "true" :
								     "false");
		fprintf(out, ",\"total\":{\"count_a\":%" PRIu64 ",\"count_b\":%" PRIu64 ",\"count_delta\":%s,\"bytes_a\":%" PRIu64 ",\"bytes_b\":%" PRIu64 ",\"bytes_delta\":%s},\"sites\":[",
			tc[0], tc[1], delta(tc[0], tc[1], false, dc, sizeof(dc)),
			tb[0], tb[1], delta(tb[0], tb[1], false, db, sizeof(db)));
	} else {
		fprintf(out, "diff %s -> %s (B - A, sites by |bytes delta|)\n",
			a->path, b->path);
		for (k = 0; k < 2; k++) {
			if (side[k]->damaged) {
				fprintf(out, "%c: damaged file, the %" PRIu64 " events before the damage\n",
					"AB"[k], side[k]->events);
			}
			if (side[k]->nattached) {
				attach_line(out, "AB"[k], side[k]);
			}
		}
		sample_lines(out, side);
		if (tb[0] == UINT64_MAX || tb[1] == UINT64_MAX) {
			fprintf(out, "%" PRIu64 " B: saturated, at least that many\n",
				UINT64_MAX);
		}
		fprintf(out, "%14s %14s %15s %10s %10s %11s  %s\n", "bytes A",
			"bytes B", "bytes delta", "count A", "count B",
			"count delta", "site");
	}
	for (i = 0; json && i < nrows; i++) {
		if (i) {
			fputc(',', out);
		}
		if (json_row(out, side, &rows[i], &f) < 0) {
			goto nomem;
		}
	}
	if (!json && text_rows(out, side, rows, nrows, o, &f) < 0) {
		goto nomem;
	}
	if (json) {
		fprintf(out, "]}\n");
	} else {
		text_row(out, tb, tc, "total");
	}
	err = ferror(out) ? -EIO : 0;
end:
	for (i = 0; i < nrows; i++) {
		free(rows[i].label);
	}
	free(rows);
	free(site_row[0]);
	free(site_row[1]);
	free(idx.slots);
	mt_rep_frames_free(&f);
	return err;
nomem:
	err = -ENOMEM;
	goto end;
}

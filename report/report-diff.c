/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --diff A B: what changed between two recordings, site by
 * site. Process ids and stack ids differ from one run to the next, so a
 * site here is its frames without the process (the size class, or the
 * symbolized call stack), summed over processes, and matched by name.
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
	char *label;
	uint64_t count[2], bytes[2];
};

static int64_t delta(uint64_t a, uint64_t b)
{
	return (int64_t)(b - a);
}

static uint64_t mag(int64_t d)
{
	return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
}

static int cmp_row(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;
	uint64_t da = mag(delta(a->bytes[0], a->bytes[1]));
	uint64_t db = mag(delta(b->bytes[0], b->bytes[1]));
	uint64_t ca = mag(delta(a->count[0], a->count[1]));
	uint64_t cb = mag(delta(b->count[0], b->count[1]));

	if (da != db) {
		return da > db ? -1 : 1;
	}
	if (ca != cb) {
		return ca > cb ? -1 : 1;
	}
	return strcmp(a->label, b->label);
}

/* The label of a diff site: the site's frames after the process one. */
static void label(const struct mt_rep *r, const struct mt_rep_site *s,
		  char *buf, size_t len)
{
	char names[MT_REP_MAX_FRAMES][MT_REP_FRAME_LEN];
	size_t n = mt_rep_site_frames(r, s, names, MT_REP_MAX_FRAMES), i;
	size_t at = 0;

	buf[0] = '\0';
	for (i = 1; i < n && at + 1 < len; i++) {
		if (i > 1) {
			buf[at++] = ';';
		}
		/* a ';' or a newline in a name must not split it */
		at += mt_rep_frame_esc(buf + at, len - at, names[i]);
	}
	buf[at < len ? at : len - 1] = '\0';
}

int mt_rep_diff(FILE *out, struct mt_rep *a, struct mt_rep *b,
		const struct mt_report_opts *o)
{
	struct mt_rep *side[2] = { a, b };
	struct drow *rows = NULL;
	struct mt_idx_map idx = { 0 }; /* label: row */
	uint64_t seed = mt_map_seed();
	size_t nrows = 0, cap = 0, i, k;
	uint64_t tc[2] = { 0 }, tb[2] = { 0 };
	char lab[4096];
	bool json = o->format == MT_REPORT_JSON;
	int err;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < side[k]->nsites; i++) {
			const struct mt_rep_site *s = &side[k]->sites[i];
			uint64_t key;
			int64_t at;
			size_t j = nrows;

			label(side[k], s, lab, sizeof(lab));
			for (key = mt_map_str_hash(seed, lab, strlen(lab));
			     (at = mt_idx_get(&idx, key)) >= 0; key++) {
				if (!strcmp(rows[at].label, lab)) {
					j = (size_t)at;
					break;
				}
			}
			if (j == nrows) {
				if (nrows == cap) {
					struct drow *nr;

					cap = cap ? cap * 2 : 64;
					nr = realloc(rows, cap * sizeof(*nr));
					if (!nr) {
						goto nomem;
					}
					rows = nr;
				}
				memset(&rows[nrows], 0, sizeof(rows[0]));
				rows[nrows].label = strdup(lab);
				if (!rows[nrows].label ||
				    mt_idx_put(&idx, key, (uint32_t)nrows) < 0) {
					free(rows[nrows].label);
					goto nomem;
				}
				nrows++;
			}
			rows[j].count[k] += s->count;
			rows[j].bytes[k] += s->bytes;
			tc[k] += s->count;
			tb[k] += s->bytes;
		}
	}
	if (nrows) {
		qsort(rows, nrows, sizeof(*rows), cmp_row);
	}
	if (json) {
		fprintf(out, "{\"a\":");
		mt_rep_json_str(out, a->path);
		fprintf(out, ",\"b\":");
		mt_rep_json_str(out, b->path);
		fprintf(out, ",\"total\":{\"count_a\":%" PRIu64 ",\"count_b\":%" PRIu64 ",\"count_delta\":%" PRId64 ",\"bytes_a\":%" PRIu64 ",\"bytes_b\":%" PRIu64 ",\"bytes_delta\":%" PRId64 "},\"sites\":[",
			tc[0], tc[1], delta(tc[0], tc[1]), tb[0], tb[1],
			delta(tb[0], tb[1]));
	} else {
		fprintf(out, "diff %s -> %s (B - A, sites by |bytes delta|)\n",
			a->path, b->path);
		fprintf(out, "%14s %14s %15s %10s %10s %11s  %s\n", "bytes A",
			"bytes B", "bytes delta", "count A", "count B",
			"count delta", "site");
	}
	for (i = 0; i < nrows; i++) {
		const struct drow *d = &rows[i];
		const char *name = d->label;
		if (json) {
			fprintf(out, "%s{\"frames\":", i ? "," : "");
			fputc('[', out);
			mt_rep_json_str(out, name);
			fprintf(out, "],\"count_a\":%" PRIu64 ",\"count_b\":%" PRIu64 ",\"count_delta\":%" PRId64 ",\"bytes_a\":%" PRIu64 ",\"bytes_b\":%" PRIu64 ",\"bytes_delta\":%" PRId64 "}",
				d->count[0], d->count[1],
				delta(d->count[0], d->count[1]), d->bytes[0],
				d->bytes[1], delta(d->bytes[0], d->bytes[1]));
		} else {
			fprintf(out, "%14" PRIu64 " %14" PRIu64 " %+15" PRId64 " %10" PRIu64 " %10" PRIu64 " %+11" PRId64 "  %s\n",
				d->bytes[0], d->bytes[1],
				delta(d->bytes[0], d->bytes[1]), d->count[0],
				d->count[1], delta(d->count[0], d->count[1]),
				name);
		}
	}
	if (json) {
		fprintf(out, "]}\n");
	} else {
		fprintf(out, "%14" PRIu64 " %14" PRIu64 " %+15" PRId64 " %10" PRIu64 " %10" PRIu64 " %+11" PRId64 "  total\n",
			tb[0], tb[1], delta(tb[0], tb[1]), tc[0], tc[1],
			delta(tc[0], tc[1]));
	}
	err = ferror(out) ? -EIO : 0;
end:
	for (i = 0; i < nrows; i++) {
		free(rows[i].label);
	}
	free(rows);
	free(idx.slots);
	return err;
nomem:
	err = -ENOMEM;
	goto end;
}

/* SPDX-License-Identifier: MIT */
/*
 * The attach marks (see report-attach.h). The payload, as
 * plugins/ebpf/stacks.c writes it (little-endian):
 *
 *   "MTKA", u32 version (1), u32 records, u32 FNV-1a-32 of the records,
 *   then per record: u32 pid, u32 flags (0), u64 ts (CLOCK_MONOTONIC ns)
 *
 * The recorder marks ("MTKW", --source auto) have the same layout, with
 * u32 who (1: uprobes, 2: the interposer) for flags and the time the
 * process ended for ts.
 *
 * A recording is input, not trust: a payload whose length, count or
 * checksum disagree is left out whole, so that a damaged mark never turns
 * a process's unmatched frees into "allocated before the attach".
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "log.h"
#include "report-attach.h"
#include "report-model.h"

#define HDR 16
#define REC 16

uint32_t mt_rep_fnv1a(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint32_t h = 2166136261u;

	while (n--) {
		h = (h ^ *p++) * 16777619u;
	}
	return h;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int mt_rep_marks_meta(struct mt_rep_marks *k, const void *data, size_t len,
		      const char *name)
{
	const unsigned char *p = data;
	size_t n, i;
	void *grown;

	if (len < HDR || rd32(p + 4) != 1 || (len - HDR) % REC ||
	    rd32(p + 8) != (len - HDR) / REC ||
	    rd32(p + 12) != mt_rep_fnv1a(p + HDR, len - HDR)) {
		k->damaged++;
		if (!k->warned) {
			mt_warn(k->recorders ?
					"%s: damaged recorder metadata ignored: processes it names show no recorder" :
					"%s: damaged attach metadata ignored: frees of blocks allocated before an attach show as unmatched",
				name);
			k->warned = true;
		}
		return 0;
	}
	n = (len - HDR) / REC;
	grown = mt_array_grow(k->m, &k->cap, k->n + n, sizeof(*k->m));
	if (!grown) {
		return -ENOMEM;
	}
	k->m = grown;
	for (i = 0; i < n; i++) {
		struct mt_rep_mark *m = &k->m[k->n];

		m->pid = (int32_t)rd32(p + HDR + REC * i);
		m->flags = rd32(p + HDR + REC * i + 4);
		memcpy(&m->ts, p + HDR + REC * i + 8, 8);
		m->order = k->n++;
	}
	return 0;
}

static int cmp_mark(const void *x, const void *y)
{
	const struct mt_rep_mark *a = x, *b = y;

	if (a->pid != b->pid) {
		return a->pid < b->pid ? -1 : 1;
	}
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The first mark of pid in the sorted marks, NULL when none. */
static const struct mt_rep_mark *find(const struct mt_rep_marks *k,
				      int32_t pid)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->m[mid].pid < pid) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo < k->n && k->m[lo].pid == pid ? &k->m[lo] : NULL;
}

/* ts - t0, within int64_t: a mark is input and may be anywhere */
static int64_t since(uint64_t ts, uint64_t t0)
{
	if (ts >= t0) {
		return ts - t0 > (uint64_t)INT64_MAX ? INT64_MAX :
						       (int64_t)(ts - t0);
	}
	return t0 - ts > (uint64_t)INT64_MAX ? INT64_MIN :
					       -(int64_t)(t0 - ts);
}

void mt_rep_marks_apply(struct mt_rep_marks *k, struct mt_rep *r)
{
	size_t i;

	if (!k->n) {
		return;
	}
	qsort(k->m, k->n, sizeof(*k->m), cmp_mark);
	for (i = 0; i < r->nprocs; i++) {
		struct mt_rep_proc *p = &r->procs[i];
		const struct mt_rep_mark *m = find(k, p->pid);

		if (!m || p->attached) {
			continue;
		}
		p->attached = true;
		p->attached_ts = since(m->ts, r->t0);
		/* nothing the recording lacks was allocated after the
		 * attach: every block it frees unseen is from before */
		p->frees_before_attach = p->unmatched_frees;
		p->unmatched_frees = 0;
		r->nattached++;
	}
	mt_rep_marks_free(k);
}

void mt_rep_marks_free(struct mt_rep_marks *k)
{
	free(k->m);
	k->m = NULL;
	k->n = k->cap = 0;
}

void mt_rep_recorders_apply(struct mt_rep_marks *k, struct mt_rep *r)
{
	size_t i;

	if (!k->n) {
		return;
	}
	qsort(k->m, k->n, sizeof(*k->m), cmp_mark);
	for (i = 0; i < r->nprocs; i++) {
		struct mt_rep_proc *p = &r->procs[i];
		const struct mt_rep_mark *m = find(k, p->pid);

		/* the last of its pid: the image it ended with */
		while (m && m + 1 < k->m + k->n && m[1].pid == p->pid) {
			m++;
		}
		if (m && (m->flags == MT_REP_REC_UPROBES ||
			  m->flags == MT_REP_REC_INTERPOSER)) {
			p->recorder = (uint8_t)m->flags;
		}
	}
	mt_rep_marks_free(k);
}

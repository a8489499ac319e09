/* SPDX-License-Identifier: MIT */
/*
 * The attach marks of a recording ("MTKA", memtrack --pid): which
 * processes were recorded from a moment on rather than from their start,
 * and when. report.c keeps them apart from the analysis while the file is
 * read (they come on the decoder's thread, report-pipe.c) and applies
 * them to the model once, in mt_rep_finish().
 */
#ifndef MT_REPORT_REPORT_ATTACH_H
#define MT_REPORT_REPORT_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_rep;

struct mt_rep_mark {
	int32_t pid;
	uint32_t flags; /* MTKW: who recorded the process (MT_REP_REC_*) */
	uint64_t ts;  /* CLOCK_MONOTONIC ns, the events' clock */
	size_t order; /* in the file: the first mark of a pid holds */
};

struct mt_rep_marks {
	struct mt_rep_mark *m;
	size_t n, cap;
	uint64_t damaged; /* payloads left out */
	bool warned;
	bool recorders; /* "MTKW" payloads, not "MTKA" */
};

/*
 * An "MTKA" payload (tag included), checked whole: header, version,
 * checksum and a record count that matches its length exactly. A payload
 * that fails any of it is left out (counted, a warning naming `name`
 * once): none of its marks is used. Returns 0 or -ENOMEM.
 */
int mt_rep_marks_meta(struct mt_rep_marks *k, const void *data, size_t len,
		      const char *name);

/*
 * Marks the processes of r that have a mark (a mark for a process without
 * an event changes nothing): their frees of blocks the recording does not
 * hold are frees of blocks allocated before the attach, not unmatched
 * ones. Needs r->t0. Empties k of its marks (not of its count of damaged
 * payloads); a second call does nothing.
 */
void mt_rep_marks_apply(struct mt_rep_marks *k, struct mt_rep *r);

void mt_rep_marks_free(struct mt_rep_marks *k);

/*
 * The recorder marks of a recording ("MTKW", --source auto: one per
 * process as it ended, with who recorded its allocator calls), read by
 * mt_rep_marks_meta() into a struct whose `recorders` is true. Sets each
 * process's `recorder` from the last mark of its pid, then empties k.
 */
void mt_rep_recorders_apply(struct mt_rep_marks *k, struct mt_rep *r);

/* The checksum of the records of an MTKA, MTKT, MTKM or MTKR payload. */
uint32_t mt_rep_fnv1a(const void *data, size_t len);

#endif /* MT_REPORT_REPORT_ATTACH_H */

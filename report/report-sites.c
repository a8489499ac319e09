/* SPDX-License-Identifier: MIT */
/*
 * A site is what its stack names, not the stack's addresses: the calls
 * of one source line seen from several return addresses (an unrolled
 * loop, a function inlined twice) show the same frames and are one site
 * in every output. The analysis (report.c) keys sites by (process,
 * stack id), which costs one lookup per event; once it is done the sites
 * whose stacks symbolize alike (mt_sym_canon()) are merged here. Every
 * figure of a site is a sum over its allocations, at_peak included (all
 * are taken at the one moment of the global peak), so merging adds them
 * (saturated, as everywhere: report-model.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "report-map.h"
#include "report-model.h"
#include "symbolize.h"

int mt_rep_merge_sites(struct mt_rep *r)
{
	struct mt_idx_map idx = { 0 };
	size_t i, n = 0;
	int err = 0;

	if (!r->sym || r->sites_merged) {
		return 0;
	}
	r->sites_merged = true;
	for (i = 0; i < r->nsites; i++) {
		struct mt_rep_site s = r->sites[i];
		uint64_t key;
		int64_t at;

		if (s.id & MT_REP_STACK_SITE) {
			s.id = MT_REP_STACK_SITE |
			       mt_sym_canon(r->sym, s.id & ~MT_REP_STACK_SITE);
		}
		key = (uint64_t)(uint32_t)s.pid << 32 | s.id;
		at = mt_idx_get(&idx, key);
		if (at < 0) {
			if (mt_idx_put(&idx, key, (uint32_t)n) < 0) {
				err = -ENOMEM;
				/* the rest stay as they are */
				for (; i < r->nsites; i++) {
					r->sites[n++] = r->sites[i];
				}
				break;
			}
			r->sites[n++] = s;
			continue;
		}
		r->sites[at].count += s.count;
		r->sites[at].bytes = mt_rep_sat_add(r->sites[at].bytes,
						    s.bytes);
		r->sites[at].temporary += s.temporary;
		r->sites[at].lv_live += s.lv_live;
		r->sites[at].live = mt_rep_sat_add(r->sites[at].live, s.live);
		r->sites[at].live_blocks += s.live_blocks;
		r->sites[at].at_peak = mt_rep_sat_add(r->sites[at].at_peak,
						      s.at_peak);
		r->sites[at].at_peak_blocks += s.at_peak_blocks;
		/* both are complete up to cp_n (mt_rep_finish()) */
		if (s.cp && r->sites[at].cp) {
			size_t k;

			for (k = 0; k < r->cp_n; k++) {
				r->sites[at].cp[k] = mt_rep_sat_add(
					r->sites[at].cp[k], s.cp[k]);
			}
		}
		free(s.cp);
	}
	r->nsites = n;
	/* mt_rep_finish() may run again: have it find the merged figures */
	for (i = 0; i < n; i++) {
		r->sites[i].lv_snap = r->sites[i].at_peak;
		r->sites[i].snap_blocks = r->sites[i].at_peak_blocks;
		r->sites[i].gen = r->peak_gen;
	}
	free(idx.slots);
	return err;
}

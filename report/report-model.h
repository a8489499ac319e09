/* SPDX-License-Identifier: MIT */
/*
 * What 'memtrack report' knows about a recording once it has read it: the
 * model shared by the analysis (report.c) and the output formats
 * (report-text.c, report-json.c, report-flame.c, report-svg.c, ...).
 *
 * A "site" is where allocations come from. Without call stacks it is
 * (process, power-of-two size class); when stacks arrive (MT_EVF_STACK) the
 * id becomes the stack id and mt_rep_site_frames() the stack's frames:
 * everything downstream (top lists, collapsed, flamegraph, diff) only sees
 * sites and their frames.
 */
#ifndef MT_REPORT_REPORT_MODEL_H
#define MT_REPORT_REPORT_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <memtrack/event.h>

#include "report.h"

#define MT_REP_TOP 10       /* entries of every top list */
#define MT_REP_CLASSES 65   /* size 0, then [2^(k-1), 2^k - 1] for k=1..64 */
#define MT_REP_SERIES 1024  /* timeline buckets kept per process */
#define MT_REP_MAX_FRAMES 129 /* the process, then up to 127 + 1 frames */
/* mt_rep_site.id of a site that is a call stack (the id is the stack's) */
#define MT_REP_STACK_SITE (1u << 31)
/* Checkpoints of the html report's time selection: every site's live
 * bytes at the end of each of at most this many equal spans of the run */
#define MT_REP_CP 64

/* A level (bytes live, mapped) while the analysis runs: exact, since a
 * sum of sizes up to 2^64 - 1 each may pass 2^64 and then fall back under
 * it as blocks are freed. mt_rep_finish() sets the 64-bit figures from
 * the levels, saturated. */
__extension__ typedef unsigned __int128 mt_rep_level;

/* One allocation among the largest. */
struct mt_rep_big {
	uint64_t size;
	uint64_t ts; /* relative to the first event, ns */
	int32_t pid, tid;
	uint8_t kind;
};

/* Timeline bucket: the highest values seen during the bucket, so that a
 * downsampled chart still shows every peak. */
struct mt_rep_sample {
	uint64_t heap;
	uint64_t mapped;
};

struct mt_rep_series {
	struct mt_rep_sample *s; /* MT_REP_SERIES buckets */
	size_t n;                /* buckets in use */
	uint64_t step;           /* ns per bucket, a power of two */
	unsigned int shift;      /* log2(step) */
	struct mt_rep_sample level; /* after the latest event */
	size_t cap;              /* buckets allocated, grown as needed */
	bool left_out;           /* over the budget: not in the charts */
};

/* mt_rep_proc.recorder: the values of MTKW records */
#define MT_REP_REC_UPROBES 1u
#define MT_REP_REC_INTERPOSER 2u

struct mt_rep_proc {
	int32_t pid;
	uint64_t events;
	uint64_t by_kind[MT_EV_KIND_COUNT];
	uint64_t allocs, frees, unmatched_frees, temporary;
	uint64_t bytes_allocated, bytes_freed;
	uint64_t live, live_blocks, peak, peak_ts;
	uint64_t mapped, peak_mapped, peak_mapped_ts;
	uint64_t bytes_mmapped, bytes_munmapped;
	uint64_t brk_first, brk_last, brk_max;
	bool has_brk;
	uint64_t first_ts, last_ts; /* relative to the first event, ns */
	/* memtrack --pid: recorded from attached_ts on (relative to the
	 * first event, so mostly a little below 0); its frees of blocks the
	 * recording does not hold are frees_before_attach, not unmatched */
	bool attached;
	int64_t attached_ts;
	uint64_t frees_before_attach;
	/* --source auto: who recorded its allocator calls (MT_REP_REC_*,
	 * 0: the recording does not say) */
	uint8_t recorder;
	struct mt_rep_series series;
	/* live, peak, mapped, peak_mapped, exact */
	mt_rep_level lv_live, lv_peak, lv_mapped, lv_peak_mapped;
};

struct mt_rep_site {
	int32_t pid;
	uint32_t id;  /* size class, or MT_REP_STACK_SITE | stack id */
	uint64_t count, bytes;        /* allocations made here */
	uint64_t temporary;           /* of which temporary */
	uint64_t live, live_blocks;   /* now; at the end: leaks */
	uint64_t at_peak;             /* live bytes at the global peak */
	uint64_t at_peak_blocks;      /* and blocks */
	/* at_peak is computed lazily: snap is this site's live bytes (and
	 * blocks) at the peak numbered gen (see note_site_change() in
	 * report.c). */
	uint64_t snap_blocks, gen;
	mt_rep_level lv_live, lv_snap; /* live and snap, exact */
	/* with mt_rep.want_cp: live bytes (saturated) at the end of
	 * checkpoint k, for k < cp_last; from cp_last on they are live's
	 * (mt_rep_finish() fills them up to mt_rep.cp_n) */
	uint64_t *cp;
	uint32_t cp_last;
};

struct mt_sym;
struct mt_rep_wrappers;

/*
 * Byte figures saturate at 2^64 - 1: a recording is input, and a sum that
 * wrapped would read smaller than one of its parts (pprof's signed values
 * negative). A figure of 2^64 - 1 is "at least that"; the outputs say so.
 */
static inline uint64_t mt_rep_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

__extension__ static inline uint64_t mt_rep_sat(unsigned __int128 v)
{
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

struct mt_rep {
	const char *path;
	/* the recording's stack table and mappings (symbolize.h), NULL
	 * when it has none */
	struct mt_sym *sym;
	uint64_t events;   /* events read (after --pid) */
	bool damaged;      /* the decoder stopped early */
	bool too_many;     /* processes beyond MT_REP_MAX_PROCS left out */
	uint64_t damaged_meta; /* metadata payloads left out as damaged */
	/* a sampled recording ("MTKR", memtrack --sample-bytes): one
	 * allocation recorded per sample_bytes bytes allocated on average,
	 * and the allocation figures are estimates (report.c); 0: every
	 * allocation is in the recording */
	uint64_t sample_bytes;
	uint64_t sample_seed;
	bool sample_has_seed;
	size_t nattached;  /* processes with an attach mark */
	bool have_t0;
	uint64_t t0;       /* absolute timestamp of the first event */

	struct mt_rep_proc *procs;
	size_t nprocs;

	struct mt_rep_site *sites;
	size_t nsites;
	bool sites_merged; /* mt_rep_merge_sites() done */

	/* all processes together, at the same moment */
	uint64_t live, peak, peak_ts, peak_gen;
	uint64_t mapped, peak_mapped, peak_mapped_ts;
	mt_rep_level lv_live, lv_peak, lv_mapped, lv_peak_mapped;

	uint64_t hist_count[MT_REP_CLASSES];
	uint64_t hist_bytes[MT_REP_CLASSES];
	struct mt_rep_big big[MT_REP_TOP]; /* largest first */
	size_t nbig;

	struct mt_rep_wrappers *wrappers; /* mt_rep_site_name() */
	bool wrappers_done;

	/* checkpoints (MT_REP_CP) of every site, for the html format:
	 * checkpoint k ends at (k + 1) << cp_shift ns after the first
	 * event; cp_n are in use. cp_failed: out of memory, none kept. */
	bool want_cp, cp_failed;
	unsigned int cp_shift;
	size_t cp_n;
};

/* Merge the sites whose stacks symbolize alike (report-sites.c); once,
 * after mt_rep_finish(). Returns 0 or -ENOMEM (some left apart). */
int mt_rep_merge_sites(struct mt_rep *r);

/* Totals over processes; peak and peak_ts are the simultaneous ones. */
void mt_rep_total(const struct mt_rep *r, struct mt_rep_proc *total);

/* Size class of an allocation size, and its bounds. */
unsigned int mt_rep_class(uint64_t size);
void mt_rep_class_bounds(unsigned int cls, uint64_t *lo, uint64_t *hi);
/* "64-127 B" */
void mt_rep_class_label(unsigned int cls, char *buf, size_t len);

/*
 * The frames of a site, root first, each name whole: C++ names run to
 * hundreds of bytes and may differ only near their end, where the file
 * and line are. name[i] (i < n) points into text; both stay valid until
 * the next mt_rep_site_frames() on f, or mt_rep_frames_free(). Start
 * from a zeroed struct and reuse it from site to site.
 */
struct mt_rep_frames {
	size_t n;
	const char *name[MT_REP_MAX_FRAMES];
	/* of a stack's frames: the function alone (NULL: nothing names
	 * it, or not a stack frame; valid while r is) and its module (-1:
	 * none), for mt_rep_site_name() */
	const char *func[MT_REP_MAX_FRAMES];
	int32_t mod[MT_REP_MAX_FRAMES];
	size_t off[MT_REP_MAX_FRAMES]; /* of each name in text */
	char *text;
	size_t len, cap;
	char *joined; /* mt_rep_frames_join() */
	size_t joined_cap;
};

/* Returns how many frames (at least 1: the process), or -ENOMEM. */
int mt_rep_site_frames(const struct mt_rep *r, const struct mt_rep_site *s,
		       struct mt_rep_frames *f);
/* Frames from `from` on, each escaped by mt_rep_frame_esc(), joined by
 * ';': the collapsed format's stack, whole. Valid as f's names are; NULL
 * when out of memory. */
const char *mt_rep_frames_join(struct mt_rep_frames *f, size_t from);
void mt_rep_frames_free(struct mt_rep_frames *f);

/*
 * The frame that names a site (report-wrappers.c): the innermost one
 * that is neither in the C or C++ runtime or an allocator library nor an
 * allocator wrapper of the program (jv_mem_alloc, xmalloc). Returns its
 * index in f (from mt_rep_site_frames() on a site of r); the innermost
 * frame when every one is. The wrappers are found from r's stacks the
 * first time (no memory: none is known).
 */
size_t mt_rep_site_name(struct mt_rep *r, const struct mt_rep_frames *f);
void mt_rep_wrappers_free(struct mt_rep *r);

/*
 * A site as a person reads a stack (report-stack-lines.c): its naming
 * frame, then its other frames innermost first, with as many callers as
 * tell it apart from the other sites of its list. Add each site of the
 * list (its frames and naming frame: by_process, sites of two processes
 * are apart by their process; the same for every site), then done, then
 * ask how many callers each shows: --stack-lines N (N >= 0: N, 0 meaning
 * all to mt_rep_stack_lines()), or by default (N < 0) one more than it
 * shares with any other site, 3 at least. Start from a zeroed struct;
 * add and done return 0 or -ENOMEM (after which callers says 3).
 */
struct mt_rep_apart {
	uint64_t *keys; /* each site's frames as hashes, concatenated */
	size_t nkeys, kcap;
	size_t *start;  /* site i: keys[start[i]] to keys[start[i + 1]] */
	size_t n, scap;
	size_t *shared; /* mt_rep_apart_done(): per site */
	uint64_t seed;
	bool by_process;
};
int mt_rep_apart_add(struct mt_rep_apart *a, const struct mt_rep_frames *f,
		     size_t at, bool by_process);
int mt_rep_apart_done(struct mt_rep_apart *a);
size_t mt_rep_apart_callers(const struct mt_rep_apart *a, size_t site,
			    int stack_lines);
void mt_rep_apart_free(struct mt_rep_apart *a);
/* The lines after a site's naming frame f->name[at], innermost first:
 * fn(ctx, "via" | "from" | "in", name, 0) for a frame ("in": the
 * process, when in), fn(ctx, "...", NULL, more) for frames left out. */
typedef void (*mt_rep_line_fn)(void *ctx, const char *word, const char *name,
			       size_t more);
void mt_rep_stack_lines(const struct mt_rep_frames *f, size_t at,
			size_t callers, int stack_lines, bool in,
			mt_rep_line_fn fn, void *ctx);
/* An mt_rep_line_fn writing the text report's lines to ctx, a FILE. */
void mt_rep_text_line(void *ctx, const char *word, const char *name,
		      size_t more);

/* Top lists: indices into r->sites, best first. */
enum mt_rep_rank {
	MT_REP_BY_BYTES,
	MT_REP_BY_COUNT,
	MT_REP_BY_PEAK,
	MT_REP_BY_LEAK,
	MT_REP_RANKS
};
const char *mt_rep_rank_name(enum mt_rep_rank rank);
uint64_t mt_rep_site_value(const struct mt_rep_site *s, enum mt_rep_rank rank);
/* Up to max site indices with a non-zero value, best first. */
size_t mt_rep_top_sites(const struct mt_rep *r, enum mt_rep_rank rank,
			size_t *idx, size_t max);

/* The series of every process brought to the same bucket width; returns
 * that width in ns (0 when there is no sample). Changes r's series. */
uint64_t mt_rep_align_series(struct mt_rep *r);

/* Some byte figure reached 2^64 - 1 (mt_rep_sat_add()). */
bool mt_rep_saturated(const struct mt_rep *r);

/* Human figures: "1.5 MiB"; of a count, "1.2M", "34.5k", "999". */
void mt_rep_human(uint64_t bytes, char *buf, size_t len);
void mt_rep_human_count(uint64_t count, char *buf, size_t len);
/* "12.345 ms" below a second, "1.234 s" from there (report-svg.c). */
void mt_rep_human_time(uint64_t ns, char *buf, size_t len);

/* Output formats. Each returns 0 or a negative errno (write error). */
int mt_rep_text(FILE *out, struct mt_rep *r, const struct mt_report_opts *o);
int mt_rep_json(FILE *out, struct mt_rep *r, const struct mt_report_opts *o);
int mt_rep_collapsed(FILE *out, struct mt_rep *r,
		     const struct mt_report_opts *o);
int mt_rep_svg(FILE *out, struct mt_rep *r, const struct mt_report_opts *o,
	       bool inline_in_html);
/* The svg format's memory chart alone, as <svg id="ID" class="chart">,
 * for the html format: mt_rep_chart_scale() sets c's span and ymax to
 * r's own (a diff may widen them to both recordings'), then
 * mt_rep_svg_chart() draws at that scale and sets where its plot is. */
struct mt_rep_chart {
	double span; /* ns */
	uint64_t ymax; /* the figure at the plot's top, bytes */
	int left, top, width, height; /* of the plot, in the svg's units */
};
void mt_rep_chart_scale(struct mt_rep *r, struct mt_rep_chart *c);
int mt_rep_svg_chart(FILE *out, struct mt_rep *r, const char *id,
		     struct mt_rep_chart *c);
int mt_rep_html(FILE *out, struct mt_rep *r, const struct mt_report_opts *o);
/* gzipped pprof profile.proto (report-pprof.c) */
int mt_rep_pprof(FILE *out, struct mt_rep *r, const struct mt_report_opts *o);
int mt_rep_diff(FILE *out, struct mt_rep *a, struct mt_rep *b,
		const struct mt_report_opts *o);
/* A site of a diff: its frames are those of site `site` of side[side]
 * (the process left out), its figures both sides' sums: allocated,
 * allocations, temporary, at peak, leaked. */
struct mt_rep_diff_site {
	unsigned int side;
	size_t site;
	uint64_t v[2][5];
};
/* report --diff --format html: the sites sorted as the diff's rows;
 * row_of[k][i]: the row site i of side[k] is summed into (for the rows'
 * live bytes at each checkpoint) */
int mt_rep_html_diff(FILE *out, struct mt_rep *side[2],
		     const struct mt_rep_diff_site *s, size_t n,
		     const uint32_t *const row_of[2],
		     const struct mt_report_opts *o);

/* JSON and XML string escaping (report-escape.c): any bytes in, valid
 * UTF-8 out, U+FFFD for what is not. */
void mt_rep_json_str(FILE *out, const char *s);
/* The same, with '<', '>', '&' and '\'' as \u00XX: JSON inside an html
 * page's script or single-quoted attribute. */
void mt_rep_json_str_markup(FILE *out, const char *s);
void mt_rep_xml_str(FILE *out, const char *s);
/* A frame on a line of its own (text, diff): '\' and controls as \xHH. */
void mt_rep_line_str(FILE *out, const char *s);
/* A frame name for a ';'-joined stack: ';', '\' and controls as \xHH.
 * Writes at most len bytes, NUL included; returns the length. */
size_t mt_rep_frame_esc(char *dst, size_t len, const char *name);

/* Flamegraph layout from the sites' frames: calls fn for every frame, with
 * its depth (0: the root "all"), x and width as fractions of the whole. */
typedef void (*mt_rep_flame_fn)(void *ctx, const char *name, unsigned int depth,
				double x, double w, uint64_t weight,
				uint64_t total);
/* Returns the depth of the deepest frame + 1, or a negative errno. */
int mt_rep_flame(const struct mt_rep *r, const struct mt_report_opts *o,
		 mt_rep_flame_fn fn, void *ctx);

/* Weight of a site in collapsed and flamegraph outputs. */
uint64_t mt_rep_site_weight(const struct mt_rep_site *s,
			    const struct mt_report_opts *o);

#endif /* MT_REPORT_REPORT_MODEL_H */

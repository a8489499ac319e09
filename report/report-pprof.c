/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format pprof: the sites as a pprof profile (profile.proto,
 * gzipped), the format Go's pprof, Pyroscope, Parca, Grafana and Datadog
 * read. One sample per site, its values alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes (in use: live
 * at the end, or with --at peak at the moment of the peak), labelled with
 * its pid. Their sums are the text and json reports' totals. pprof's
 * values are signed: one above 2^63 - 1 is given as 2^63 - 1, and the
 * profile's comment says that values saturated. A process recorded from
 * an attach on (memtrack --pid) has a comment that says so and counts its
 * frees of blocks from before it. Of a sampled recording (memtrack
 * --sample-bytes N) the values are the estimates, the period N bytes of
 * space, and a comment says so.
 *
 * A stack's frames become locations (one per frame: its address, in the
 * mapping of the process it was in, with the file's build-id) whose lines
 * are the functions named there, inlined ones first as pprof wants them.
 * Sites without a stack (size classes) get one location without a mapping,
 * its function named as the other outputs name the site.
 *
 * Encoded with protobuf-c from report/profile.proto (Debian's
 * libprotobuf-c), gzipped with zlib. Every table (strings, functions,
 * mappings, locations) is deduplicated through a hash of its key with the
 * key compared on a hit, so the profile stays as small as its content.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "array.h"
#include "log.h"
#include "profile.pb-c.h"
#include "report-map.h"
#include "report-model.h"
#include "symbolize.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__ValueType ValueType;

struct pp {
	struct mt_rep *r;
	/* strings: owned copies, deduplicated by hash */
	char **str;
	size_t nstr, str_cap;
	struct mt_idx_map str_idx;
	Function **fn;
	size_t nfn, fn_cap;
	struct mt_idx_map fn_idx;
	Mapping **map;
	size_t nmap, map_cap;
	struct mt_idx_map map_idx;
	Location **loc;
	size_t nloc, loc_cap;
	struct mt_idx_map loc_idx;
	Sample **smp;
	size_t nsmp, smp_cap;
	bool saturated; /* a value was above INT64_MAX */
};

static int64_t value(struct pp *pp, uint64_t v)
{
	if (v > INT64_MAX) {
		pp->saturated = true;
		return INT64_MAX;
	}
	return (int64_t)v;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h = (h ^ *b++) * 1099511628211ull;
	}
	return h;
}

static uint64_t hash_str(const char *s)
{
	return hash_bytes(14695981039346656037ull, s, strlen(s));
}

#define GROW(arr, cap, n)                                                  \
	({                                                                 \
		void *g_ = mt_array_grow((arr), &(cap), (n) + 1,           \
					 sizeof(*(arr)));                  \
		if (g_) {                                                  \
			(arr) = g_;                                        \
		}                                                          \
		g_ != NULL;                                                \
	})

/*
 * The index in tab of the entry whose key hashes to h and for which
 * same(pp, index, arg) holds: found, or -1 with *slot_h the hash to put
 * a new entry under (the next free one after collisions).
 */
static int64_t probe(struct pp *pp, struct mt_idx_map *m, uint64_t h,
		     bool (*same)(struct pp *, size_t, const void *),
		     const void *arg, uint64_t *slot_h)
{
	int64_t i;

	for (; (i = mt_idx_get(m, h)) >= 0; h++) {
		if (same(pp, (size_t)i, arg)) {
			return i;
		}
	}
	*slot_h = h;
	return -1;
}

static bool same_str(struct pp *pp, size_t i, const void *arg)
{
	return strcmp(pp->str[i], arg) == 0;
}

/* The string table index of s; -1 when out of memory. */
static int64_t str_id(struct pp *pp, const char *s)
{
	uint64_t h;
	int64_t i = probe(pp, &pp->str_idx, hash_str(s), same_str, s, &h);
	char *copy;

	if (i >= 0) {
		return i;
	}
	if (!GROW(pp->str, pp->str_cap, pp->nstr)) {
		return -1;
	}
	copy = strdup(s);
	if (!copy || mt_idx_put(&pp->str_idx, h, (uint32_t)pp->nstr) < 0) {
		free(copy);
		return -1;
	}
	pp->str[pp->nstr] = copy;
	return (int64_t)pp->nstr++;
}

struct fn_key {
	int64_t name, file;
};

static bool same_fn(struct pp *pp, size_t i, const void *arg)
{
	const struct fn_key *k = arg;

	return pp->fn[i]->name == k->name && pp->fn[i]->filename == k->file;
}

/* The function id (1-based) of name in file (NULL: unknown); 0: no memory */
static uint64_t fn_id(struct pp *pp, const char *name, const char *file)
{
	struct fn_key k = { str_id(pp, name), str_id(pp, file ? file : "") };
	Function *f;
	uint64_t h;
	int64_t i;

	if (k.name < 0 || k.file < 0) {
		return 0;
	}
	i = probe(pp, &pp->fn_idx, hash_bytes(1, &k, sizeof(k)), same_fn, &k,
		  &h);
	if (i >= 0) {
		return (uint64_t)i + 1;
	}
	if (!GROW(pp->fn, pp->fn_cap, pp->nfn) ||
	    !(f = malloc(sizeof(*f)))) {
		return 0;
	}
	perftools__profiles__function__init(f);
	f->id = pp->nfn + 1;
	f->name = f->system_name = k.name;
	f->filename = k.file;
	if (mt_idx_put(&pp->fn_idx, h, (uint32_t)pp->nfn) < 0) {
		free(f);
		return 0;
	}
	pp->fn[pp->nfn++] = f;
	return f->id;
}

static bool same_map(struct pp *pp, size_t i, const void *arg)
{
	const Mapping *a = pp->map[i], *b = arg;

	return a->memory_start == b->memory_start &&
	       a->memory_limit == b->memory_limit &&
	       a->file_offset == b->file_offset &&
	       a->filename == b->filename && a->build_id == b->build_id;
}

/* The mapping id of a frame's mapping; 0: none (or no memory) */
static uint64_t map_id(struct pp *pp, const struct mt_sym_loc *l)
{
	const unsigned char *bid;
	char hex[2 * 32 + 1];
	size_t bidlen, i;
	const char *path = mt_sym_module(pp->r->sym, l->mod, &bid, &bidlen);
	Mapping key, *m;
	uint64_t h;
	int64_t k;

	if (!path) {
		return 0;
	}
	for (i = 0; i < bidlen && i < 32; i++) {
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	}
	hex[2 * i] = '\0';
	perftools__profiles__mapping__init(&key);
	key.memory_start = l->map_start;
	key.memory_limit = l->map_end;
	key.file_offset = l->map_off;
	key.filename = str_id(pp, path);
	key.build_id = str_id(pp, hex);
	if (key.filename < 0 || key.build_id < 0) {
		return 0;
	}
	h = hash_bytes(2, &key.memory_start, sizeof(key.memory_start));
	h = hash_bytes(h, &key.memory_limit, sizeof(key.memory_limit));
	h = hash_bytes(h, &key.file_offset, sizeof(key.file_offset));
	h = hash_bytes(h, &key.filename, sizeof(key.filename));
	k = probe(pp, &pp->map_idx, h, same_map, &key, &h);
	if (k >= 0) {
		return (uint64_t)k + 1;
	}
	if (!GROW(pp->map, pp->map_cap, pp->nmap) ||
	    !(m = malloc(sizeof(*m)))) {
		return 0;
	}
	*m = key;
	m->id = pp->nmap + 1;
	m->has_functions = true;
	m->has_filenames = true;
	m->has_line_numbers = true;
	m->has_inline_frames = true;
	if (mt_idx_put(&pp->map_idx, h, (uint32_t)pp->nmap) < 0) {
		free(m);
		return 0;
	}
	pp->map[pp->nmap++] = m;
	return m->id;
}

struct loc_key {
	uint64_t mapping, address, fn; /* fn: a location of its own */
};

static bool same_loc(struct pp *pp, size_t i, const void *arg)
{
	const struct loc_key *k = arg;
	const Location *l = pp->loc[i];

	return l->mapping_id == k->mapping && l->address == k->address &&
	       (k->fn ? l->n_line == 1 && l->line[0]->function_id == k->fn :
			true);
}

/* A new location for key k with n lines; NULL when out of memory. */
static Location *loc_new(struct pp *pp, const struct loc_key *k, size_t n,
			 uint64_t h)
{
	Location *l;
	size_t i;

	if (!GROW(pp->loc, pp->loc_cap, pp->nloc) ||
	    !(l = malloc(sizeof(*l)))) {
		return NULL;
	}
	perftools__profiles__location__init(l);
	l->line = calloc(n ? n : 1, sizeof(*l->line));
	if (!l->line || mt_idx_put(&pp->loc_idx, h, (uint32_t)pp->nloc) < 0) {
		free(l->line);
		free(l);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		l->line[i] = malloc(sizeof(**l->line));
		if (!l->line[i]) {
			break;
		}
		perftools__profiles__line__init(l->line[i]);
	}
	l->n_line = i;
	l->id = pp->nloc + 1;
	l->mapping_id = k->mapping;
	l->address = k->address;
	pp->loc[pp->nloc++] = l;
	return l;
}

/* The location id of a frame of a stack; 0: no memory */
static uint64_t loc_frame(struct pp *pp, const struct mt_sym_loc *sl)
{
	struct loc_key k = { map_id(pp, sl), sl->addr, 0 };
	uint64_t h;
	Location *l;
	size_t i;
	int64_t at;

	at = probe(pp, &pp->loc_idx, hash_bytes(3, &k, sizeof(k)), same_loc,
		   &k, &h);
	if (at >= 0) {
		return (uint64_t)at + 1;
	}
	l = loc_new(pp, &k, sl->nfuncs ? sl->nfuncs : 1, h);
	if (!l) {
		return 0;
	}
	for (i = 0; i < l->n_line; i++) {
		char unnamed[300];
		const char *name, *file = NULL;

		if (sl->nfuncs) {
			name = sl->funcs[i].name;
			file = sl->funcs[i].file;
			l->line[i]->line = sl->funcs[i].line;
		} else {
			const unsigned char *bid;
			size_t bidlen;
			const char *path = mt_sym_module(pp->r->sym, sl->mod,
							 &bid, &bidlen);
			const char *base = path ? strrchr(path, '/') : NULL;

			/* as the other outputs show it */
			if (path) {
				snprintf(unnamed, sizeof(unnamed),
					 "%s+0x%" PRIx64,
					 base ? base + 1 : path, sl->off);
			} else {
				snprintf(unnamed, sizeof(unnamed),
					 "0x%" PRIx64, sl->addr);
			}
			name = unnamed;
		}
		l->line[i]->function_id = fn_id(pp, name, file);
		if (!l->line[i]->function_id) {
			return 0;
		}
	}
	return l->id;
}

/* The location id of a frame known only by its name (a size class, a
 * stack the recording lacks); 0: no memory */
static uint64_t loc_named(struct pp *pp, const char *name)
{
	struct loc_key k = { 0, 0, fn_id(pp, name, NULL) };
	Location *l;
	uint64_t h;
	int64_t at;

	if (!k.fn) {
		return 0;
	}
	at = probe(pp, &pp->loc_idx, hash_bytes(4, &k, sizeof(k)), same_loc,
		   &k, &h);
	if (at >= 0) {
		return (uint64_t)at + 1;
	}
	l = loc_new(pp, &k, 1, h);
	if (!l || l->n_line != 1) {
		return 0;
	}
	l->line[0]->function_id = k.fn;
	return l->id;
}

static int add_sample(struct pp *pp, const struct mt_rep_site *s,
		      const struct mt_report_opts *o)
{
	struct mt_rep_frames f = { 0 };
	const struct mt_sym_loc *locs = NULL;
	size_t n = 0, i;
	int nf, err = 0;
	Sample *smp;
	Label *pid;

	if (!GROW(pp->smp, pp->smp_cap, pp->nsmp) ||
	    !(smp = calloc(1, sizeof(*smp)))) {
		return -ENOMEM;
	}
	perftools__profiles__sample__init(smp);
	pp->smp[pp->nsmp++] = smp;
	smp->value = calloc(4, sizeof(*smp->value));
	smp->label = calloc(1, sizeof(*smp->label));
	pid = malloc(sizeof(*pid));
	if (!smp->value || !smp->label || !pid) {
		free(pid);
		return -ENOMEM;
	}
	perftools__profiles__label__init(pid);
	smp->label[0] = pid;
	smp->n_label = 1;
	pid->key = str_id(pp, "pid");
	pid->num = s->pid;
	smp->n_value = 4;
	smp->value[0] = value(pp, s->count);
	smp->value[1] = value(pp, s->bytes);
	smp->value[2] = value(pp, o->at_peak ? s->at_peak_blocks :
					       s->live_blocks);
	smp->value[3] = value(pp, o->at_peak ? s->at_peak : s->live);
	if (s->id & MT_REP_STACK_SITE) {
		n = mt_sym_stack(pp->r->sym, s->id & ~MT_REP_STACK_SITE, &locs);
	}
	if (n) {
		/* the stack is innermost first, as pprof's samples */
		smp->location_id = calloc(n, sizeof(*smp->location_id));
		if (!smp->location_id) {
			return -ENOMEM;
		}
		for (i = 0; i < n; i++) {
			smp->location_id[i] = loc_frame(pp, &locs[i]);
			if (!smp->location_id[i]) {
				return -ENOMEM;
			}
		}
		smp->n_location_id = n;
		return pid->key < 0 ? -ENOMEM : 0;
	}
	/* the other outputs' frames, root first, the process left out (it
	 * is the label) */
	nf = mt_rep_site_frames(pp->r, s, &f);
	smp->location_id = nf < 0 ? NULL :
				    calloc((size_t)nf, sizeof(*smp->location_id));
	if (!smp->location_id) {
		err = -ENOMEM;
		goto end;
	}
	n = (size_t)nf;
	for (i = 1; i < n; i++) {
		uint64_t id = loc_named(pp, f.name[i]);

		if (!id) {
			err = -ENOMEM;
			goto end;
		}
		smp->location_id[n - 1 - i] = id;
	}
	smp->n_location_id = n - 1;
	err = pid->key < 0 ? -ENOMEM : 0;
end:
	mt_rep_frames_free(&f);
	return err;
}

static void pp_free(struct pp *pp)
{
	size_t i, j;

	for (i = 0; i < pp->nstr; i++) {
		free(pp->str[i]);
	}
	free(pp->str);
	for (i = 0; i < pp->nfn; i++) {
		free(pp->fn[i]);
	}
	free(pp->fn);
	for (i = 0; i < pp->nmap; i++) {
		free(pp->map[i]);
	}
	free(pp->map);
	for (i = 0; i < pp->nloc; i++) {
		for (j = 0; j < pp->loc[i]->n_line; j++) {
			free(pp->loc[i]->line[j]);
		}
		free(pp->loc[i]->line);
		free(pp->loc[i]);
	}
	free(pp->loc);
	for (i = 0; i < pp->nsmp; i++) {
		Sample *s = pp->smp[i];

		free(s->location_id);
		free(s->value);
		if (s->label) {
			free(s->label[0]);
		}
		free(s->label);
		free(s);
	}
	free(pp->smp);
	free(pp->str_idx.slots);
	free(pp->fn_idx.slots);
	free(pp->map_idx.slots);
	free(pp->loc_idx.slots);
}

/* buf, gzipped, to out */
static int write_gzip(FILE *out, const uint8_t *buf, size_t len)
{
	unsigned char chunk[65536];
	z_stream z = { 0 };
	int zr;

	/* 15 + 16: a gzip header and trailer, as pprof reads */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		return -ENOMEM;
	}
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			deflateEnd(&z);
			return -EIO;
		}
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
		    sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

int mt_rep_pprof(FILE *out, struct mt_rep *r, const struct mt_report_opts *o)
{
	static const char *const types[4][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	ValueType vt[4], *vtp[4], period;
	int64_t *comments = NULL, period_v;
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pp pp = { .r = r };
	struct mt_rep_proc total;
	uint8_t *buf = NULL;
	size_t i, len;
	int err = -ENOMEM;

	if (str_id(&pp, "") != 0) {
		goto end;
	}
	for (i = 0; i < 4; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = str_id(&pp, types[i][0]);
		vt[i].unit = str_id(&pp, types[i][1]);
		vtp[i] = &vt[i];
	}
	perftools__profiles__value_type__init(&period);
	period.type = str_id(&pp, "space");
	period.unit = str_id(&pp, "bytes");
	for (i = 0; i < r->nsites; i++) {
		const struct mt_rep_site *s = &r->sites[i];

		if (!s->count && !s->live && !s->at_peak) {
			continue;
		}
		err = add_sample(&pp, s, o);
		if (err < 0) {
			goto end;
		}
	}
	err = -ENOMEM;
	prof.default_sample_type = str_id(&pp, "inuse_space");
	if (prof.default_sample_type < 0 || period.type < 0 ||
	    period.unit < 0) {
		goto end;
	}
	mt_rep_total(r, &total);
	prof.duration_nanos = value(&pp, total.last_ts);
	comments = calloc(2 + r->nattached, sizeof(*comments));
	if (!comments) {
		goto end;
	}
	/* as Go writes a sampled heap profile: the mean bytes between
	 * samples, the values already scaled up (pprof does not scale them
	 * again); before the comments, which say whether it saturated */
	period_v = r->sample_bytes ? value(&pp, r->sample_bytes) : 1;
	if (r->sample_bytes) {
		char said[160];

		snprintf(said, sizeof(said),
			 "sampled recording: one allocation per %" PRIu64 " B on average (memtrack --sample-bytes); values are estimates, unbiased as Go's heap profile",
			 r->sample_bytes);
		comments[prof.n_comment] = str_id(&pp, said);
		if (comments[prof.n_comment++] < 0) {
			goto end;
		}
	}
	if (pp.saturated) {
		comments[prof.n_comment] = str_id(&pp, "values above 2^63 - 1 saturated: at least that");
		if (comments[prof.n_comment++] < 0) {
			goto end;
		}
	}
	/* inuse is what was allocated after the attach and is live: the
	 * blocks from before are not in the recording, and their frees
	 * take nothing off */
	for (i = 0; i < r->nprocs && prof.n_comment <= 1 + r->nattached; i++) {
		char said[256];

		if (!r->procs[i].attached) {
			continue;
		}
		snprintf(said, sizeof(said),
			 "pid %d: attached, recorded from the attach on: in use counts only blocks allocated after it; %" PRIu64 " frees of blocks allocated before the attach are not counted",
			 (int)r->procs[i].pid, r->procs[i].frees_before_attach);
		comments[prof.n_comment] = str_id(&pp, said);
		if (comments[prof.n_comment++] < 0) {
			goto end;
		}
	}
	prof.comment = comments;
	prof.n_sample_type = 4;
	prof.sample_type = vtp;
	prof.period_type = &period;
	prof.period = period_v;
	prof.n_sample = pp.nsmp;
	prof.sample = pp.smp;
	prof.n_mapping = pp.nmap;
	prof.mapping = pp.map;
	prof.n_location = pp.nloc;
	prof.location = pp.loc;
	prof.n_function = pp.nfn;
	prof.function = pp.fn;
	prof.n_string_table = pp.nstr;
	prof.string_table = pp.str;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		goto end;
	}
	perftools__profiles__profile__pack(&prof, buf);
	err = write_gzip(out, buf, len);
end:
	if (err == -ENOMEM) {
		mt_err("%s: out of memory for the pprof profile", r->path);
	} else if (err) {
		mt_err("standard output: %s", strerror(errno ? errno : EIO));
	}
	free(buf);
	free(comments);
	pp_free(&pp);
	return err;
}

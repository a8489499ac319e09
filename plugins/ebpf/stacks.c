/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/stacks.c - what `memtrack report` needs to name the frames
 * of the call stacks BPF captures (source arg `stacks`): the stack table
 * and each process's executable mappings, stored in the recording as
 * metadata (mt_emitter.meta) before the events that use them.
 *
 * Both are collected on the poller thread as they arrive (stacks from the
 * `stacks` ring, mappings when BPF stops a process at exec or at an
 * executable mmap, forks from the `ctl` ring) and written by
 * ebpf_meta_flush() from read() and drain(), before the events. The
 * payloads are described in README.md; integers are little-endian
 * (this is x86), every payload starts with a tag, a version, a record
 * count and a checksum of the records, so that a reader can tell a
 * damaged one.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "array.h"
#include "key-index.h"
#include "elf-build-id.h"
#include "stack-ids.h"

#define META_HDR 16
/* a payload is flushed when it grows past this (readers take 16 MiB) */
#define META_SPLIT (1u << 20)

/* FNV-1a, 32 bits: the checksum of a payload's records */
static uint32_t checksum(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h = (h ^ *p++) * 16777619u;
	}
	return h;
}

static int blob_put(struct ebpf_blob *b, const void *data, size_t len)
{
	void *p;

	if (!b->len) {
		b->len = META_HDR; /* room for the header */
	}
	p = mt_array_grow(b->data, &b->cap, b->len + len, 1);
	if (!p) {
		return -ENOMEM;
	}
	b->data = p;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* The process as our MTKM and MTKT records name it: under auto a table of
 * mappings apart from the interposer's (common/stack-ids.h says why). */
static uint32_t rec_pid(const struct ebpf_state *st, uint32_t pid)
{
	return st->handover ? pid | MT_STACK_PID_UPROBES : pid;
}

static int blob_flush(struct ebpf_state *st, struct ebpf_blob *b,
		      const char *tag, struct mt_emitter *em)
{
	int err;

	if (!b->count) {
		return 0;
	}
	memcpy(b->data, tag, 4);
	put32(b->data + 4, 1); /* version */
	put32(b->data + 8, b->count);
	put32(b->data + 12, checksum(b->data + META_HDR, b->len - META_HDR));
	err = em->meta ? em->meta(em, b->data, b->len) : -ENOTSUP;
	b->len = 0;
	b->count = 0;
	if (err == -ENOTSUP) {
		if (!st->meta_unsupported) {
			ebpf_log(st, MT_LOG_WARN,
				 "the encoder cannot store metadata: stacks are recorded as ids only");
			st->meta_unsupported = 1;
		}
		return 0;
	}
	return err;
}

/* Finish b's payload (tag, header) and queue it, to be written before
 * anything collected after. */
static int blob_seal(struct ebpf_state *st, struct ebpf_blob *b,
		     const char *tag)
{
	struct ebpf_blob *q;

	if (!b->count) {
		return 0;
	}
	q = mt_array_grow(st->sealed, &st->sealed_cap, st->nsealed + 1,
			  sizeof(*st->sealed));
	if (!q) {
		return -ENOMEM;
	}
	st->sealed = q;
	memcpy(b->data, tag, 4);
	put32(b->data + 4, 1); /* version */
	put32(b->data + 8, b->count);
	put32(b->data + 12, checksum(b->data + META_HDR, b->len - META_HDR));
	st->sealed[st->nsealed++] = *b;
	memset(b, 0, sizeof(*b));
	return 0;
}

/*
 * The addresses of process pid are about to name other code (an exec, a
 * mapping over another): every stack captured before is named through
 * the mappings recorded so far, so it is written before the new ones.
 * The process is stopped: its stacks are all in the ring.
 */
static int stacks_barrier(struct ebpf_state *st)
{
	int err;

	if (st->stack_rb) {
		ring_buffer__consume(st->stack_rb);
	}
	err = blob_seal(st, &st->meta_maps, "MTKM");
	if (!err) {
		err = blob_seal(st, &st->meta_stacks, "MTKT");
	}
	return err;
}

int ebpf_meta_flush(struct ebpf_state *st, struct mt_emitter *em)
{
	size_t i;
	int err = 0;

	for (i = 0; i < st->nsealed; i++) {
		struct ebpf_blob *b = &st->sealed[i];

		if (!err) {
			err = em->meta ? em->meta(em, b->data, b->len) :
					 -ENOTSUP;
			if (err == -ENOTSUP) {
				err = 0; /* said by blob_flush() */
			}
		}
		free(b->data);
	}
	st->nsealed = 0;
	if (!err) {
		err = blob_flush(st, &st->meta_attach, "MTKA", em);
	}
	if (!err) {
		err = blob_flush(st, &st->meta_recorder, "MTKW", em);
	}
	/* mappings first: a stack is named through them */
	if (!err) {
		err = blob_flush(st, &st->meta_maps, "MTKM", em);
	}
	if (!err) {
		err = blob_flush(st, &st->meta_stacks, "MTKT", em);
	}
	return err;
}

int ebpf_note_attach(struct ebpf_state *st, pid_t pid, uint64_t ts_ns)
{
	unsigned char rec[16];
	uint32_t p = (uint32_t)pid, flags = 0;
	int err;

	memcpy(rec, &p, 4);
	memcpy(rec + 4, &flags, 4);
	memcpy(rec + 8, &ts_ns, 8);
	err = blob_put(&st->meta_attach, rec, sizeof(rec));
	if (!err) {
		st->meta_attach.count++;
	}
	return err;
}

/* auto: process pid ended at ts; interposed: its last image's allocator
 * calls were its interposer's (else our uprobes'). An "MTKW" record. */
int ebpf_note_recorder(struct ebpf_state *st, pid_t pid, int interposed,
		       uint64_t ts_ns)
{
	unsigned char rec[16];
	uint32_t p = (uint32_t)pid;
	uint32_t who = interposed ? MT_REC_INTERPOSER : MT_REC_UPROBES;
	int err;

	if (interposed) {
		st->procs_interposer++;
	} else {
		st->procs_uprobes++;
	}
	memcpy(rec, &p, 4);
	memcpy(rec + 4, &who, 4);
	memcpy(rec + 8, &ts_ns, 8);
	err = blob_put(&st->meta_recorder, rec, sizeof(rec));
	if (!err) {
		st->meta_recorder.count++;
	}
	return err;
}

static struct ebpf_seen *seen_find(struct ebpf_state *st, pid_t pid)
{
	uint32_t i;

	if (mt_key_get(&st->seen_idx, (uint64_t)(uint32_t)pid, 0, &i)) {
		return NULL;
	}
	return &st->seen[i];
}

/* The first range of seen (sorted by start, disjoint) that starts at or
 * after addr: a binary search. */
static size_t range_at(const struct ebpf_seen *seen, uint64_t addr)
{
	size_t lo = 0, hi = seen->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (seen->range[mid].start < addr) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

static int in_exec_mapping(const struct ebpf_seen *seen, uint64_t addr)
{
	size_t i = range_at(seen, addr + 1); /* the first starting past it */

	return i > 0 && addr >= seen->range[i - 1].start &&
	       addr < seen->range[i - 1].end;
}

/*
 * How many of the frames of s to keep: those before the first one outside
 * every executable mapping of its process (a frame-pointer walk through
 * code without frame pointers reads data as return addresses; what
 * follows such a frame is no more trustworthy). A process not seen yet
 * (its fork record not read yet, or a stop that was not made) has its
 * mappings read now.
 */
static uint32_t frames_to_keep(struct ebpf_state *st,
			       const struct mt_bpf_stack *s)
{
	struct ebpf_seen *seen = seen_find(st, (pid_t)s->pid);
	uint32_t i;

	if ((!seen || !seen->n) && !st->in_ctl && st->ctl_catch_up) {
		st->ctl_catch_up(st);
		seen = seen_find(st, (pid_t)s->pid);
	}
	if (!seen || !seen->n) {
		ebpf_record_maps(st, (pid_t)s->pid, 0);
		seen = seen_find(st, (pid_t)s->pid);
	}
	if (!seen) {
		return 0;
	}
	for (i = 0; i < s->nframes; i++) {
		if (!in_exec_mapping(seen, s->frames[i])) {
			break;
		}
	}
	return i;
}

/* A record of the `stacks` ring: one stack table entry. */
int ebpf_on_stack(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	const struct mt_bpf_stack *s = data;
	static const uint64_t mark = MT_FRAME_TRUNCATED;
	unsigned char hdr[12];
	uint32_t skip, n, keep;
	int truncated, err;

	if (len < MT_STACK_HDR || s->nframes > MT_STACK_MAX ||
	    len < MT_STACK_HDR + (size_t)s->nframes * 8) {
		return 0;
	}
	keep = frames_to_keep(st, s);
	truncated = keep < s->nframes || (s->flags & MT_STACK_TRUNCATED);
	st->frames_dropped += s->nframes - keep;
	/* BPF put the caller's return address (read at the entry's stack
	 * pointer) first; where the allocator's entry had already set up a
	 * frame the walk found it too: keep it once (the same return address
	 * twice in a row cannot be a real stack) */
	skip = keep > 1 && s->frames[0] == s->frames[1];
	n = keep - skip;
	/* the mark is one more frame, at the root end: the table's frames
	 * stay at most MT_STACK_MAX (readers refuse more) */
	if (truncated && n == MT_STACK_MAX) {
		n--;
	}
	put32(hdr, s->id);
	put32(hdr + 4, rec_pid(st, s->pid));
	put32(hdr + 8, n + (truncated ? 1 : 0));
	err = blob_put(&st->meta_stacks, hdr, sizeof(hdr));
	if (!err) {
		err = blob_put(&st->meta_stacks, s->frames + skip,
			       (size_t)n * 8);
	}
	if (!err && truncated) {
		err = blob_put(&st->meta_stacks, &mark, sizeof(mark));
	}
	if (err) {
		return err;
	}
	st->meta_stacks.count++;
	st->stacks_seen++;
	st->stacks_truncated += truncated;
	if (st->meta_stacks.len > META_SPLIT && st->em) {
		/* the mappings first: the check above may have read some
		 * that these stacks resolve through */
		return ebpf_meta_flush(st, st->em);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Mappings                                                            */
/* ------------------------------------------------------------------ */

/* The GNU build-id of an ELF file (0 when it has none). */
static size_t read_build_id(const char *path, unsigned char *out,
			    size_t max)
{
	size_t n = 0;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		n = mt_elf_build_id(elf, out, max);
	}
	if (elf) {
		elf_end(elf);
	}
	close(fd);
	return n;
}

static const struct ebpf_bid *build_id_get(struct ebpf_state *st,
					   uint64_t dev, uint64_t ino,
					   const char *path)
{
	struct ebpf_bid *b;
	uint32_t i;

	if (!mt_key_get(&st->bids_idx, dev, ino, &i)) {
		return &st->bids[i];
	}
	b = mt_array_grow(st->bids, &st->bids_cap, st->nbids + 1,
			  sizeof(*st->bids));
	if (!b) {
		return NULL;
	}
	st->bids = b;
	if (mt_key_put(&st->bids_idx, dev, ino, (uint32_t)st->nbids)) {
		return NULL;
	}
	b = &st->bids[st->nbids++];
	b->dev = dev;
	b->ino = ino;
	b->len = read_build_id(path, b->id, sizeof(b->id));
	return b;
}

/* Record types of an MTKM payload */
#define MAPS_EXEC 1 /* u32 pid: its earlier mappings are gone */
#define MAPS_MAP 2  /* a mapping of pid (see plugins/ebpf/README.md) */
#define MAPS_FORK 3 /* u32 child, u32 parent: the child has its mappings */

static int maps_put_pid(struct ebpf_state *st, uint8_t type, uint32_t a,
			uint32_t b)
{
	unsigned char rec[9];
	size_t n = type == MAPS_FORK ? 9 : 5;
	int err;

	rec[0] = type;
	put32(rec + 1, rec_pid(st, a));
	put32(rec + 5, type == MAPS_FORK ? rec_pid(st, b) : b);
	err = blob_put(&st->meta_maps, rec, n);
	if (!err) {
		st->meta_maps.count++;
	}
	return err;
}

static struct ebpf_seen *seen_add(struct ebpf_state *st, pid_t pid)
{
	struct ebpf_seen *seen;

	seen = mt_array_grow(st->seen, &st->seen_cap, st->nseen + 1,
			     sizeof(*st->seen));
	if (!seen) {
		return NULL;
	}
	st->seen = seen;
	if (mt_key_put(&st->seen_idx, (uint64_t)(uint32_t)pid, 0,
		       (uint32_t)st->nseen)) {
		return NULL;
	}
	seen = &st->seen[st->nseen++];
	memset(seen, 0, sizeof(*seen));
	seen->pid = pid;
	return seen;
}

int ebpf_note_fork(struct ebpf_state *st, pid_t parent, pid_t child)
{
	struct ebpf_seen *c, *p;
	void *r;

	/* the child has its parent's mappings (a reused pid: what it had
	 * mapped before is not the child's) */
	c = seen_find(st, child);
	if (!c) {
		c = seen_add(st, child);
		if (!c) {
			return -ENOMEM;
		}
	}
	c->n = 0;
	ebpf_unw_chunks_release(st, c);
	p = seen_find(st, parent);
	if (p && p->nchunks) {
		/* BPF copied the parent's entry: the child names its chunks */
		memcpy(c->chunk, p->chunk, sizeof(c->chunk));
		memcpy(c->chunk_lo, p->chunk_lo, sizeof(c->chunk_lo));
		memcpy(c->chunk_sum, p->chunk_sum, sizeof(c->chunk_sum));
		c->nchunks = p->nchunks;
		ebpf_unw_chunks_ref(st, c);
	}
	if (p && p->n) {
		r = mt_array_grow(c->range, &c->cap, p->n, sizeof(*c->range));
		if (!r) {
			return -ENOMEM;
		}
		c->range = r;
		memcpy(c->range, p->range, p->n * sizeof(*c->range));
		c->n = p->n;
	}
	return maps_put_pid(st, MAPS_FORK, (uint32_t)child, (uint32_t)parent);
}

/* What one record_maps pass collects */
struct maps_pass {
	char *fresh[16]; /* names of the files newly mapped */
	size_t nnew;
	int reused;	 /* addresses of the process changed meaning */
};

/*
 * Record one executable mapping ml of pid (name: its path; file: its
 * /proc/PID/map_files entry) unless seen already; drop what it covers.
 */
static int record_one(struct ebpf_state *st, struct ebpf_seen *seen,
		      pid_t pid, const struct ebpf_map_line *ml,
		      const char *file, const char *name,
		      struct maps_pass *ps)
{
	const struct ebpf_bid *bid;
	unsigned char rec[1 + 4 + 24 + 1];
	uint64_t v[3];
	uint16_t plen;
	size_t j, k;
	void *p;
	int err;

	/* the same mapping seen before, or one this replaces (a library
	 * loaded where a dlclose'd one was): what was there is gone, and
	 * the addresses now name other code. The ranges are sorted and
	 * disjoint: a binary search finds both. */
	j = range_at(seen, ml->start);
	if (j < seen->n && seen->range[j].start == ml->start &&
	    seen->range[j].end == ml->end && seen->range[j].dev == ml->dev &&
	    seen->range[j].ino == ml->inode && seen->range[j].off == ml->off) {
		return 0;
	}
	if (j > 0 && seen->range[j - 1].end > ml->start) {
		j--;
	}
	k = j;
	while (k < seen->n && seen->range[k].start < ml->end) {
		k++;
	}
	if (k > j) {
		if (!ps->reused) {
			err = stacks_barrier(st);
			if (err) {
				return err;
			}
		}
		memmove(&seen->range[j], &seen->range[k],
			(seen->n - k) * sizeof(*seen->range));
		seen->n -= k - j;
		ps->reused = 1;
	}
	p = mt_array_grow(seen->range, &seen->cap, seen->n + 1,
			  sizeof(*seen->range));
	if (!p) {
		return -ENOMEM;
	}
	seen->range = p;
	memmove(&seen->range[j + 1], &seen->range[j],
		(seen->n - j) * sizeof(*seen->range));
	seen->n++;
	seen->range[j].start = ml->start;
	seen->range[j].end = ml->end;
	seen->range[j].dev = ml->dev;
	seen->range[j].ino = ml->inode;
	seen->range[j].off = ml->off;
	err = ebpf_unw_mapping(st, &seen->range[j], ml->dev, ml->inode,
			       ml->off, file, name);
	if (err) {
		/* not kept */
		memmove(&seen->range[j], &seen->range[j + 1],
			(seen->n - j - 1) * sizeof(*seen->range));
		seen->n--;
		return err;
	}
	if (ps->nnew < sizeof(ps->fresh) / sizeof(ps->fresh[0]) &&
	    (ps->fresh[ps->nnew] = strdup(name))) {
		ps->nnew++;
	}
	bid = build_id_get(st, ml->dev, ml->inode, file);
	rec[0] = MAPS_MAP;
	put32(rec + 1, rec_pid(st, (uint32_t)pid));
	v[0] = ml->start;
	v[1] = ml->end;
	v[2] = ml->off;
	memcpy(rec + 5, v, sizeof(v));
	rec[29] = bid ? (unsigned char)bid->len : 0;
	plen = (uint16_t)strnlen(name, 4000);
	err = blob_put(&st->meta_maps, rec, sizeof(rec));
	if (!err && bid && bid->len) {
		err = blob_put(&st->meta_maps, bid->id, bid->len);
	}
	if (!err) {
		err = blob_put(&st->meta_maps, &plen, sizeof(plen));
	}
	if (!err) {
		err = blob_put(&st->meta_maps, name, plen);
	}
	if (!err) {
		st->meta_maps.count++;
	}
	return err;
}

/* The end of a pass: a new generation when addresses changed meaning,
 * the unwind tables to BPF, the files' tables prefetched. */
static int maps_done(struct ebpf_state *st, struct ebpf_seen *seen,
		     pid_t pid, struct maps_pass *ps, int err)
{
	if (ps->reused) {
		/* before the process is resumed: its stacks from now on are
		 * new ones */
		uint32_t key = (uint32_t)pid;

		seen->gen++;
		if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.stack_gen),
					&key, &seen->gen, BPF_ANY) && !err) {
			err = -errno;
		}
	}
	if (!err) {
		/* before the process is resumed: no allocation of code
		 * just mapped is unwound without its table */
		err = ebpf_unw_push(st, seen);
	}
	/* before this stop's uprobes are attached (unwind.c says why) */
	ebpf_unw_prefetch(st, ps->fresh, ps->nnew);
	while (ps->nnew) {
		free(ps->fresh[--ps->nnew]);
	}
	return err;
}

/*
 * Record the executable file mappings of pid. at_exec: the process has
 * just exec'd, what was recorded for it before is gone. Each mapping is
 * recorded once per process image: a stop for a new mapping adds only the
 * new ones.
 */
int ebpf_record_maps(struct ebpf_state *st, pid_t pid, int at_exec)
{
	char path[64], line[4096];
	struct maps_pass ps = { .nnew = 0 };
	struct ebpf_seen *seen;
	FILE *maps;
	int err = 0;

	seen = seen_find(st, pid);
	if (seen && at_exec) {
		if (seen->n) {
			err = stacks_barrier(st);
			if (err) {
				return err;
			}
		}
		seen->n = 0;
		ps.reused = 1;
	}
	if (at_exec || !seen) {
		/* a pid not seen: a new process, or a reused pid */
		err = maps_put_pid(st, MAPS_EXEC, (uint32_t)pid, 0);
		if (err) {
			return err;
		}
	}
	if (!seen) {
		seen = seen_add(st, pid);
		if (!seen) {
			return -ENOMEM;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps) {
		return 0; /* gone meanwhile */
	}
	__atomic_fetch_add(&st->maps_reads, 1, __ATOMIC_RELAXED);
	while (!err && fgets(line, sizeof(line), maps)) {
		struct ebpf_map_line ml;
		char file[64];

		if (ebpf_parse_exec_map(line, &ml)) {
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		snprintf(file, sizeof(file), "/proc/%d/map_files/%lx-%lx",
			 (int)pid, ml.start, ml.end);
		err = record_one(st, seen, pid, &ml, file, line + ml.name_at,
				 &ps);
	}
	fclose(maps);
	return maps_done(st, seen, pid, &ps, err);
}

int ebpf_record_map(struct ebpf_state *st, pid_t pid, uint64_t start,
		    uint64_t end, uint64_t off, uint64_t dev, uint64_t ino)
{
	struct ebpf_map_line ml = { .start = start, .end = end, .off = off,
				    .inode = ino, .dev = dev };
	struct maps_pass ps = { .nnew = 0 };
	struct ebpf_seen *seen = seen_find(st, pid);
	char file[64], name[4096];
	ssize_t n;

	if (!seen || !seen->n || !start || end <= start) {
		return ebpf_record_maps(st, pid, 0);
	}
	snprintf(file, sizeof(file), "/proc/%d/map_files/%lx-%lx", (int)pid,
		 (unsigned long)start, (unsigned long)end);
	n = readlink(file, name, sizeof(name) - 1);
	if (n <= 0) {
		/* not that mapping any more, or not ours to read */
		return ebpf_record_maps(st, pid, 0);
	}
	name[n] = '\0';
	return maps_done(st, seen, pid, &ps,
			 record_one(st, seen, pid, &ml, file, name, &ps));
}

int ebpf_note_exit(struct ebpf_state *st, pid_t pid)
{
	struct ebpf_seen *seen = seen_find(st, pid);

	if (seen) {
		ebpf_unw_chunks_release(st, seen);
	}
	return 0;
}

int ebpf_record_map_ahead(struct ebpf_state *st, pid_t pid, uint64_t start,
			  uint64_t end, uint64_t off, uint64_t dev,
			  uint64_t ino, const char *file, const char *name)
{
	struct ebpf_map_line ml = { .start = start, .end = end, .off = off,
				    .inode = ino, .dev = dev };
	struct maps_pass ps = { .nnew = 0 };
	struct ebpf_seen *seen = seen_find(st, pid);
	int err;

	if (!seen) {
		/* its exec record was lost: what it maps now first */
		err = ebpf_record_maps(st, pid, 0);
		seen = seen_find(st, pid);
		if (!seen) {
			return err ? err : -ESRCH;
		}
	}
	return maps_done(st, seen, pid, &ps,
			 record_one(st, seen, pid, &ml, file, name, &ps));
}

void ebpf_stacks_free(struct ebpf_state *st)
{
	size_t i;

	for (i = 0; i < st->nseen; i++) {
		free(st->seen[i].range);
	}
	free(st->seen);
	free(st->bids);
	mt_key_free(&st->seen_idx);
	mt_key_free(&st->bids_idx);
	free(st->meta_maps.data);
	free(st->meta_stacks.data);
	while (st->nsealed) {
		free(st->sealed[--st->nsealed].data);
	}
	free(st->sealed);
	free(st->meta_attach.data);
	free(st->meta_recorder.data);
	ebpf_unw_free(st);
}

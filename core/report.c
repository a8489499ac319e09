/* SPDX-License-Identifier: MIT */
/*
 * memtrack report FILE: what a recording says, per process and in total.
 *
 * Heap accounting follows the blocks: an allocation adds its size to the
 * live heap of its process, a free subtracts the size recorded for that
 * address. A free of an address never seen allocated (allocated before
 * recording began) counts as unmatched and changes nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "log.h"
#include "report.h"

#define MAX_PROCS 4096

struct live_slot {
	uint64_t key; /* 0: empty */
	uint64_t size;
	int32_t pid;
};

/* Live blocks: open addressing, linear probing, backward-shift delete. */
struct live_map {
	struct live_slot *slots;
	size_t mask;
	size_t used;
};

struct proc_stats {
	int32_t pid;
	uint64_t by_kind[MT_EV_KIND_COUNT];
	uint64_t allocs, frees, unmatched_frees;
	uint64_t bytes_allocated, bytes_freed;
	uint64_t live, peak, peak_ts;
	uint64_t live_blocks;
	uint64_t mapped, peak_mapped;
	uint64_t first_ts, last_ts;
};

struct report {
	struct live_map map;
	struct proc_stats procs[MAX_PROCS];
	size_t nprocs;
	bool too_many;
};

static uint64_t hash(int32_t pid, uint64_t addr)
{
	uint64_t h = addr ^ ((uint64_t)(uint32_t)pid << 47);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static int map_grow(struct live_map *m)
{
	size_t cap = m->slots ? (m->mask + 1) * 2 : 1024, i;
	struct live_slot *old = m->slots;
	size_t old_cap = old ? m->mask + 1 : 0;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->mask = cap - 1;
	m->used = 0;
	for (i = 0; i < old_cap; i++) {
		if (old[i].key) {
			size_t j = hash(old[i].pid, old[i].key) & m->mask;

			while (m->slots[j].key) {
				j = (j + 1) & m->mask;
			}
			m->slots[j] = old[i];
			m->used++;
		}
	}
	free(old);
	return 0;
}

/* Address 0 is never a live block, so it marks empty slots. */
static int map_put(struct live_map *m, int32_t pid, uint64_t addr,
		   uint64_t size, uint64_t *replaced)
{
	size_t j;

	if (!m->slots || m->used * 4 >= (m->mask + 1) * 3) {
		if (map_grow(m) < 0) {
			return -ENOMEM;
		}
	}
	j = hash(pid, addr) & m->mask;
	while (m->slots[j].key) {
		if (m->slots[j].key == addr && m->slots[j].pid == pid) {
			*replaced = m->slots[j].size;
			m->slots[j].size = size;
			return 1;
		}
		j = (j + 1) & m->mask;
	}
	m->slots[j] = (struct live_slot){ addr, size, pid };
	m->used++;
	return 0;
}

static bool map_take(struct live_map *m, int32_t pid, uint64_t addr,
		     uint64_t *size)
{
	size_t j, k;

	if (!m->slots) {
		return false;
	}
	j = hash(pid, addr) & m->mask;
	while (m->slots[j].key &&
	       !(m->slots[j].key == addr && m->slots[j].pid == pid)) {
		j = (j + 1) & m->mask;
	}
	if (!m->slots[j].key) {
		return false;
	}
	*size = m->slots[j].size;
	/* Backward shift: pull later members of the run into the hole. */
	for (k = (j + 1) & m->mask; m->slots[k].key; k = (k + 1) & m->mask) {
		size_t home = hash(m->slots[k].pid, m->slots[k].key) & m->mask;

		if (((k - home) & m->mask) >= ((k - j) & m->mask)) {
			m->slots[j] = m->slots[k];
			j = k;
		}
	}
	m->slots[j].key = 0;
	m->used--;
	return true;
}

static struct proc_stats *proc(struct report *r, int32_t pid)
{
	size_t i;

	for (i = r->nprocs; i > 0; i--) {
		if (r->procs[i - 1].pid == pid) {
			return &r->procs[i - 1];
		}
	}
	if (r->nprocs == MAX_PROCS) {
		r->too_many = true;
		return NULL;
	}
	memset(&r->procs[r->nprocs], 0, sizeof(r->procs[0]));
	r->procs[r->nprocs].pid = pid;
	return &r->procs[r->nprocs++];
}

static void on_free(struct report *r, struct proc_stats *p, uint64_t addr)
{
	uint64_t size;

	if (addr == 0) {
		return;
	}
	if (!map_take(&r->map, p->pid, addr, &size)) {
		p->unmatched_frees++;
		return;
	}
	p->frees++;
	p->bytes_freed += size;
	p->live -= size;
	p->live_blocks--;
}

static int on_alloc(struct report *r, struct proc_stats *p,
		    const struct mt_event *ev)
{
	uint64_t old = 0;
	int err;

	p->allocs++;
	p->bytes_allocated += ev->size;
	if (ev->addr == 0) {
		return 0;
	}
	err = map_put(&r->map, p->pid, ev->addr, ev->size, &old);
	if (err < 0) {
		return err;
	}
	/* The same address again without a free: the old block is gone. */
	p->live += ev->size - (err == 1 ? old : 0);
	p->live_blocks += err == 1 ? 0 : 1;
	if (p->live > p->peak) {
		p->peak = p->live;
		p->peak_ts = ev->timestamp;
	}
	return 0;
}

static int on_events(void *ctx, const struct mt_event *ev, size_t n)
{
	struct report *r = ctx;
	size_t i;
	int err;

	for (i = 0; i < n; i++, ev++) {
		struct proc_stats *p = proc(r, ev->pid);

		if (!p || ev->kind >= MT_EV_KIND_COUNT) {
			continue;
		}
		if (!p->first_ts) {
			p->first_ts = ev->timestamp;
		}
		p->last_ts = ev->timestamp;
		p->by_kind[ev->kind]++;
		switch (ev->kind) {
		case MT_EV_FREE:
			on_free(r, p, ev->addr);
			break;
		case MT_EV_REALLOC:
			if (ev->flags & MT_EVF_OLD_ADDR) {
				on_free(r, p, ev->old_addr);
			}
			/* fall through */
		case MT_EV_MALLOC:
		case MT_EV_CALLOC:
		case MT_EV_ALIGNED_ALLOC:
			err = on_alloc(r, p, ev);
			if (err < 0) {
				return err;
			}
			break;
		case MT_EV_MMAP:
			p->mapped += ev->size;
			if (p->mapped > p->peak_mapped) {
				p->peak_mapped = p->mapped;
			}
			break;
		case MT_EV_MUNMAP:
			p->mapped -= ev->size < p->mapped ? ev->size : p->mapped;
			break;
		default:
			break;
		}
	}
	return 0;
}

static void print_bytes(const char *label, uint64_t v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0) {
		printf("  %-22s %" PRIu64 " B\n", label, v);
	} else {
		printf("  %-22s %" PRIu64 " B (%.1f %s)\n", label, v, d,
		       units[u]);
	}
}

static void print_proc(const struct proc_stats *p, const char *title)
{
	unsigned int k;

	printf("%s\n", title);
	printf("  %-22s", "events");
	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		if (p->by_kind[k]) {
			printf(" %s=%" PRIu64, mt_event_kind_name(k),
			       p->by_kind[k]);
		}
	}
	printf("\n");
	printf("  %-22s %" PRIu64 "\n", "allocations", p->allocs);
	printf("  %-22s %" PRIu64 "\n", "frees", p->frees);
	if (p->unmatched_frees) {
		printf("  %-22s %" PRIu64 "\n", "unmatched frees",
		       p->unmatched_frees);
	}
	print_bytes("bytes allocated", p->bytes_allocated);
	print_bytes("bytes freed", p->bytes_freed);
	print_bytes("peak live heap", p->peak);
	printf("  %-22s %" PRIu64 " blocks, %" PRIu64 " B\n", "live at end",
	       p->live_blocks, p->live);
	if (p->peak_mapped) {
		print_bytes("peak mmap'd", p->peak_mapped);
	}
}

int mt_report(const char *path)
{
	struct report *r = calloc(1, sizeof(*r));
	struct proc_stats total = { 0 };
	char title[64];
	size_t i;
	unsigned int k;
	int fd, err;

	if (!r) {
		return -ENOMEM;
	}
	fd = strcmp(path, "-") == 0 ? dup(STDIN_FILENO) :
				      open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		mt_err("%s: %s", path, strerror(errno));
		goto end;
	}
	err = mt_host_decode(NULL, fd, path, on_events, NULL, r);
	close(fd);
	if (err < 0) {
		mt_warn("%s: report covers the events before the damage",
			path);
	}
	if (r->too_many) {
		mt_warn("%s: more than %d processes; the rest are left out",
			path, MAX_PROCS);
	}
	for (i = 0; i < r->nprocs; i++) {
		const struct proc_stats *p = &r->procs[i];

		snprintf(title, sizeof(title), "process %d", (int)p->pid);
		print_proc(p, title);
		for (k = 0; k < MT_EV_KIND_COUNT; k++) {
			total.by_kind[k] += p->by_kind[k];
		}
		total.allocs += p->allocs;
		total.frees += p->frees;
		total.unmatched_frees += p->unmatched_frees;
		total.bytes_allocated += p->bytes_allocated;
		total.bytes_freed += p->bytes_freed;
		/* Peaks of different processes need not coincide: the sum
		 * is an upper bound, said as such. */
		total.peak += p->peak;
		total.live += p->live;
		total.live_blocks += p->live_blocks;
		total.peak_mapped += p->peak_mapped;
	}
	snprintf(title, sizeof(title), "total (%zu process%s; peaks summed)",
		 r->nprocs, r->nprocs == 1 ? "" : "es");
	print_proc(&total, title);
end:
	free(r->map.slots);
	free(r);
	mt_host_cleanup();
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-maps.c - see stack-maps.h.
 *
 * One pass of dl_iterate_phdr writes what fits; when the buffer is too
 * small the pass goes on counting, so the caller learns the size at once
 * (the loader's list cannot be walked from where a pass stopped). A pass
 * notes the segments it sends past the end of the set of those sent, and
 * keeps them only when it succeeds.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "elf-notes.h"
#include "loader-walk.h"
#include "stack-maps.h"
#include "stack-unwind.h"
#include "selfmap.h"

#define BUILD_ID_MAX 255 /* the record's length is a byte */

int mtpl_maps_init(struct mtpl_maps *m)
{
	memset(m, 0, sizeof(*m));
	m->page = sysconf(_SC_PAGESIZE);
	return 0;
}

void mtpl_maps_destroy(struct mtpl_maps *m)
{
	/* the tables stay mapped (addr-set.h says why) */
	memset(m, 0, sizeof(*m));
}

/* Note start as recorded by the pass in progress. When there is no room
 * for it, it is not noted, and is sent again next time: harmless. */
static void pend_add(struct mtpl_maps *m, uint64_t start)
{
	if (m->npend == m->pend_cap) {
		size_t want = m->pend_cap ? m->pend_cap * 2 : 512;
		uint64_t *p = pl_self_map(want * sizeof(*p), 0);

		if (!p) {
			return;
		}
		if (m->npend) {
			memcpy(p, m->pend, m->npend * sizeof(*p));
		}
		m->pend = p; /* the old one stays mapped (addr-set.h) */
		m->pend_cap = want;
	}
	m->pend[m->npend++] = start;
}

int mtpl_maps_lock(struct mtpl_maps *m)
{
	int me = (int)gettid(), free_ = 0;

	while (!__atomic_compare_exchange_n(&m->lock, &free_, me, 0,
					    __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		if (free_ == me) {
			return -EDEADLK;
		}
		free_ = 0;
		sched_yield();
	}
	return 0;
}

void mtpl_maps_unlock(struct mtpl_maps *m)
{
	__atomic_store_n(&m->lock, 0, __ATOMIC_RELEASE);
}

void mtpl_maps_atfork_child(struct mtpl_maps *m)
{
	__atomic_store_n(&m->lock, 0, __ATOMIC_RELAXED);
}

struct counts {
	unsigned long long adds, subs;
};

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct counts *c = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
			    sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	return 1; /* the counters are global: one object is enough */
}

unsigned long long mtpl_maps_unloads(void)
{
	struct counts c = { 0, 0 };

	mtpl_loader_enter();
	dl_iterate_phdr(counts_cb, &c);
	mtpl_loader_leave();
	return c.subs;
}

int mtpl_maps_changed(const struct mtpl_maps *m)
{
	struct counts c = { 0, 0 };

	if (!m->written) {
		return 1;
	}
	mtpl_loader_enter();
	dl_iterate_phdr(counts_cb, &c);
	mtpl_loader_leave();
	return c.adds != m->adds || c.subs != m->subs;
}

struct pass {
	struct mtpl_maps *m;
	uint32_t pid;
	unsigned char *buf;
	size_t cap, len; /* len: bytes the records take, written or not */
	uint32_t records;
	int first;     /* the next object is the main program */
	int resend;    /* an object went away: send everything again */
	/* the prefix of the loader's list sent already (as optional.c's
	 * seen_prefix): objects before skip - 1 are not looked at, the one
	 * at skip - 1 is checked to be the same */
	size_t idx, skip;
	int broken;
	size_t contig; /* objects from the first on all sent after the pass */
	const void *contig_phdr;
};

static void put(struct pass *ps, const void *data, size_t n)
{
	if (ps->len + n <= ps->cap) {
		memcpy(ps->buf + ps->len, data, n);
	}
	ps->len += n;
}

/* The object's path: the loader's name when absolute; a relative one
 * (dlopen("./x.so"), a program started as "ld.so ./prog") taken from the
 * current directory, which is right unless it changed since the load;
 * the main program's, when the loader has no name for it, from
 * /proc/self/exe. NULL for the vDSO. */
static const char *object_path(struct pass *ps, const char *name,
			       size_t *len)
{
	struct mtpl_maps *m = ps->m;
	size_t dlen, nlen;

	if (name && name[0] == '/') {
		*len = strnlen(name, 65535);
		return name;
	}
	if (name && strchr(name, '/')) {
		if (!getcwd(m->scratch, sizeof(m->scratch))) {
			return NULL;
		}
		dlen = strlen(m->scratch);
		nlen = strlen(name);
		if (dlen + 1 + nlen >= sizeof(m->scratch)) {
			return NULL;
		}
		m->scratch[dlen] = '/';
		memcpy(m->scratch + dlen + 1, name, nlen + 1);
		*len = dlen + 1 + nlen;
		return m->scratch;
	}
	if (!ps->first || (name && name[0])) {
		return NULL; /* the vDSO */
	}
	if (!m->exe_len) {
		m->exe_len = readlink("/proc/self/exe", m->exe,
				      sizeof(m->exe));
		if (m->exe_len >= (ssize_t)sizeof(m->exe)) {
			m->exe_len = -1;
		}
	}
	if (m->exe_len <= 0) {
		/* no /proc: the name execve was given, if absolute */
		const char *fn = (const char *)getauxval(AT_EXECFN);

		if (fn && fn[0] == '/') {
			*len = strnlen(fn, 4095);
			return fn;
		}
	}
	if (m->exe_len <= 0) {
		return NULL;
	}
	*len = (size_t)m->exe_len;
	return m->exe;
}

/* object at, looked at, was sent whole: the prefix may grow */
static void sent_whole(struct pass *ps, size_t at,
		       const struct dl_phdr_info *info)
{
	if (ps->contig == at) {
		ps->contig = at + 1;
		ps->contig_phdr = info->dlpi_phdr;
	}
}

static int maps_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *ps = data;
	struct mtpl_maps *m = ps->m;
	const unsigned char *bid = NULL;
	const char *path;
	size_t plen = 0, bidlen;
	uint64_t mask = ~(uint64_t)(m->page - 1);
	size_t at = ps->idx++;
	int i;

	if (ps->skip && at > 0 && at + 1 < ps->skip) {
		ps->contig = at + 1;
		return 0;
	}
	if (ps->skip && at + 1 == ps->skip) {
		if (info->dlpi_phdr != m->prefix_phdr) {
			ps->broken = 1; /* an object came before it: again */
			return 1;
		}
		/* the prefix before it may not have been passed to us
		 * (loader-walk.h) */
		ps->contig = at;
	}
	if (!ps->resend && !ps->first) {
		/* every code segment sent already: the object's path and
		 * build-id are not looked for (most objects, each pass) */
		for (i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

			if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
			    ph->p_memsz &&
			    !pl_addr_set_has(&m->sent,
					     (info->dlpi_addr + ph->p_vaddr) &
						     mask)) {
				break;
			}
		}
		if (i == info->dlpi_phnum) {
			sent_whole(ps, at, info);
			return 0;
		}
	}
	path = object_path(ps, info->dlpi_name, &plen);
	ps->first = 0;
	if (!path) {
		/* nothing of it is ever sent (the vDSO): the prefix goes on
		 * past it, else every pass looked at every object after it */
		sent_whole(ps, at, info);
		return 0;
	}
	bidlen = mt_phdr_build_id(info, BUILD_ID_MAX, &bid);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned char hdr[1 + 4 + 24 + 1];
		uint64_t v[3];
		uint16_t l16 = (uint16_t)plen;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    !ph->p_memsz) {
			continue;
		}
		v[0] = (info->dlpi_addr + ph->p_vaddr) & mask;
		v[1] = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz +
			(uint64_t)m->page - 1) & mask;
		v[2] = ph->p_offset & mask;
		if (!ps->resend && pl_addr_set_has(&m->sent, v[0])) {
			continue;
		}
		hdr[0] = MTPL_MAPS_REC_MAP;
		memcpy(hdr + 1, &ps->pid, 4);
		memcpy(hdr + 5, v, sizeof(v));
		hdr[29] = (unsigned char)bidlen;
		put(ps, hdr, sizeof(hdr));
		put(ps, bid, bidlen);
		put(ps, &l16, 2);
		put(ps, path, plen);
		ps->records++;
		pend_add(m, v[0]);
	}
	/* sent now: the set may not keep it (then it is sent again while
	 * not in the prefix), but it need not be sent again */
	sent_whole(ps, at, info);
	return 0;
}

ssize_t mtpl_maps_write(struct mtpl_maps *m, uint32_t pid, unsigned flags,
			void *buf, size_t cap, uint32_t *records,
			size_t *need)
{
	struct pass ps = { .m = m, .pid = pid, .buf = buf, .cap = cap,
			   .first = 1 };
	size_t i;
	struct counts c = { 0, 0 };

	mtpl_loader_enter();
	dl_iterate_phdr(counts_cb, &c);
	if (flags & MTPL_MAPS_EXEC) {
		unsigned char rec[5] = { MTPL_MAPS_REC_EXEC };

		memcpy(rec + 1, &pid, 4);
		put(&ps, rec, sizeof(rec));
		ps.records++;
		ps.resend = 1;
	} else if (m->written && c.subs != m->subs) {
		ps.resend = 1;
	}
	/* the counters are read before the walk: an object added during it
	 * shows as a change next time, and is at worst sent twice */
	m->npend = 0;
	ps.skip = ps.resend ? 0 : m->prefix;
	pl_dl_walk(maps_cb, &ps, &ps.idx, ps.skip);
	if (ps.broken) {
		/* an object was inserted before the prefix's end (dlmopen):
		 * each object is looked at (no record was put: the walk
		 * stopped before any but the main program's, sent whole) */
		ps.len = 0;
		ps.records = 0;
		ps.first = 1;
		ps.idx = ps.skip = ps.contig = 0;
		ps.broken = 0;
		m->npend = 0;
		pl_dl_walk(maps_cb, &ps, &ps.idx, 0);
	}
	mtpl_loader_leave();
	if (ps.len > cap) {
		*need = ps.len;
		return -ENOSPC;
	}
	if (ps.resend) {
		pl_addr_set_clear(&m->sent);
	}
	for (i = 0; i < m->npend; i++) {
		/* not kept when the set cannot grow: sent again, harmless */
		(void)pl_addr_set_add(&m->sent, m->pend[i]);
	}
	m->npend = 0;
	m->prefix = ps.contig;
	m->prefix_phdr = ps.contig_phdr;
	m->adds = c.adds;
	m->subs = c.subs;
	m->written = 1;
	*records += ps.records;
	return (ssize_t)ps.len;
}

size_t mtpl_maps_fork_record(void *buf, size_t cap, uint32_t child,
			     uint32_t parent)
{
	unsigned char *p = buf;

	if (cap < 9) {
		return 0;
	}
	p[0] = MTPL_MAPS_REC_FORK;
	memcpy(p + 1, &child, 4);
	memcpy(p + 5, &parent, 4);
	return 9;
}

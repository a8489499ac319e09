/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/pidns.c - ids of other pid namespaces, as memtrack's
 * namespace sees them (pidns.h). The ids come from the traced processes,
 * so they are looked for, never trusted: a hello naming a process that is
 * not there finds nothing, and its events keep their ids, counted.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pidns.h"

struct entry {
	uint64_t ns;   /* 0: empty */
	int32_t inner; /* the id in ns */
	int32_t outer; /* memtrack's; 0: looked for, not found */
};

struct pl_pidns {
	struct entry *tab;
	size_t cap, n;
	uint64_t untranslated;
	int32_t (*lookup)(void *ctx, uint64_t ns, int32_t id);
	void *lookup_ctx;
};

void pl_pidns_set_lookup(struct pl_pidns *x,
			 int32_t (*lookup)(void *ctx, uint64_t ns, int32_t id),
			 void *ctx)
{
	x->lookup = lookup;
	x->lookup_ctx = ctx;
}

/* BPF's answer, if there is one */
static int32_t ask(const struct pl_pidns *x, uint64_t ns, int32_t id)
{
	return x->lookup ? x->lookup(x->lookup_ctx, ns, id) : 0;
}

struct pl_pidns *pl_pidns_new(void)
{
	return calloc(1, sizeof(struct pl_pidns));
}

void pl_pidns_free(struct pl_pidns *x)
{
	if (x) {
		free(x->tab);
		free(x);
	}
}

uint64_t pl_pidns_untranslated(const struct pl_pidns *x)
{
	return x ? x->untranslated : 0;
}

static size_t slot_of(const struct pl_pidns *x, uint64_t ns, int32_t inner)
{
	uint64_t h = (ns ^ ((uint64_t)(uint32_t)inner << 17)) *
		     0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 20) & (x->cap - 1);
}

static struct entry *lookup(const struct pl_pidns *x, uint64_t ns,
			    int32_t inner)
{
	size_t i;

	if (!x->cap) {
		return NULL;
	}
	for (i = slot_of(x, ns, inner); x->tab[i].ns;
	     i = (i + 1) & (x->cap - 1)) {
		if (x->tab[i].ns == ns && x->tab[i].inner == inner) {
			return &x->tab[i];
		}
	}
	return NULL;
}

static void put(struct pl_pidns *x, uint64_t ns, int32_t inner,
		int32_t outer)
{
	struct entry *e = lookup(x, ns, inner);
	size_t i;

	if (e) {
		e->outer = outer;
		return;
	}
	if (2 * (x->n + 1) > x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256, j;
		struct entry *t = calloc(cap, sizeof(*t)), *old = x->tab;
		size_t ocap = x->cap;

		if (!t) {
			return; /* not remembered: looked for again */
		}
		x->tab = t;
		x->cap = cap;
		for (j = 0; j < ocap; j++) {
			if (old[j].ns) {
				for (i = slot_of(x, old[j].ns, old[j].inner);
				     t[i].ns; i = (i + 1) & (cap - 1)) {
				}
				t[i] = old[j];
			}
		}
		free(old);
	}
	for (i = slot_of(x, ns, inner); x->tab[i].ns;
	     i = (i + 1) & (x->cap - 1)) {
	}
	x->tab[i] = (struct entry){ ns, inner, outer };
	x->n++;
}

/* The last id of the NSpid line of /proc/PATH/status (the innermost
 * namespace's), or 0; *levels: how many ids the line has. */
static int32_t innermost(const char *dir, int *levels)
{
	char path[320], buf[2048], *p, *end;
	int32_t id = 0;
	ssize_t n;
	int fd;

	*levels = 0;
	snprintf(path, sizeof(path), "%s/status", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	p = strstr(buf, "\nNSpid:");
	if (!p) {
		return 0;
	}
	p += strlen("\nNSpid:");
	for (;;) {
		long v = strtol(p, &end, 10);

		if (end == p) {
			break;
		}
		id = (int32_t)v;
		(*levels)++;
		p = end;
	}
	return id;
}

static int in_ns(const char *dir, uint64_t ns)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ns/pid", dir);
	return stat(path, &st) == 0 && (uint64_t)st.st_ino == ns;
}

/* memtrack's pid of the process whose id in ns is inner, or 0 */
static int32_t find_pid(uint64_t ns, int32_t inner)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int32_t found = 0;

	if (!d) {
		return 0;
	}
	while (!found && (de = readdir(d))) {
		char dir[300];
		int levels;

		if (de->d_name[0] < '1' || de->d_name[0] > '9') {
			continue;
		}
		snprintf(dir, sizeof(dir), "/proc/%s", de->d_name);
		if (innermost(dir, &levels) == inner && levels > 1 &&
		    in_ns(dir, ns)) {
			found = (int32_t)atoi(de->d_name);
		}
	}
	closedir(d);
	return found;
}

/* memtrack's id of thread inner (an id of ns) of process pid, or 0 */
static int32_t find_tid(int32_t pid, int32_t inner)
{
	char dir[64];
	struct dirent *de;
	int32_t found = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d) {
		return 0;
	}
	while (!found && (de = readdir(d))) {
		char tdir[340];
		int levels;

		if (de->d_name[0] < '1' || de->d_name[0] > '9') {
			continue;
		}
		snprintf(tdir, sizeof(tdir), "%s/%s", dir, de->d_name);
		if (innermost(tdir, &levels) == inner && levels > 1) {
			found = (int32_t)atoi(de->d_name);
		}
	}
	closedir(d);
	return found;
}

void pl_pidns_hello(struct pl_pidns *x, uint64_t ns, int32_t pid,
		    int32_t tid)
{
	int32_t opid, otid;

	struct entry *e;

	if (!x || !ns || pid <= 0 || tid <= 0) {
		return;
	}
	/* a process's first thread says hello for the process: looked for
	 * again (its pid may be a reused one); a later thread's process is
	 * known by then */
	e = tid == pid ? NULL : lookup(x, ns, pid);
	opid = e && e->outer ? e->outer : ask(x, ns, pid);
	if (!opid) {
		opid = find_pid(ns, pid);
	}
	put(x, ns, pid, opid);
	if (tid == pid) {
		return;
	}
	otid = ask(x, ns, tid);
	if (!otid && opid) {
		otid = find_tid(opid, tid);
	}
	put(x, ns, tid, otid);
}

void pl_pidns_xlate(struct pl_pidns *x, uint64_t ns, struct mt_event *ev)
{
	struct entry *p, *t;

	if (!x) {
		return;
	}
	p = lookup(x, ns, ev->pid);
	if ((!p || !p->outer) && x->lookup) {
		/* no hello read yet, or nobody found: BPF may know */
		put(x, ns, ev->pid, ask(x, ns, ev->pid));
		p = lookup(x, ns, ev->pid);
	}
	t = ev->tid == ev->pid ? p : lookup(x, ns, ev->tid);
	if ((!t || !t->outer) && x->lookup && ev->tid != ev->pid) {
		put(x, ns, ev->tid, ask(x, ns, ev->tid));
		t = lookup(x, ns, ev->tid);
	}
	if (!p || !t || !p->outer || !t->outer) {
		x->untranslated++;
		return;
	}
	ev->pid = p->outer;
	ev->tid = t->outer;
}

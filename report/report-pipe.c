/* SPDX-License-Identifier: MIT */
/*
 * Decoding and analysis on two threads. Decoding (zstd, then MessagePack)
 * costs more than the analysis; on one thread 'memtrack report' pays the
 * sum, on two about the larger. The decoder's thread copies each batch into
 * a free slot of a small ring; the analysis thread takes them in order.
 * The ring is allocated once: nothing is allocated per event or per batch.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "report-analyze.h"

#define SLOTS 8
#define SLOT_EVENTS 8192

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mt_event *ev[SLOTS];
	size_t len[SLOTS];
	size_t head, tail; /* filled slots are [tail, head), mod SLOTS */
	bool done;         /* no more batches will come */
	int err;           /* the analysis failed: stop decoding */
	struct mt_rep_state *st;
};

static void *analyze(void *arg)
{
	struct pipe *p = arg;
	size_t slot;
	int err;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (p->tail == p->head && !p->done) {
			pthread_cond_wait(&p->cond, &p->lock);
		}
		if (p->tail == p->head) {
			break;
		}
		slot = p->tail % SLOTS;
		pthread_mutex_unlock(&p->lock);
		err = mt_rep_on_events(p->st, p->ev[slot], p->len[slot]);
		pthread_mutex_lock(&p->lock);
		p->tail++;
		if (err && !p->err) {
			p->err = err;
		}
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int feed(void *ctx, const struct mt_event *ev, size_t n)
{
	struct pipe *p = ctx;

	while (n) {
		size_t k = n < SLOT_EVENTS ? n : SLOT_EVENTS, slot;
		int err;

		pthread_mutex_lock(&p->lock);
		while (p->head - p->tail == SLOTS && !p->err) {
			pthread_cond_wait(&p->cond, &p->lock);
		}
		err = p->err;
		pthread_mutex_unlock(&p->lock);
		if (err) {
			return err;
		}
		/* the slot at head is ours until head moves past it */
		slot = p->head % SLOTS;
		memcpy(p->ev[slot], ev, k * sizeof(*ev));
		p->len[slot] = k;
		pthread_mutex_lock(&p->lock);
		p->head++;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		ev += k;
		n -= k;
	}
	return 0;
}

/* metadata comes on the decoder's thread; the analysis does not use it,
 * but for a payload that changes how the events after it count: that one
 * waits until the analysis has taken every batch before it (it takes the
 * next one under the lock, after this) */
static int feed_meta(void *ctx, unsigned int variant, const void *data,
		     size_t len)
{
	struct pipe *p = ctx;

	if (mt_rep_meta_ordered(data, len)) {
		pthread_mutex_lock(&p->lock);
		while (p->tail != p->head) {
			pthread_cond_wait(&p->cond, &p->lock);
		}
		pthread_mutex_unlock(&p->lock);
	}
	return mt_rep_on_meta(p->st, variant, data, len);
}

int mt_rep_decode(struct mt_rep_state *st, int fd, const char *name)
{
	struct pipe p = { .st = st };
	pthread_t th;
	size_t i;
	int err;

	for (i = 0; i < SLOTS; i++) {
		p.ev[i] = malloc(SLOT_EVENTS * sizeof(struct mt_event));
		if (!p.ev[i]) {
			goto serial;
		}
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	if (pthread_create(&th, NULL, analyze, &p) != 0) {
		pthread_cond_destroy(&p.cond);
		pthread_mutex_destroy(&p.lock);
		goto serial;
	}
	err = mt_host_decode(NULL, fd, name, feed, feed_meta, &p);
	pthread_mutex_lock(&p.lock);
	p.done = true;
	pthread_cond_broadcast(&p.cond);
	pthread_mutex_unlock(&p.lock);
	pthread_join(th, NULL);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	for (i = 0; i < SLOTS; i++) {
		free(p.ev[i]);
	}
	/* the analysis's own failure is the one to report */
	return p.err ? p.err : err;
serial:
	/* no thread or no memory for the ring: the same work on one */
	for (i = 0; i < SLOTS; i++) {
		free(p.ev[i]);
	}
	return mt_host_decode(NULL, fd, name, mt_rep_on_events, mt_rep_on_meta,
			      st);
}

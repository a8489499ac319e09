/* SPDX-License-Identifier: MIT */
/*
 * The batch pipeline (see pipeline.h for the contract).
 *
 * Every piece of work (a batch of events or a metadata record) gets a
 * sequence number from the producer and lives in the pipeline until the
 * writer has handed its frame to the sink. One mutex guards all shared
 * state; three condition variables say who may be waiting:
 *
 *   prod_cond    the producer: queue space, window space, a free batch
 *   work_cond    the workers: something queued and a free encoder state,
 *                end of input, stop
 *   writer_cond  the writer: the next frame in order, end of input, stop
 *
 * Bounds (Q = queue_batches, N = workers):
 *   - the work queue holds at most Q items;
 *   - at most W = Q + 2 * N sequence numbers are in flight (submitted, not
 *     yet written): the producer waits while next_seq - write_seq >= W. So
 *     at most W frames exist at once, and the reorder buffer is a ring of W
 *     slots indexed by seq % W that can never collide;
 *   - B = Q + N + 1 batch buffers circulate: one being filled, at most Q
 *     queued, at most N being encoded. A buffer goes back to the pool as
 *     soon as its batch is encoded, before its frame is written;
 *   - N encoder states: every encode holds one, so at most N run at once.
 *
 * A short trace costs little (see bench/bench-write): threads start with
 * the first submitted work, batch buffers are made as batches are taken,
 * sized to the fill; the first batches are small and double (first_fill())
 * so that workers start early and, with several, all have a share; and at
 * finish the producer works too, taking queued batches while a state is
 * idle, and writes the frames when the writer never started (the thread
 * that completes the first frame in order starts it, unless the producer
 * has already finished, see complete_work()); a trace that never handed a
 * batch over is encoded and written by the producer alone, without a
 * thread.
 *
 * Why this cannot deadlock: workers wait for nothing but work and a state,
 * and a state is held only while encoding, which waits for nothing (the
 * producer takes one only at finish, to encode); whoever writes (the
 * writer, or the producer at finish) waits only for frame write_seq, which
 * is queued (workers take FIFO, so it is taken first), being encoded, or
 * done; the producer waits only for things that workers and the writer
 * release as they progress (window space: whoever completes frame
 * write_seq before the end starts the writer if it is not running). No thread waits while holding something another thread needs,
 * whatever N, Q, the batch size or the timing.
 *
 * Errors: the first failure is kept (set_error) and stops everything; the
 * plugin that failed has already said why, so the pipeline itself reports
 * nothing more than a debug line.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pipeline.h"

#define MAX_DEFAULT_WORKERS 8
#define MAX_DEFAULT_QUEUE 8
#define DEFAULT_BATCH_EVENTS 65536

struct batch {
	struct mt_event *events;
	size_t cap;   /* events the buffer holds; 0: none yet */
	size_t count;
};

/* Smallest batch of the ramp (first_fill()) and slice of the last one
 * (flush_last()). */
#define RAMP_MIN 1024

/* One unit of work: events (a batch or a slice of one) or a metadata
 * record. */
struct work {
	uint64_t seq;
	/* events to encode: a batch, or a slice of one (flush_last()) */
	const struct mt_event *events;
	size_t count;
	/* goes back to the pool once encoded; NULL for metadata and for
	 * all slices of a batch but one */
	struct batch *batch;
	/* metadata: non-NULL (see mt_pipeline_meta()) */
	unsigned int variant;
	void *meta;
	size_t meta_len;
};

struct slot {
	bool ready;
	struct mt_frame frame;
};

struct worker {
	struct mt_pipeline *p;
	pthread_t thread;
	bool started;
};

struct mt_pipeline {
	/* Set at creation, read-only afterwards. */
	const struct mt_host *host;
	const struct mt_encoder_ops *enc;
	const char *enc_name;
	const char *sink_name;
	const struct mt_sink_ops *sink;
	void *sink_state;
	size_t batch_events;
	void (*before_encode)(uint64_t seq, void *ctx);
	void *hook_ctx;
	unsigned int nworkers;
	size_t queue_cap;  /* Q */
	size_t window;     /* W: sequence numbers in flight */
	size_t nbatches;   /* B: batch buffers at most */

	struct worker *workers;
	void **states;     /* N encoder states */
	pthread_t writer;
	bool writer_started; /* set by whoever made it; read after joins */
	bool threads_started;
	bool sync_init;

	/* Producer only. */
	struct mt_emitter em;
	struct batch *cur; /* being filled through em */
	size_t fill;       /* events the current batch takes (ramp) */
	bool finished;
	bool sink_closed;

	pthread_mutex_t lock;
	pthread_cond_t prod_cond;
	pthread_cond_t work_cond;
	pthread_cond_t writer_cond;

	/* Guarded by lock. */
	struct work *queue; /* ring of queue_cap */
	size_t q_head;
	size_t q_len;
	struct batch **pool; /* stack of free batches */
	size_t pool_len;
	void **free_states;  /* stack of states no one encodes with */
	size_t nfree;
	struct slot *slots; /* reorder ring of window */
	uint64_t next_seq;  /* next sequence number to hand out */
	uint64_t write_seq; /* next sequence number to write */
	bool eof;           /* no more submissions */
	bool writer_on;     /* the writer runs or is being made */
	bool stop;          /* failure or abort: drop everything */
	int err;            /* first error, negative errno */
	const char *err_who;
	struct mt_pipeline_stats stats;

	struct batch batches[]; /* B of them */
};

/*
 * A batch's buffer is made when the producer first takes the batch, and
 * made again, larger, when it is taken for a larger fill (the ramp, see
 * first_fill()): a short trace holds what it fills and no more. Plain heap
 * memory: only what is filled is ever touched, and what malloc keeps comes
 * back warm. (Huge pages were tried: advised with MADV_HUGEPAGE, a first
 * touch could stall for milliseconds in compaction, and a 10,000-event
 * trace zeroed 2 MiB to fill 640 KiB.)
 */
static int batch_reserve(struct batch *b, size_t events)
{
	if (b->cap >= events) {
		return 0;
	}
	free(b->events);
	b->cap = 0;
	b->events = malloc(events * sizeof(struct mt_event));
	if (!b->events) {
		return -ENOMEM;
	}
	b->cap = events;
	return 0;
}

static int start_threads(struct mt_pipeline *p, bool writer);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Called with the lock held. The first error wins; the component that
 * failed has already logged why, so later failures (often caused by this
 * very shutdown) are dropped silently. */
static int set_error(struct mt_pipeline *p, int err, const char *who)
{
	if (!p->err) {
		p->err = err;
		p->err_who = who;
		mt_debug("pipeline: stopping after %s failure: %s", who,
			 strerror(-err));
	}
	p->stop = true;
	pthread_cond_broadcast(&p->prod_cond);
	pthread_cond_broadcast(&p->work_cond);
	pthread_cond_broadcast(&p->writer_cond);
	return 0;
}

static int encode_work(struct mt_pipeline *p, void *state, struct work *item,
		       struct mt_frame *frame, uint64_t *ns)
{
	uint64_t t0;
	int rc;

	if (p->before_encode) {
		p->before_encode(item->seq, p->hook_ctx);
	}
	/* Fields a plugin does not fill read as unknown. */
	memset(frame, 0, sizeof(*frame));
	t0 = now_ns();
	if (!item->meta) {
		rc = p->enc->encode(state, item->events, item->count, frame);
	} else {
		rc = p->enc->encode_meta(state, item->variant, item->meta,
					 item->meta_len, frame);
	}
	*ns = now_ns() - t0;
	return mt_log_plugin_failure("encoder", p->enc_name,
				     item->meta ? "encode_meta" : "encode", rc);
}

/*
 * Called with the lock held once item is encoded (rc from the encoder):
 * its batch goes back to the pool and its frame into the reorder ring.
 * Returns a negative errno when the pipeline is stopping.
 */
static int complete_work(struct mt_pipeline *p, struct work *item,
			 struct mt_frame *frame, uint64_t ns, int rc)
{
	size_t nev = item->meta ? 0 : item->count;

	if (item->batch) {
		p->pool[p->pool_len++] = item->batch;
		pthread_cond_broadcast(&p->prod_cond);
	}
	if (rc < 0) {
		set_error(p, rc, "encoder");
		return rc;
	}
	if (p->stop) {
		pthread_mutex_unlock(&p->lock);
		p->enc->frame_free(frame);
		pthread_mutex_lock(&p->lock);
		return p->err ? p->err : -ECANCELED;
	}
	p->stats.events += nev;
	p->stats.bytes_in += nev * sizeof(struct mt_event);
	p->stats.encode_ns += ns;
	p->slots[item->seq % p->window].frame = *frame;
	p->slots[item->seq % p->window].ready = true;
	if (item->seq == p->write_seq) {
		pthread_cond_signal(&p->writer_cond);
		if (!p->writer_on && !p->eof) {
			/* The first frame ready while events still come: the
			 * writer starts, and frames go out as they are ready.
			 * A trace that ends first (eof) has them written by
			 * the producer at finish, with no writer thread. */
			p->writer_on = true;
			pthread_mutex_unlock(&p->lock);
			start_threads(p, true);
			pthread_mutex_lock(&p->lock);
		}
	}
	return 0;
}

/*
 * Called with the lock held, work queued and a state free: encodes the
 * oldest item with that state (without the lock) and completes it.
 * Returns a negative errno when the pipeline is stopping.
 */
static int run_one(struct mt_pipeline *p)
{
	struct work item;
	struct mt_frame frame;
	void *state;
	uint64_t ns;
	int rc;

	item = p->queue[p->q_head];
	p->q_head = (p->q_head + 1) % p->queue_cap;
	p->q_len--;
	state = p->free_states[--p->nfree];
	pthread_cond_broadcast(&p->prod_cond);
	pthread_mutex_unlock(&p->lock);

	rc = encode_work(p, state, &item, &frame, &ns);
	free(item.meta);

	pthread_mutex_lock(&p->lock);
	p->free_states[p->nfree++] = state;
	/* a worker may be waiting for a state (the producer had it) */
	if (p->q_len) {
		pthread_cond_signal(&p->work_cond);
	}
	return complete_work(p, &item, &frame, ns, rc);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mt_pipeline *p = w->p;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		/* Work also needs a state: the producer may be using one. */
		while (!p->stop && !(p->q_len && p->nfree) &&
		       !(p->eof && !p->q_len)) {
			pthread_cond_wait(&p->work_cond, &p->lock);
		}
		/* After a failure queued work is dropped, not encoded. */
		if (p->stop || !p->q_len || run_one(p) < 0) {
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Called with the lock held and frame write_seq ready: hands it to the
 * sink (without the lock) and moves write_seq on. Returns a negative errno
 * when the sink failed.
 */
static int write_next(struct mt_pipeline *p)
{
	struct slot *s = &p->slots[p->write_seq % p->window];
	struct mt_frame frame = s->frame;
	size_t len = frame.len, raw_len = frame.raw_len;
	uint64_t t0, ns;
	int rc;

	s->ready = false;
	pthread_mutex_unlock(&p->lock);
	t0 = now_ns();
	rc = mt_log_plugin_failure("sink", p->sink_name, "write",
				   p->sink->write(p->sink_state, frame.data,
						  len));
	ns = now_ns() - t0;
	p->enc->frame_free(&frame);
	pthread_mutex_lock(&p->lock);
	if (rc < 0) {
		set_error(p, rc, "sink");
		return rc;
	}
	p->stats.frames++;
	/* frame_free() may have cleared the frame */
	p->stats.bytes_out += len;
	p->stats.bytes_raw += raw_len;
	p->stats.write_ns += ns;
	/* Only now does the sequence number leave the window, so the frame
	 * count stays bounded even with a slow sink. */
	p->write_seq++;
	pthread_cond_broadcast(&p->prod_cond);
	return 0;
}

static void *writer_main(void *arg)
{
	struct mt_pipeline *p = arg;
	struct slot *s;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		s = &p->slots[p->write_seq % p->window];
		while (!p->stop && !s->ready &&
		       !(p->eof && p->write_seq == p->next_seq)) {
			pthread_cond_wait(&p->writer_cond, &p->lock);
		}
		if (p->stop || !s->ready || write_next(p) < 0) {
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Starts the workers (writer false) or the writer. Signals (SIGINT,
 * SIGCHLD) are for the host's own threads; threads inherit the mask, so
 * everything is blocked while creating them. A failure stops the pipeline.
 */
static int start_threads(struct mt_pipeline *p, bool writer)
{
	sigset_t all, old;
	unsigned int i;
	int rc = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; !writer && i < p->nworkers && !rc; i++) {
		rc = pthread_create(&p->workers[i].thread, NULL, worker_main,
				    &p->workers[i]);
		p->workers[i].started = !rc;
	}
	if (writer) {
		rc = pthread_create(&p->writer, NULL, writer_main, p);
		p->writer_started = !rc;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		mt_err("pipeline: cannot start a thread: %s", strerror(rc));
		pthread_mutex_lock(&p->lock);
		set_error(p, -rc, "pipeline");
		pthread_mutex_unlock(&p->lock);
		return -rc;
	}
	return 0;
}

/*
 * Hands item to the workers under a new sequence number. With fresh, a
 * batch item also takes a free batch for the producer in the same step, so
 * the producer owns exactly one batch until the end. Starts the threads on
 * first use and waits while the pipeline is full.
 */
static int submit(struct mt_pipeline *p, struct work *item,
		  struct batch **fresh)
{
	int rc;

	if (!p->threads_started) {
		/* Workers run from the first batch handed over; a trace
		 * that fits in one batch never needs them. */
		p->threads_started = true;
		rc = start_threads(p, false);
		if (rc < 0) {
			return rc;
		}
	}
	pthread_mutex_lock(&p->lock);
	while (!p->stop &&
	       (p->q_len == p->queue_cap ||
		p->next_seq - p->write_seq >= p->window ||
		(fresh && !p->pool_len))) {
		pthread_cond_wait(&p->prod_cond, &p->lock);
	}
	if (p->stop) {
		/* An abort without an error cannot happen here: only the
		 * producer itself aborts. */
		rc = p->err ? p->err : -ECANCELED;
		goto end;
	}
	item->seq = p->next_seq++;
	p->queue[(p->q_head + p->q_len) % p->queue_cap] = *item;
	p->q_len++;
	if (fresh) {
		*fresh = p->pool[--p->pool_len];
	}
	pthread_cond_signal(&p->work_cond);
	rc = 0;
end:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* Points the emitter at batch b, to take p->fill events. */
static int emit_into(struct mt_pipeline *p, struct batch *b)
{
	if (batch_reserve(b, p->fill) < 0) {
		mt_err("pipeline: %s", strerror(ENOMEM));
		pthread_mutex_lock(&p->lock);
		set_error(p, -ENOMEM, "pipeline");
		pthread_mutex_unlock(&p->lock);
		p->cur = NULL;
		p->em.cur = p->em.end = NULL;
		return -ENOMEM;
	}
	p->cur = b;
	p->em.cur = b->events;
	p->em.end = b->events + p->fill;
	return 0;
}

/* Submits the current batch if it holds events and starts a new one. */
static int flush_current(struct mt_pipeline *p)
{
	struct work item = { 0 };
	struct batch *fresh;
	int rc;

	if (!p->cur) {
		/* finished */
		return p->err ? p->err : -EINVAL;
	}
	p->cur->count = (size_t)(p->em.cur - p->cur->events);
	if (!p->cur->count) {
		return 0;
	}
	item.batch = p->cur;
	item.events = p->cur->events;
	item.count = p->cur->count;
	rc = submit(p, &item, &fresh);
	if (rc < 0) {
		return rc;
	}
	/* The ramp: each batch twice the last, up to batch_events. */
	p->fill = p->fill * 2 < p->batch_events ? p->fill * 2 :
						  p->batch_events;
	return emit_into(p, fresh);
}

/*
 * The last batch, at finish, after which the producer has nothing to do
 * but wait: so it works. A trace that never handed a batch over is
 * encoded and written right here, without a thread. Otherwise the batch
 * is queued, in slices when there are several workers, and the producer
 * takes queued work, oldest first, as long as an encoder state is idle:
 * the end of a run does not wait for a worker to wake up. Encodes stay
 * within N at once: each holds a state.
 */
static int flush_last(struct mt_pipeline *p)
{
	struct work item = { 0 };
	struct mt_frame frame;
	const struct mt_event *first;
	size_t slices, per, done, total;
	uint64_t ns;
	int rc;

	if (!p->cur) {
		return p->err;
	}
	item.batch = p->cur;
	item.batch->count = (size_t)(p->em.cur - p->cur->events);
	item.events = item.batch->events;
	item.count = item.batch->count;
	p->cur = NULL;
	p->em.cur = p->em.end = NULL;
	first = item.events;
	if (item.count && !p->threads_started) {
		/* Frame 0, and every state is idle. */
		item.seq = p->next_seq++;
		rc = encode_work(p, p->states[0], &item, &frame, &ns);
		pthread_mutex_lock(&p->lock);
		p->eof = true;
		rc = complete_work(p, &item, &frame, ns, rc);
		if (rc == 0) {
			rc = write_next(p);
		}
		pthread_mutex_unlock(&p->lock);
		return rc;
	}
	/*
	 * The end of the run waits for the last frames, and the last batch
	 * is the largest of a short trace's ramp (35,488 of 100,000 events
	 * with 2 workers): cut into 2N slices (of RAMP_MIN events at least),
	 * whoever is free takes the next one, so the encoders finish about
	 * together (2 workers, 100,000 events: 1.61-1.66x -> 1.73-1.76x
	 * one worker).
	 */
	slices = p->nworkers > 1 ? 2 * (size_t)p->nworkers : 1;
	if (slices > item.count / RAMP_MIN) {
		slices = item.count / RAMP_MIN ? item.count / RAMP_MIN : 1;
	}
	total = item.count;
	per = (total + slices - 1) / slices;
	for (done = 0; done < total; done += item.count) {
		item.events = first + done;
		item.count = total - done < per ? total - done : per;
		rc = submit(p, &item, NULL);
		if (rc < 0) {
			return rc;
		}
		/* the batch goes back with the first slice: nothing is
		 * filled after the last batch */
		item.batch = NULL;
	}
	pthread_mutex_lock(&p->lock);
	/*
	 * Nothing more will be submitted: say so now, so that threads leave
	 * as soon as the queue is empty rather than sleep until the final
	 * join wakes them (waking a sleeping thread costs ~50 us here: a
	 * 10,000-event run spent 95 us in that join).
	 */
	p->eof = true;
	pthread_cond_broadcast(&p->work_cond);
	pthread_cond_broadcast(&p->writer_cond);
	while (!p->stop && p->q_len && p->nfree) {
		if (run_one(p) < 0) {
			break;
		}
	}
	/* No writer thread: the producer is the writer (see
	 * complete_work()), in order, as frames come. */
	while (!p->writer_on && !p->stop &&
	       p->write_seq != p->next_seq) {
		if (!p->slots[p->write_seq % p->window].ready) {
			pthread_cond_wait(&p->writer_cond, &p->lock);
		} else if (write_next(p) < 0) {
			break;
		}
	}
	rc = p->err;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static int emitter_flush(struct mt_emitter *em)
{
	struct mt_pipeline *p = (struct mt_pipeline *)
		((char *)em - offsetof(struct mt_pipeline, em));
	int rc;

	rc = flush_current(p);
	if (rc < 0) {
		/* Keeps mt_emit() failing: every later call comes back here
		 * and gets the same error. */
		p->em.cur = p->em.end;
	}
	return rc;
}

static int emitter_meta(struct mt_emitter *em, const void *data, size_t len)
{
	struct mt_pipeline *p = (struct mt_pipeline *)
		((char *)em - offsetof(struct mt_pipeline, em));

	return mt_pipeline_meta(p, MT_META_VARIANT, data, len);
}

struct mt_emitter *mt_pipeline_emitter(struct mt_pipeline *p)
{
	return &p->em;
}

int mt_pipeline_meta(struct mt_pipeline *p, unsigned int variant,
		     const void *data, size_t len)
{
	struct work item = { 0 };
	int rc;

	if (!p->enc->encode_meta) {
		return -ENOTSUP;
	}
	if (p->finished) {
		return -EINVAL;
	}
	/* The record must follow every event emitted so far. */
	rc = emitter_flush(&p->em);
	if (rc < 0) {
		return rc;
	}
	item.variant = variant;
	item.meta_len = len;
	item.meta = malloc(len ? len : 1);
	if (!item.meta) {
		mt_err("cannot queue metadata: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (len) {
		memcpy(item.meta, data, len);
	}
	rc = submit(p, &item, NULL);
	if (rc < 0) {
		free(item.meta);
	}
	return rc;
}

/* Stops the threads and waits for them. abort: drop what is queued. */
static int join_threads(struct mt_pipeline *p, bool abort)
{
	unsigned int i;

	pthread_mutex_lock(&p->lock);
	p->eof = true;
	if (abort) {
		p->stop = true;
	}
	pthread_cond_broadcast(&p->prod_cond);
	pthread_cond_broadcast(&p->work_cond);
	pthread_cond_broadcast(&p->writer_cond);
	pthread_mutex_unlock(&p->lock);

	for (i = 0; i < p->nworkers; i++) {
		if (p->workers[i].started) {
			pthread_join(p->workers[i].thread, NULL);
			p->workers[i].started = false;
		}
	}
	if (p->writer_started) {
		pthread_join(p->writer, NULL);
		p->writer_started = false;
	}
	return 0;
}

/* With the threads gone: releases frames and metadata left behind. */
static int drop_pending(struct mt_pipeline *p)
{
	size_t i;

	for (i = 0; i < p->q_len; i++) {
		struct work *item = &p->queue[(p->q_head + i) % p->queue_cap];

		free(item->meta);
		item->meta = NULL;
	}
	p->q_len = 0;
	for (i = 0; i < p->window; i++) {
		if (p->slots[i].ready) {
			p->enc->frame_free(&p->slots[i].frame);
			p->slots[i].ready = false;
		}
	}
	return 0;
}

/* Called with the lock held: until every frame handed over is written
 * (the writer broadcasts prod_cond after each) or the pipeline stops. */
static void wait_written(struct mt_pipeline *p)
{
	while (!p->stop && p->write_seq != p->next_seq) {
		pthread_cond_wait(&p->prod_cond, &p->lock);
	}
}

int mt_pipeline_sync(struct mt_pipeline *p)
{
	int rc = flush_current(p);

	if (rc < 0) {
		if (p->cur) {
			p->em.cur = p->em.end;
		}
		return rc;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->writer_on && p->write_seq != p->next_seq) {
		p->writer_on = true;
		pthread_mutex_unlock(&p->lock);
		start_threads(p, true);
		pthread_mutex_lock(&p->lock);
	}
	wait_written(p);
	rc = p->err;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int mt_pipeline_finish(struct mt_pipeline *p)
{
	int rc;

	if (p->finished) {
		return p->err;
	}
	p->finished = true;

	/* A failure already stopped everything: nothing left to flush. */
	flush_last(p);
	/*
	 * The output is complete once the writer, if it ever started, has
	 * written the last frame. Threads with nothing left to do leave by
	 * themselves and destroy() reaps them: joining them here made the
	 * end of a run wait for their exit (up to 66 us of a 0.7 ms run
	 * with 2 workers). After a failure they are stopped and joined now.
	 */
	pthread_mutex_lock(&p->lock);
	wait_written(p);
	rc = p->stop;
	pthread_mutex_unlock(&p->lock);
	if (rc) {
		join_threads(p, false);
		drop_pending(p);
	}

	rc = mt_log_plugin_failure("sink", p->sink_name, "close",
				   p->sink->close(p->sink_state));
	p->sink_closed = true;
	if (rc < 0 && !p->err) {
		p->err = rc;
		p->err_who = "sink";
	}
	if (p->err) {
		mt_debug("pipeline: finished with %s error: %s", p->err_who,
			 strerror(-p->err));
	}
	return p->err;
}

static int free_pipeline(struct mt_pipeline *p)
{
	size_t i;

	if (p->states) {
		for (i = 0; i < p->nworkers; i++) {
			if (p->states[i] && p->enc->destroy) {
				p->enc->destroy(p->states[i]);
			}
		}
	}
	for (i = 0; i < p->nbatches; i++) {
		free(p->batches[i].events);
	}
	if (p->sync_init) {
		pthread_cond_destroy(&p->writer_cond);
		pthread_cond_destroy(&p->work_cond);
		pthread_cond_destroy(&p->prod_cond);
		pthread_mutex_destroy(&p->lock);
	}
	free(p->workers);
	free(p->states);
	free(p->free_states);
	free(p->queue);
	free(p->pool);
	free(p->slots);
	free(p);
	return 0;
}

void mt_pipeline_destroy(struct mt_pipeline *p)
{
	if (!p) {
		return;
	}
	if (!p->finished) {
		p->finished = true;
		join_threads(p, true);
		drop_pending(p);
	} else {
		/* threads finish() left to leave by themselves */
		join_threads(p, false);
	}
	if (!p->sink_closed) {
		/* Aborting: the caller has a reason already, a close error
		 * would only be a secondary one. */
		p->sink->close(p->sink_state);
		p->sink_closed = true;
	}
	free_pipeline(p);
}

void mt_pipeline_get_stats(struct mt_pipeline *p, struct mt_pipeline_stats *s)
{
	pthread_mutex_lock(&p->lock);
	*s = p->stats;
	pthread_mutex_unlock(&p->lock);
}

static int check_config(const struct mt_pipeline_config *cfg)
{
	const struct mt_encoder_ops *enc = cfg->encoder;
	const struct mt_sink_ops *sink = cfg->sink;

	if (!cfg->host || !enc || !enc->create || !enc->encode ||
	    !enc->frame_free || !sink || !sink->write || !sink->close) {
		mt_err("pipeline: incomplete configuration");
		return -EINVAL;
	}
	if (cfg->batch_events > SIZE_MAX / sizeof(struct mt_event)) {
		mt_err("pipeline: batch of %zu events is too large",
		       cfg->batch_events);
		return -EINVAL;
	}
	return 0;
}

/*
 * The first batch's size; each next one is twice the last, up to
 * batch_events (flush_current()). Until a batch is handed over no worker
 * has anything to do, so a smaller first batch puts the encoding to work
 * sooner:
 *   - with several workers the first batches grow from batch_events / 64
 *     (not below RAMP_MIN), so that a short trace is cut into enough frames
 *     for every worker to have a share: 10,000 events are 1,024, 2,048,
 *     4,096 and the last batch (in slices, flush_last()), 100,000 are 6
 *     ramp batches and the last (1.7x faster with 2 workers than with one,
 *     where 65,536 + 34,464 were 1.1x). Only the first 64,512 events go
 *     into smaller frames;
 *   - one worker has nobody to share with: its first batch is a quarter,
 *     which hides 3/4 of the first fill (100,000 events: 11.8 -> 11.35 ms)
 *     while a trace of up to 16,384 events is still one batch, encoded
 *     without a thread at finish (smaller first batches measured slower
 *     there).
 */
static size_t first_fill(size_t batch_events, unsigned int workers)
{
	size_t fill = batch_events / (workers > 1 ? 64 : 4);

	if (batch_events <= RAMP_MIN) {
		return batch_events;
	}
	return fill < RAMP_MIN ? RAMP_MIN : fill;
}

int mt_pipeline_create(const struct mt_pipeline_config *cfg,
		       struct mt_pipeline **out)
{
	struct mt_pipeline *p = NULL;
	unsigned int nworkers = cfg->workers;
	size_t queue_cap = cfg->queue_batches;
	size_t nbatches, i;
	long ncpu;
	int rc;

	rc = check_config(cfg);
	if (rc < 0) {
		goto error;
	}
	if (!nworkers) {
		/* One zstd worker takes ~10M events/s (default level -5,
		 * and level 1 too), far beyond what uprobes deliver: more
		 * than 8 would only cost memory. */
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		nworkers = ncpu > 0 ? (unsigned int)ncpu : 1;
		if (nworkers > MAX_DEFAULT_WORKERS) {
			nworkers = MAX_DEFAULT_WORKERS;
		}
	}
	if (!queue_cap) {
		/* Enough to keep every worker busy while the producer
		 * fills the next batch; each queued batch is 4 MiB. */
		queue_cap = 2 * (size_t)nworkers;
		if (queue_cap > MAX_DEFAULT_QUEUE) {
			queue_cap = MAX_DEFAULT_QUEUE;
		}
	}
	nbatches = queue_cap + nworkers + 1;

	p = calloc(1, sizeof(*p) + nbatches * sizeof(struct batch));
	if (!p) {
		rc = -ENOMEM;
		goto nomem;
	}
	p->host = cfg->host;
	p->enc = cfg->encoder;
	p->enc_name = cfg->encoder_name ? cfg->encoder_name : "encoder";
	p->sink_name = cfg->sink_name ? cfg->sink_name : "sink";
	p->sink = cfg->sink;
	p->sink_state = cfg->sink_state;
	p->batch_events = cfg->batch_events ? cfg->batch_events :
					      DEFAULT_BATCH_EVENTS;
	p->before_encode = cfg->before_encode;
	p->hook_ctx = cfg->hook_ctx;
	p->nworkers = nworkers;
	p->queue_cap = queue_cap;
	p->window = queue_cap + 2 * (size_t)nworkers;
	p->nbatches = nbatches;

	p->workers = calloc(nworkers, sizeof(*p->workers));
	p->states = calloc(nworkers, sizeof(*p->states));
	p->free_states = calloc(nworkers, sizeof(*p->free_states));
	p->queue = calloc(queue_cap, sizeof(*p->queue));
	p->pool = calloc(nbatches, sizeof(*p->pool));
	p->slots = calloc(p->window, sizeof(*p->slots));
	if (!p->workers || !p->states || !p->free_states || !p->queue ||
	    !p->pool || !p->slots) {
		rc = -ENOMEM;
		goto nomem;
	}
	for (i = 0; i < nbatches; i++) {
		p->pool[p->pool_len++] = &p->batches[i];
	}

	/* N states, all made now so that bad args fail before anything
	 * runs. The plugin explains its refusal itself. */
	for (i = 0; i < nworkers; i++) {
		p->workers[i].p = p;
		rc = mt_log_plugin_failure("encoder", p->enc_name, "create",
					   p->enc->create(p->host,
							  cfg->encoder_args,
							  &p->states[i]));
		if (rc < 0) {
			p->states[i] = NULL;
			mt_debug("pipeline: %s refused its arguments",
				 p->enc_name);
			goto error;
		}
		p->free_states[p->nfree++] = p->states[i];
	}

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->prod_cond, NULL);
	pthread_cond_init(&p->work_cond, NULL);
	pthread_cond_init(&p->writer_cond, NULL);
	p->sync_init = true;

	p->em.flush = emitter_flush;
	p->em.meta = emitter_meta;
	p->fill = first_fill(p->batch_events, nworkers);
	rc = emit_into(p, p->pool[--p->pool_len]);
	if (rc < 0) {
		goto error;
	}

	*out = p;
	return 0;

nomem:
	mt_err("pipeline: %s", strerror(ENOMEM));
error:
	if (p) {
		free_pipeline(p);
	}
	return rc;
}

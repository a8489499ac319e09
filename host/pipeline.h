/* SPDX-License-Identifier: MIT */
/*
 * The batch pipeline: source events -> batches -> bounded work queue ->
 * N encoder workers (one frame per batch) -> bounded reorder buffer -> one
 * writer thread calling the sink in sequence order.
 *
 * Memory is bounded whatever the trace length: with Q = queue_batches and
 * N = workers, Q + N + 1 batch buffers circulate and at most Q + 2N frames
 * exist at once; a full queue blocks the producer (mt_emitter.flush).
 *
 * Errors: the first failure anywhere (encoder, sink) is kept with its errno
 * and message (logged where it happened, once); later failures caused by the
 * shutdown it triggers are not reported. After a failure the producer's
 * flush returns that error and mt_pipeline_finish() returns it.
 *
 * Threading: mt_pipeline_emitter(), mt_pipeline_meta(), mt_pipeline_sync()
 * and mt_pipeline_finish() are called from one producer thread.
 */
#ifndef MT_HOST_PIPELINE_H
#define MT_HOST_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include <memtrack/plugin.h>

struct mt_pipeline;

/* memtrack's metadata frames: zstd skippable-frame variant 0 (magic
 * 0x184D2A50); the payload starts with a 4-byte tag (see mt_emitter.meta). */
#define MT_META_VARIANT 0

struct mt_pipeline_config {
	const struct mt_host *host;
	const struct mt_encoder_ops *encoder;
	const char *encoder_name; /* for messages */
	const char *sink_name;    /* for messages */
	const char *encoder_args; /* may be NULL */
	const struct mt_sink_ops *sink;
	void *sink_state; /* opened by the caller; the pipeline closes it */
	unsigned int workers;  /* 0: online CPUs, at most 8 */
	size_t batch_events;   /* 0: 65536 */
	size_t queue_batches;  /* 0: 2 * workers, at most 8 */
	/* Test hook: called by a worker before encoding batch seq. */
	void (*before_encode)(uint64_t seq, void *ctx);
	void *hook_ctx;
};

struct mt_pipeline_stats {
	uint64_t events;       /* events encoded */
	uint64_t frames;       /* frames written */
	uint64_t bytes_in;     /* events * sizeof(struct mt_event) */
	uint64_t bytes_out;    /* bytes handed to the sink */
	uint64_t bytes_raw;    /* the frames' size before compression, where
				* the encoder says (mt_frame.raw_len) */
	uint64_t encode_ns;    /* summed over workers */
	uint64_t write_ns;     /* writer thread in sink->write */
};

/* Creates encoder states (validating encoder_args) and starts the threads.
 * On failure nothing is left running and the sink is NOT closed. */
int mt_pipeline_create(const struct mt_pipeline_config *cfg,
		       struct mt_pipeline **out);

/* The emitter a source fills. */
struct mt_emitter *mt_pipeline_emitter(struct mt_pipeline *p);

/* Queue an opaque metadata frame (encoder->encode_meta) after every event
 * emitted so far. */
int mt_pipeline_meta(struct mt_pipeline *p, unsigned int variant,
		     const void *data, size_t len);

/* Flush the partial batch and wait until every frame so far is written:
 * the stats are then exact. Returns 0 or the first error. */
int mt_pipeline_sync(struct mt_pipeline *p);

/* Flush the partial batch, wait for every frame to be written, close the
 * sink. Returns 0 or the first error. */
int mt_pipeline_finish(struct mt_pipeline *p);

/* Abort: stop threads without writing what is queued; closes the sink. */
void mt_pipeline_destroy(struct mt_pipeline *p);

void mt_pipeline_get_stats(struct mt_pipeline *p, struct mt_pipeline_stats *s);

#endif /* MT_HOST_PIPELINE_H */

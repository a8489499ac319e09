/* SPDX-License-Identifier: MIT */
/*
 * memtrack/plugin.h - the plugin ABI.
 *
 * A plugin is a shared object that exports exactly one symbol,
 * MT_PLUGIN_ENTRY_SYMBOL ("memtrack_plugin_v1"), a function returning a
 * const struct mt_plugin_desc. The host calls nothing else before it has
 * checked the descriptor:
 *   - desc->abi_major must equal the host's MT_ABI_MAJOR;
 *   - desc->abi_minor must not be newer than the host's MT_ABI_MINOR;
 *   - desc->size and every ops->size must cover at least the fields of
 *     ABI 1.0; fields beyond a plugin's size take their defaults (NULL
 *     callbacks mean "not supported");
 *   - bytes past the host's own size of a struct must be zero (since 1.1):
 *     a plugin that sets a field this host does not know is refused, with
 *     a line naming the file and the offset, rather than silently
 *     truncated (libbpf's rule for its option structs);
 *   - desc->name matches [a-z0-9-]+, at most 64 characters (since 1.1 the
 *     loader refuses anything else, '_' included).
 * Structures only ever grow at their end. What a minor version added is
 * marked "since 1.N" where it is declared.
 *
 * Conventions for every callback that crosses the boundary:
 *   - Errors: a negative errno value; the plugin first explains the failure
 *     through host->log() (name the file, option or offset involved). The
 *     host reports the first error it receives, so say it precisely.
 *   - Ownership: events handed to a plugin are borrowed for the duration of
 *     the call. Memory a plugin hands out (encoded frames, state) is released
 *     through the same plugin (frame_free, destroy).
 *   - Args: the text after "NAME:" on the command line, or NULL; the plugin
 *     parses it and refuses what it does not understand with -EINVAL.
 *   - Threading: stated per kind below.
 *   - A failed create() or open() (negative return) has released whatever
 *     it allocated itself: the host then calls neither destroy() nor
 *     close() and never reads *state, which the plugin may have written.
 *
 * The header is C11 and C++11 (since 1.1): a plugin may be written in C++;
 * MT_PLUGIN_DEFINE gives the entry point C linkage.
 * Plugins are found by file name "<kind>-<name>.so" in the plugin search path
 * (MEMTRACK_PLUGIN_PATH, the build tree, then pkg-config's plugindir).
 */
#ifndef MEMTRACK_PLUGIN_H
#define MEMTRACK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <memtrack/event.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_ABI_MAJOR 1
#define MT_ABI_MINOR 3

#define MT_PLUGIN_ENTRY_SYMBOL "memtrack_plugin_v1"

/* since 1.1: C linkage for the entry point of a plugin written in C++ */
#ifdef __cplusplus
#define MT_EXTERN_C extern "C"
#else
#define MT_EXTERN_C
#endif

#if defined(__GNUC__)
#define MT_PLUGIN_EXPORT __attribute__((visibility("default")))
#define MT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MT_PLUGIN_EXPORT
#define MT_PRINTF(a, b)
#endif

enum mt_plugin_kind {
	MT_PLUGIN_SOURCE = 1,
	MT_PLUGIN_ENCODER = 2,
	MT_PLUGIN_SINK = 3,
};

enum mt_log_level {
	MT_LOG_ERROR = 0,
	MT_LOG_WARN = 1,
	MT_LOG_INFO = 2,
	MT_LOG_DEBUG = 3,
};

/* Decoder callbacks. Return 0 to go on, non-zero to stop decoding (that
 * value is returned by decode()). */
typedef int (*mt_event_cb)(void *ctx, const struct mt_event *events,
			   size_t count);
/* A zstd skippable frame: magic variant (0..15) and payload. May be NULL. */
typedef int (*mt_meta_cb)(void *ctx, unsigned int variant, const void *data,
			  size_t len);

/*
 * Services of the host. Valid from create() until destroy() returns.
 * log() and decode() may be called from any thread.
 */
struct mt_host {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
	/* plugin: the plugin's name, prefixed to the message by the host */
	void (*log)(const struct mt_host *host, enum mt_log_level level,
		    const char *plugin, const char *fmt, ...) MT_PRINTF(4, 5);
	/* current verbosity (enum mt_log_level): skip costly debug output */
	int log_level;
	/* Decode a stream with the decoder of encoder plugin `encoder` (NULL:
	 * "msgpack-zstd"); same contract as mt_encoder_ops.decode. Lets a
	 * source replay files without linking a codec of its own. Any
	 * thread, several at once: each call decodes with a state of its
	 * own and runs the callbacks on the calling thread. */
	int (*decode)(const struct mt_host *host, const char *encoder, int fd,
		      const char *name, mt_event_cb on_events,
		      mt_meta_cb on_meta, void *ctx);
	/* A timestamped occurrence for --stats, from the poller thread:
	 * what is "stop" (the source paused process pid so that its ring
	 * does not overflow) or "resume" (it let it go); ts_ns is
	 * CLOCK_MONOTONIC. The host pairs them into stop-to-resume latencies
	 * and the share of the run each process spent stopped. */
	void (*note)(const struct mt_host *host, const char *what, int32_t pid,
		     uint64_t ts_ns);
};

/* ------------------------------------------------------------------ */
/* Sources: produce events.                                            */
/* ------------------------------------------------------------------ */

/*
 * Where a source puts events: mt_emit() hands out the next free slot of the
 * current batch; the host's flush() moves a full batch on to the encoders.
 * Fields are the host's; a source only calls mt_emit() and meta(). Not
 * thread-safe: one source thread.
 *
 * The only ABI struct without a size header, on purpose: 1.0 plugins have
 * mt_emit() inlined, reading cur, end and flush at offsets 0, 8 and 16, so
 * a leading size would move them (a major bump). None is needed either:
 * the host fills this struct and is never older than a plugin's minor
 * (a newer minor is refused), so every field a plugin knows is there.
 * Fields only grow at its end.
 */
struct mt_emitter {
	struct mt_event *cur;
	struct mt_event *end;
	/* Makes room; returns 0 or a negative errno (the pipeline failed). */
	int (*flush)(struct mt_emitter *em);
	/* Stores len bytes of metadata in the output after every event
	 * emitted so far, where readers of the format skip it (a zstd
	 * skippable frame). By convention data begins with a 4-byte tag
	 * naming its content ("MTKS" run summary, "MTKT" stack table,
	 * "MTKM" executable mappings). The data is copied. Returns 0 or a
	 * negative errno (-ENOTSUP: the encoder cannot). */
	int (*meta)(struct mt_emitter *em, const void *data, size_t len);
};

/* The next slot to fill, or NULL when the pipeline has failed: the host
 * has logged why, so the source returns -EPIPE from read() or drain()
 * without a message of its own, and the recording ends. */
static inline struct mt_event *mt_emit(struct mt_emitter *em)
{
	if (em->cur == em->end && em->flush(em) < 0) {
		return NULL;
	}
	return em->cur++;
}

/* What a source traces. */
struct mt_target {
	uint32_t size;
	/* root pid of the command; 0 when the source runs without one */
	int32_t root_pid;
	/* the root was spawned stopped: the source arms itself, then the host
	 * lets it run (so the first instruction is already traced) */
	uint32_t root_is_held;
	uint32_t start_disabled; /* --start-disabled */
	/* since 1.3: for a source with MT_SOURCE_GATES_EXECS, when
	 * has_exec_gate is 1, exec_gate_fd is the listener of the seccomp
	 * filter the held root was given (0: no filter, it could not be
	 * installed); the source owns the fd from start() on */
	uint32_t has_exec_gate;
	int32_t exec_gate_fd;
	/* since 1.3: memtrack --pid: the running processes to attach to,
	 * for a source with MT_SOURCE_CAN_ATTACH (nattach 0: none; then
	 * root_pid is the first and root_is_held 0). Recording starts for
	 * each once the source is in place, and the children they fork from
	 * then on are followed. */
	uint32_t nattach;
	const int32_t *attach_pids;
};

/* Source descriptor flags */
#define MT_SOURCE_NEEDS_COMMAND (1u << 0) /* "-- CMD" is required */
#define MT_SOURCE_NO_COMMAND (1u << 1)    /* "-- CMD" is refused */
/*
 * Since 1.2: the host options a source takes. The host appends each one
 * given to the args of --source NAME:ARGS, as an arg of the same name
 * (",ring-size=16M", ",stacks"); to a source of 1.2 or newer without the
 * flag it is a usage error ("--ring-size does not apply to source 'x'").
 * A source of an older ABI gets them all and refuses what it does not
 * know.
 */
#define MT_SOURCE_TAKES_RING_SIZE (1u << 2)  /* --ring-size: ring-size=BYTES */
#define MT_SOURCE_TAKES_WATERMARKS (1u << 3) /* --high-watermark,
					      * --low-watermark: the same
					      * names =X */
#define MT_SOURCE_TAKES_STACKS (1u << 4)     /* --stacks, --stack-depth:
					      * stacks, stack-depth=N */
/* --sample-bytes, --seed: sample-bytes=SIZE, seed=N (a flag added with
 * no change of the vtable: a 1.3 host that does not know it refuses the
 * options as for any source that does not take them) */
#define MT_SOURCE_TAKES_SAMPLING (1u << 7)
/*
 * Since 1.3: the source wants to see every exec and every executable file
 * mapping of the traced tree before it happens. The host installs in the
 * held root, before its exec, a seccomp filter that makes execve(),
 * execveat() and mmap() of a file with PROT_EXEC wait for the source
 * (SECCOMP_RET_USER_NOTIF), and hands the listener to start() in
 * target->exec_gate_fd. The filter is inherited by the whole tree and
 * outlives memtrack: the source must answer every notification (with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE) as long as a process has the filter,
 * after destroy() too; a closed listener fails those calls with ENOSYS.
 */
#define MT_SOURCE_GATES_EXECS (1u << 5)
/* Since 1.3: the source records processes already running (memtrack
 * --pid), given in mt_target.attach_pids; without it --pid is refused. */
#define MT_SOURCE_CAN_ATTACH (1u << 6)

/* Counters a source keeps, read by the host between reads (--stats). */
struct mt_source_stats {
	uint32_t size;      /* set by the host: how much of this it has */
	uint32_t stopped;   /* processes paused right now */
	uint64_t dropped;   /* events lost (failed ring reservations) */
	uint64_t ring_size; /* bytes; 0: the source has no ring */
	uint64_t ring_used; /* bytes written and not yet read */
	uint64_t stops;     /* pauses so far */
	uint64_t resumes;   /* pauses ended so far */
	/* since 1.1 */
	uint64_t waits;     /* producers waited for room in a full ring */
	uint64_t wait_ns;   /* total time they waited */
	/* call stacks (0 when the source records none); the struct's size
	 * tells an older peer they are not there */
	uint64_t stacks;           /* distinct stacks recorded */
	uint64_t stacks_truncated; /* of them, cut short ([truncated]) */
	uint64_t unwind_files;     /* files with an unwind table */
	uint64_t unwind_bytes;     /* what their tables take */
	uint64_t unwind_bytes_max; /* the bound (0: none) */
	uint64_t unwind_build_ns;  /* time spent building them */
	/* processes of the traced tree the source could not follow (its
	 * map of them was full): events of theirs are missing, which the
	 * host reports, exiting 1 */
	uint64_t untracked;
	/* calls of traced threads the source could not record (its map of
	 * threads in a call was full): their events are missing, which the
	 * host reports, exiting 1 */
	uint64_t unrecorded;
	/* Added within 1.2 (the struct's size says whether a peer has
	 * them). Records that traced processes broke, which the source
	 * dropped: a source whose producers write memory it reads (the
	 * preload source's shared ring) validates every record, and counts
	 * here what could not be a record (an overwritten slot, a malformed
	 * metadata chunk, an unknown kind): events are missing, which the
	 * host reports, exiting 1 */
	uint64_t damaged;
	/* processes that stopped recording because the source's consumer
	 * seemed gone to them (a frozen memtrack): their later events are
	 * missing, which the host reports, exiting 1 */
	uint64_t gave_up;
	/* Added within 1.3 (the struct's size says whether a peer has
	 * them): processes of the tree that ended, by who recorded their
	 * allocator calls (--source auto; 0 and 0 for other sources) */
	uint64_t procs_interposer;
	uint64_t procs_uprobes;
};

/* read() result flags */
#define MT_SOURCE_EOF 1 /* the source will produce nothing more */

/*
 * Threading: every callback runs on the host's poller thread.
 */
struct mt_source_ops {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t flags; /* MT_SOURCE_* */

	int (*create)(const struct mt_host *host, const char *args,
		      void **state);
	/* Arm for the target. Called once, before the root command runs. */
	int (*start)(void *state, const struct mt_target *target);
	/* File descriptor the host polls for readability, or -1 when read()
	 * always has work until EOF (a file replay). */
	int (*poll_fd)(void *state);
	/* Move at most max events into em. Returns the number moved (>= 0) or a
	 * negative errno; sets *flags |= MT_SOURCE_EOF when exhausted. 0
	 * without EOF means "nothing now": the host waits for poll_fd to be
	 * readable, and calls read() again; a source without a poll fd is
	 * called again at once, so it must not return 0 without EOF for
	 * long. Fewer than max also ends the host's reading until the next
	 * poll. When mt_emit() gives NULL: return -EPIPE. */
	int (*read)(void *state, struct mt_emitter *em, size_t max,
		    uint32_t *flags);
	/* Called between reads and on every poll tick: housekeeping such as
	 * resuming paused producers. May be NULL. */
	int (*maintain)(void *state);
	/* Move every event buffered now into em: everything producers had
	 * written when drain() was called (not what they write meanwhile, so
	 * it ends under sustained load). Called for a control 'drain' and at
	 * shutdown, once the command has exited. May be NULL. */
	int (*drain)(void *state, struct mt_emitter *em);
	/* Recording on (1) or off (0). May be NULL: not supported. */
	int (*set_enabled)(void *state, int enabled);
	/* Resume everything paused and release every resource. Called on
	 * every exit path. */
	void (*destroy)(void *state);
	/* Fill out (out->size says how much the host has). May be NULL. */
	int (*get_stats)(void *state, struct mt_source_stats *out);

	/* since 1.1 */
	/* Environment the command must run with: NULL-terminated
	 * "NAME=VALUE" strings, owned by the source until destroy(). Called
	 * once, after create() and before the command is spawned; argv is the
	 * command. The host sets each variable in the command's environment;
	 * for LD_PRELOAD it puts the value in front of the one the user has,
	 * so that both are loaded, the source's first. Returns NULL with
	 * errno set on failure (logged), or NULL with errno 0: nothing to
	 * set. May be NULL. */
	const char *const *(*command_env)(void *state,
					  const char *const *argv);
};

/* ------------------------------------------------------------------ */
/* Encoders: turn a batch of events into one self-contained frame.      */
/* ------------------------------------------------------------------ */

/* Zeroed by the host before encode(): fields a plugin does not know stay
 * 0, "unknown". */
struct mt_frame {
	void *data;
	size_t len;
	size_t raw_len; /* bytes before compression (for stats), 0: unknown */
};

/*
 * Threading: the host creates one encoder state per worker; a state is used
 * by one thread at a time, though not always the same thread (a state goes
 * to whichever thread encodes next, under the host's lock, which orders
 * each use after the last). frame_free() may be called from any thread,
 * with any state's frame.
 */
struct mt_encoder_ops {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t flags; /* none yet */

	int (*create)(const struct mt_host *host, const char *args,
		      void **state);
	/* Encode count events (count may be 0) into one frame the plugin
	 * allocates; released with frame_free(). */
	int (*encode)(void *state, const struct mt_event *events, size_t count,
		      struct mt_frame *out);
	void (*frame_free)(struct mt_frame *frame);
	/* Wrap opaque metadata so that readers of the format skip it (a zstd
	 * skippable frame for msgpack-zstd). May be NULL. */
	int (*encode_meta)(void *state, unsigned int variant, const void *data,
			   size_t len, struct mt_frame *out);
	void (*destroy)(void *state);

	/* Optional decoder: read a whole stream from fd (name is for
	 * messages), calling on_events with decoded events in file order.
	 * Returns 0 at a clean end, a negative errno on error (after logging
	 * what and at which byte offset), or the callback's non-zero value. */
	int (*decode)(void *state, int fd, const char *name,
		      mt_event_cb on_events, mt_meta_cb on_meta, void *ctx);
};

/* ------------------------------------------------------------------ */
/* Sinks: store frames.                                                 */
/* ------------------------------------------------------------------ */

/*
 * Threading: one thread calls write() in frame order (the host's writer
 * or, for a trace that ends before the writer is needed, the thread that
 * finishes it), then close(). A failed write leaves what was written
 * before intact.
 */
struct mt_sink_ops {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t flags; /* none yet */

	int (*open)(const struct mt_host *host, const char *args,
		    void **state);
	/* Store len bytes, all of them: data is borrowed for the call (the
	 * host frees the frame once write() returns) and each call is one
	 * whole frame. There is no partial write: the sink loops on short
	 * writes itself. Returns 0, or a negative errno after logging what
	 * failed; the host then writes nothing more and calls close(). */
	int (*write)(void *state, const void *data, size_t len);
	/* Flush and release; returns the first error not reported yet.
	 * Called once for every successful open(), after a failed write()
	 * too. */
	int (*close)(void *state);
};

/* ------------------------------------------------------------------ */
/* The descriptor.                                                      */
/* ------------------------------------------------------------------ */

struct mt_plugin_desc {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t kind;           /* enum mt_plugin_kind */
	const char *name;        /* [a-z0-9-]+, 1-64, unique per kind */
	const char *description; /* one line */
	const char *version;     /* the plugin's own version */
	union {
		const struct mt_source_ops *source;
		const struct mt_encoder_ops *encoder;
		const struct mt_sink_ops *sink;
	} ops;
};

typedef const struct mt_plugin_desc *(*mt_plugin_entry_fn)(void);

/* Helpers for plugin authors: fill the size and version fields. */
#define MT_OPS_HEADER(type)                                                \
	.size = sizeof(struct type), .abi_major = MT_ABI_MAJOR,            \
	.abi_minor = MT_ABI_MINOR

#define MT_PLUGIN_DEFINE(desc_var)                                         \
	MT_EXTERN_C MT_PLUGIN_EXPORT const struct mt_plugin_desc *         \
	memtrack_plugin_v1(void);                                          \
	const struct mt_plugin_desc *memtrack_plugin_v1(void)             \
	{                                                                  \
		return &(desc_var);                                        \
	}

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACK_PLUGIN_H */

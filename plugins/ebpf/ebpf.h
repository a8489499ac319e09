/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/ebpf.h - internals of the eBPF source plugin.
 */
#ifndef MT_PLUGIN_EBPF_H
#define MT_PLUGIN_EBPF_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <memtrack/plugin.h>

#include "memtrack.h"
#include "key-index.h"

struct memtrack_bpf;
struct ring_buffer;
struct bpf_link;
struct ebpf_freezer;
struct ebpf_sampler;

#define EBPF_NAME "ebpf"

/* Why a process is stopped: it stays stopped until no reason is left
 * (and no stop we have not read about yet is in the `holds` map). */
#define HOLD_ATTACH (1u << 0)
#define HOLD_THROTTLE (1u << 1)

struct ebpf_hold {
	pid_t pid;
	unsigned int reasons;
};

struct ebpf_file {
	uint64_t dev; /* kernel dev_t, as in /proc/PID/maps */
	uint64_t ino;
};

/* metadata waiting for the next read() (see stacks.c) */
struct ebpf_blob {
	unsigned char *data;
	size_t len, cap;
	uint32_t count; /* records */
};

/* build-id of an executable file */
struct ebpf_bid {
	uint64_t dev, ino;
	size_t len;
	unsigned char id[32];
};

/* an executable mapping of a process, and its unwind table (unwind.c) */
struct ebpf_range {
	unsigned long start, end;
	uint64_t dev, ino, off; /* what it maps, as /proc/PID/maps says */
	uint64_t bias;
	struct mt_unw_table t;
};

/* an executable file's unwind table: a slice of unw_rows (row_count 0:
 * none), and its segments, for the load bias of a mapping */
struct ebpf_unw_file {
	uint64_t dev, ino;
	struct mt_unw_table t;
	size_t nloads;
	uint64_t load_off[8], load_vaddr[8], load_size[8];
};

/* the executable mappings of a process already recorded: what its stacks'
 * frames are checked against (stacks.c) */
struct ebpf_seen {
	pid_t pid;
	size_t n, cap;
	struct ebpf_range *range;
	/* the process's stack generation (BPF's stack_gen): one more each
	 * time addresses of its change meaning (an exec, a mapping where
	 * another was), so that a stack of the same return addresses gets a
	 * new id, resolved through the new mappings */
	uint32_t gen;
	/* the unw_chunks its unw_procs entry names (unwind.c): each one's
	 * first address (where its part of the mappings begins) and a digest
	 * of what it holds, so that a push rewrites only what changed */
	uint32_t chunk[MT_UNW_CHUNKS];
	uint64_t chunk_lo[MT_UNW_CHUNKS];
	uint64_t chunk_sum[MT_UNW_CHUNKS];
	uint32_t nchunks;
};

/* what the exec gate's thread last did, shared with the watchdog */
struct ebpf_gate_shared {
	uint64_t received; /* id of the last notification received */
	uint64_t answered; /* id of the last answered */
};

/*
 * With stacks, an executable mapping the exec gate sees asked for at a
 * fixed address (the loader maps each library's code so) is recorded by
 * the poller thread, which owns the recording's mappings, while the
 * caller waits in the gate: one request at a time (the gate has one
 * thread), woken through efd in the poller's epoll set.
 */
enum { GM_IDLE, GM_QUEUED, GM_TAKEN, GM_DONE };

struct ebpf_gate_map {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC */
	int efd;		/* -1: not used (no stacks, no gate) */
	int state;		/* GM_* */
	int closing;		/* the gate stops: nobody waits */
	int err;		/* DONE: 0 when recorded */
	pid_t tgid, tid;
	uint64_t start, end, off, dev, ino;
	char file[64];		/* /proc/TID/fd/N: the file, while it waits */
	char name[4096];	/* its path, as the mappings name it */
};

struct ebpf_state {
	const struct mt_host *host;
	struct memtrack_bpf *skel;
	/* two readers polled through one epoll fd: the control ring is read
	 * whole before every chunk, the event ring a chunk at a time */
	struct ring_buffer *ctl_rb;
	struct ring_buffer *rb;
	int epfd;
	int holds_fd;
	size_t ring_size;
	/* unread bytes above which BPF stops a producer, below which
	 * maintain() resumes them all */
	size_t high_wm;
	size_t low_wm;
	/* write end of the pipe to the watchdog process (EOF: memtrack is
	 * gone, resume everything) */
	int wd_fd;
	/* read-only view of the event ring's positions (libbpf 1.1 has no
	 * ring__avail_data_size()) */
	volatile uint64_t *cons_pos;
	volatile uint64_t *prod_pos;
	long page_size;

	/* the exec gate (gate.c): the seccomp listener and its thread */
	int gate_fd;
	int gate_stop_fd;
	int gate_running;
	pthread_t gate_thread;
	struct ebpf_gate_shared *gate_shared;
	uint64_t gate_calls; /* notifications answered */
	uint64_t gate_files; /* files attached ahead by it */
	/* calls that attached nothing, and the time they took */
	uint64_t gate_plain, gate_plain_ns;
	/* with stacks: execs and executable mappings recorded without a
	 * stop (gate_stacks: the gate does it, memtrack in the root pid
	 * namespace, where its pids are BPF's), and the stops made */
	int gate_stacks;
	struct ebpf_gate_map gmap;
	uint64_t gate_execs, gate_maps, gate_map_timeouts;
	uint64_t attach_stops, attach_stops_exec;
	/* whole reads of a process's /proc/PID/maps (attach.c, stacks.c):
	 * a few per process, never one per library (issue 24); -v says */
	uint64_t maps_reads;
	/* unwinder pushes, and the chunks they wrote (unwind.c): a new
	 * mapping writes the one chunk it falls in, not all (issue 24) */
	uint64_t unw_pushes, unw_chunk_writes;

	/* the freezer (freeze.c): holds at the high watermark that nobody
	 * sees; SIGSTOP past stop_wm, or for a process it cannot freeze */
	int no_freeze;		/* source arg freeze=0 */
	size_t stop_wm, stack_stop_wm;
	struct ebpf_freezer *fz; /* NULL: no freezer, holds are stops */

	/* files, links and attach_count: the poller thread and the gate's
	 * attach at once */
	pthread_mutex_t attach_lock;
	/* executable files handled (attached, or nothing to attach) */
	struct ebpf_file *files;
	size_t nfiles, files_cap;
	struct mt_key_index files_idx; /* (dev, ino) -> index in files */
	struct bpf_link **links;
	size_t nlinks, links_cap;
	/* scope.c: uprobes that trap in the tree only (scope_ok), their
	 * tracefs events (ids), and the filter's perf events (fds) */
	int tp_attached; /* memtrack_bpf__attach() done */
	int scope_system; /* source arg scope=system */
	int scope_ok;
	/* turns perf's hooks on beside the load (ebpf_scope_warm_start()) */
	pthread_t scope_warm_thread;
	int scope_warming;
	uint64_t scope_warm_ns;
	const char *scope_tracefs;
	int scope_uev_fd;
	struct ebpf_scope_ev *scope_evs;
	size_t scope_nevs, scope_evs_cap;
	uint64_t scope_appends;
	/* made beside the load (ebpf_preattach_start()): no program yet */
	int scope_defer;
	struct ebpf_scope_deferred *scope_deferred;
	size_t scope_ndeferred, scope_deferred_cap;
	pthread_t pre_thread;
	int pre_running;
	size_t pre_nfiles;
	struct ebpf_pre_file {
		char path[PATH_MAX];
		uint64_t dev, ino;
		int err;
	} pre_files[2];
	uint64_t pre_ns;
	unsigned long test_scope_hold_ms; /* MEMTRACK_TEST_SCOPE_HOLD_MS */
	int *scope_fds;
	/* per fd: the process it was opened on, and whether its event is
	 * one of program files (handover: kept at the hello) */
	struct ebpf_scope_tag *scope_fd_tag;
	size_t scope_nfds, scope_fds_cap, scope_tgids_cap;
	uint64_t scope_opens, scope_passes, scope_waits, scope_ns;
	uint64_t scope_exec_covers, scope_releases, scope_release_ns;
	/* handover: the last group of filter events opened (scope.c:
	 * `carrier`), those a hello closed (some of), the execs that kept
	 * the events they carried */
	uint32_t scope_group;
	uint32_t *scope_dead;
	size_t scope_ndead, scope_dead_cap;
	int scope_carry_off; /* no room to note a dead group */
	uint64_t scope_exec_carried;
	/* what a hello releases, closed on a thread of its own (scope.c:
	 * release_main()); rel_lock guards rel and the three stats */
	pthread_mutex_t rel_lock;
	pthread_cond_t rel_cond;
	pthread_t rel_thread;
	int rel_running, rel_failed, rel_stop;
	struct ebpf_scope_rel {
		int fd;
		uint64_t hello_ts; /* its hello's trap */
	} *rel;
	size_t rel_n, rel_cap;
	uint64_t hello_lat_ns, hello_lat_n, hello_lat_max;
	/* source arg handover (--source auto): a process whose interposer
	 * (the preload source's) says hello records its own allocator
	 * calls, the syscalls are the preload source's, and uprobes trap in
	 * a process from its exec until its hello (scope.c, attach.c) */
	int handover;
	uint64_t hellos;
	/* handover: processes whose interposer records them from their
	 * first call, with no uprobes of ours (early.c); attach_lock
	 * guards the table. no_early: source arg early=0 */
	int no_early;
	struct ebpf_early {
		pid_t tgid;
		int state;	  /* EARLY_* in early.c */
		uint64_t dev, ino; /* what its exec runs (st_dev, st_ino) */
	} *early;
	size_t nearly, early_cap;
	size_t nearly_pub; /* nearly, read without the lock */
	struct ebpf_interposer {
		uint64_t dev, ino; /* st_dev, st_ino */
	} interposers[8];
	uint32_t ninterposers; /* written under attach_lock */
	uint64_t early_guessed, early_confirmed, early_wrong, early_asked;
	uint64_t early_unasked;
	/* args sample-bytes= and seed= (handover only): which of uprobes'
	 * events go into the file (sample.c) */
	uint64_t sample_bytes, sample_seed;
	int sample_seeded;
	struct ebpf_sampler *smp;
	struct ebpf_hold *holds;
	size_t nholds, holds_cap;

	/* the read in progress */
	struct mt_emitter *em;
	size_t rd_max;
	size_t rd_count;
	int rd_err;
	uint64_t rd_end; /* drain: stop at the record ending here */

	int started;
	uint64_t attach_t0; /* start() began (CLOCK_MONOTONIC) */
	uint64_t drops_reported;
	uint64_t ctl_drops_reported;
	uint64_t attach_count;
	uint64_t stops;    /* throttle stops learned of */
	uint64_t resumes;  /* throttle stops ended */
	uint32_t throttled; /* processes with HOLD_THROTTLE now */

	/* stacks (source arg `stacks`): 0 frames: off */
	unsigned int stack_depth;
	struct ring_buffer *stack_rb;
	size_t stack_ring_size;
	size_t stack_high_wm;
	size_t stack_low_wm;
	volatile uint64_t *stack_cons_pos;
	volatile uint64_t *stack_prod_pos;
	struct ebpf_blob meta_stacks; /* "MTKT" */
	struct ebpf_blob meta_maps;   /* "MTKM" */
	struct ebpf_blob meta_attach; /* "MTKA" (any run: --pid) */
	struct ebpf_blob meta_recorder; /* "MTKW" (handover) */
	uint64_t procs_interposer, procs_uprobes; /* handover: ended */
	/* payloads finished ahead of the two above, written first: the
	 * mappings and stacks from before a change of what addresses name */
	struct ebpf_blob *sealed;
	size_t nsealed, sealed_cap;
	int in_ctl; /* ebpf_on_ctl() runs: the ctl ring is not to be read */
	/* ring.c's reader of the ctl ring, for stacks.c to catch up with a
	 * fork record written after the stack ring's read began (a hook:
	 * the plugin's calls go ring -> control -> attach/stacks only) */
	int (*ctl_catch_up)(struct ebpf_state *st);
	struct ebpf_bid *bids;
	size_t nbids, bids_cap;
	struct mt_key_index bids_idx; /* (dev, ino) -> index in bids */
	struct ebpf_seen *seen;
	size_t nseen, seen_cap;
	struct mt_key_index seen_idx; /* (pid, 0) -> index in seen */
	uint64_t stacks_seen;
	uint64_t stacks_truncated; /* of stacks_seen, marked truncated */
	uint64_t frames_dropped;   /* frames outside every executable mapping */
	int meta_unsupported;

	/* unwind tables (unwind.c) */
	size_t stack_table_size;	/* bytes of rows at most */
	struct mt_unw_row *unw_rows;	/* the mmapped unw_rows map */
	size_t unw_nrows, unw_max_rows, unw_map_len;
	struct ebpf_unw_file *unw_files;
	size_t nunw_files, unw_files_cap;
	struct mt_key_index unw_files_idx; /* (dev, ino) -> unw_files index */
	uint64_t unw_build_ns;
	uint32_t unw_files_built, unw_files_skipped;
	int unw_full_warned, unw_maps_warned;
	/* unw_chunks: the next id, and how many processes name each id */
	uint32_t unw_next_chunk;
	uint32_t *unw_chunk_refs;
	size_t unw_chunk_refs_cap;
};

struct bpf_program;
struct bpf_link;
/* scope.c: one tracefs uprobe event: the probes whose program and cookie
 * are `key` (every file's), and its id */
struct ebpf_scope_ev {
	uint64_t key;
	uint32_t id;
	int prog; /* its probes are in program files (MT_CK_PROG) */
};
/* an event made before the BPF object was loaded, waiting for its
 * program (scope.c: ebpf_scope_undefer()) */
struct ebpf_scope_deferred {
	struct bpf_program *prog;
	uint64_t cookie;
	int pfd;
};

struct ebpf_scope_tag {
	pid_t tgid; /* 0 once the process ended (handover) */
	pid_t tid;
	uint32_t ev; /* index in scope_evs */
	int prog;
	uint64_t opened; /* CLOCK_MONOTONIC ns, as a hello's trap time */
	uint32_t group; /* see scope.c: exec_carried() */
};
/* scope.c: uprobes limited to the traced tree (see there). init decides,
 * before the BPF object is loaded; attach adds one probe to the event of
 * its program and cookie, making the event (and *out, its link) the first
 * time; cover opens the filter of the events made since `from` for every
 * thread of the tree; done closes ours (after the watchdog took copies).
 * remove_group deletes the events of the group nobody uses; it returns how
 * many were busy. */
void ebpf_scope_warm_start(struct ebpf_state *st);
void ebpf_scope_warm_join(struct ebpf_state *st);
void ebpf_scope_init(struct ebpf_state *st);
int ebpf_scope_attach(struct ebpf_state *st, struct bpf_program *prog,
		      const char *path, uint64_t offset, int retprobe,
		      uint64_t cookie, struct bpf_link **out);
size_t ebpf_scope_nevs(const struct ebpf_state *st);
int ebpf_scope_cover(struct ebpf_state *st, size_t from);
enum { EBPF_COVER_EXEC, EBPF_COVER_PROG, EBPF_COVER_NOW };
int ebpf_scope_cover_exec(struct ebpf_state *st, pid_t tid, pid_t tgid,
			  int how);
void ebpf_scope_carry_lost(struct ebpf_state *st, pid_t tid);
void ebpf_scope_release(struct ebpf_state *st, pid_t tgid, uint64_t hello_ts);

/* gate.c: PT_INTERP of the ELF file fd into buf (0, or -1: none); the
 * interpreter a "#!" line of head names (n bytes read), cut in place */
int ebpf_elf_interp(int fd, char *buf, size_t size);
char *ebpf_shebang(char *head, ssize_t n);
/* early.c: whether the ELF file defines name in its dynamic symbols, as
 * the interposer's test of a program's own malloc (-1: no .dynsym) */
typedef struct Elf Elf;
int ebpf_elf_defines(Elf *elf, const char *name);

struct stat;
/* early.c (handover): the gate's guess at an exec, its check at the
 * image's first executable mapping, the interposer's question, an exit */
int ebpf_early_exec(struct ebpf_state *st, pid_t tid, pid_t tgid,
		    const char *full, uint64_t envp, int nfilters);
void ebpf_early_mmap(struct ebpf_state *st, pid_t pid, const struct stat *sb);
long ebpf_early_ask(struct ebpf_state *st, pid_t tid, pid_t tgid,
		    uint64_t magic);
void ebpf_early_forget(struct ebpf_state *st, pid_t tgid);
/* a guess or a process the interposer records from its exec; the
 * caller holds attach_lock */
int ebpf_early_has(struct ebpf_state *st, pid_t tgid);
void ebpf_early_interposer(struct ebpf_state *st, int fd);
void ebpf_scope_gone(struct ebpf_state *st, pid_t tgid);
void ebpf_scope_done(struct ebpf_state *st);
int ebpf_scope_remove_group(const char *tracefs, long wait_ms);
int ebpf_scope_undefer(struct ebpf_state *st,
		       int (*add)(struct ebpf_state *, struct bpf_link *));
/* The deferred events closed and forgotten (a load that failed). */
void ebpf_scope_drop_deferred(struct ebpf_state *st);
void ebpf_preattach_start(struct ebpf_state *st);
int ebpf_preattach_finish(struct ebpf_state *st);
void ebpf_preattach_drop(struct ebpf_state *st);

/* attach.c: handle the executable files a process maps: attach the uprobes
 * of the allocator entry points found in their symbol tables. */
int ebpf_attach_process(struct ebpf_state *st, pid_t pid, uint64_t dev,
			uint64_t ino);
/* One line of /proc/PID/maps that maps an executable file: the range,
 * the file offset, the file (dev as the kernel's MKDEV(), as BPF reads
 * i_sb->s_dev; inode) and where its path starts in the line. */
struct ebpf_map_line {
	unsigned long start, end, off, inode;
	uint64_t dev;
	int name_at;
};

/* attach.c: parses line into *ml; returns 0 when it maps an executable
 * file, -1 for any other line. */
int ebpf_parse_exec_map(const char *line, struct ebpf_map_line *ml);
/* attach.c: attach the file at path (dev/ino: its identity, as BPF reads
 * it) unless it is handled already, and mark it handled. 0 when this call
 * handled it, 1 when it was known, -errno. Any thread. */
int ebpf_attach_file(struct ebpf_state *st, const char *path,
		     const char *shown, uint64_t dev, uint64_t ino);

/* gate.c: serve the exec gate's listener fd (owned from here on) on a
 * thread of its own; stop() ends the thread and hands the gate to the
 * watchdog for good. */
int ebpf_gate_start(struct ebpf_state *st, int fd);
/* Let the call of notification id on listener fd go on (ENOENT, ignored,
 * when it is not waiting for an answer). */
void ebpf_gate_answer(int fd, uint64_t id);
void ebpf_gate_stop(struct ebpf_state *st);
/* gate.c, the poller thread: record the mapping the gate asks for, if
 * any (struct ebpf_gate_map) */
void ebpf_gate_serve(struct ebpf_state *st);
int ebpf_file_known(struct ebpf_state *st, uint64_t dev, uint64_t ino);
/* ebpf_file_known() under the attach lock (from the poller) */
int ebpf_attach_known(struct ebpf_state *st, uint64_t dev, uint64_t ino);
void ebpf_symbols_init(void);

/* freeze.c: find a cgroup v2 hierarchy to freeze processes in (before
 * the BPF object is loaded: it sets freeze_ok); 0, or no freezer */
void ebpf_freeze_init(struct ebpf_state *st);
/* serve the freeze_req ring on a thread of its own; 0 or -errno (then
 * there is no freezer, and BPF's holds are stops) */
int ebpf_freeze_start(struct ebpf_state *st);
/* thaw every frozen process, stop the thread, remove its cgroups */
void ebpf_freeze_stop(struct ebpf_state *st);
/* the poller: pass the freezer's holds to the host's notes; its counts */
void ebpf_freeze_notes(struct ebpf_state *st);
void ebpf_freeze_counts(struct ebpf_state *st, uint64_t *holds,
			uint64_t *ends, uint32_t *now);
/* the watchdog, memtrack being gone: thaw what is left frozen in cgroups
 * named for memtrack (pid owner) under root, put it back where it was */
void ebpf_thaw_orphans(const char *root, pid_t owner);
const char *ebpf_freeze_root(const struct ebpf_state *st);

/* stacks.c: the stack table and the processes' mappings, stored as
 * metadata of the recording. */
int ebpf_on_stack(void *ctx, void *data, size_t len);
int ebpf_record_maps(struct ebpf_state *st, pid_t pid, int at_exec);
/* The one executable mapping [start, end) of file (dev, ino) at offset
 * off that pid just made (a stop at its mmap): recorded without reading
 * all of /proc/PID/maps, which made thousands of dlopens quadratic; the
 * whole scan when the process is new to us or the mapping is gone. */
int ebpf_record_map(struct ebpf_state *st, pid_t pid, uint64_t start,
		    uint64_t end, uint64_t off, uint64_t dev, uint64_t ino);
/* The same for a mapping pid is about to make, its caller waiting in the
 * exec gate: file opens it (the caller's /proc/TID/fd/N), name is its
 * path. What pid maps already is read first if pid is new to us. */
int ebpf_record_map_ahead(struct ebpf_state *st, pid_t pid, uint64_t start,
			  uint64_t end, uint64_t off, uint64_t dev,
			  uint64_t ino, const char *file, const char *name);
int ebpf_note_fork(struct ebpf_state *st, pid_t parent, pid_t child);
/* pid, whose mappings were in chunks, ended: they are dropped unless a
 * child names them */
int ebpf_note_exit(struct ebpf_state *st, pid_t pid);
/* memtrack --pid: process pid is recorded from ts_ns (CLOCK_MONOTONIC) on,
 * and what it allocated before is not in the file ("MTKA"). */
int ebpf_note_recorder(struct ebpf_state *st, pid_t pid, int interposed,
		       uint64_t ts_ns);
int ebpf_note_attach(struct ebpf_state *st, pid_t pid, uint64_t ts_ns);
/* Write what was collected, before the events read next. */
int ebpf_meta_flush(struct ebpf_state *st, struct mt_emitter *em);
void ebpf_stacks_free(struct ebpf_state *st);

/* unwind.c: the unwind tables of the stack capture. prepare() sizes the
 * maps before load, init() maps the rows after it. mapping() fills r's
 * table and bias (the file's table is built at its first mapping, read
 * through path, named shown in messages);
 * push() hands BPF a process's mappings. Negative errno on failure. */
int ebpf_unw_prepare(struct ebpf_state *st);
int ebpf_unw_init(struct ebpf_state *st);
int ebpf_unw_mapping(struct ebpf_state *st, struct ebpf_range *r,
		     uint64_t dev, uint64_t ino, uint64_t off,
		     const char *path, const char *shown);
int ebpf_unw_push(struct ebpf_state *st, struct ebpf_seen *seen);
/* seen's chunks are named by one more process (a fork's child), or by
 * one less (it ended, or was given others): dropped at none */
void ebpf_unw_chunks_ref(struct ebpf_state *st, const struct ebpf_seen *seen);
void ebpf_unw_chunks_release(struct ebpf_state *st, struct ebpf_seen *seen);
/* Build the tables of the libraries the n files at paths need, ahead of
 * their mapping (unwind.c says why); best effort. */
void ebpf_unw_prefetch(struct ebpf_state *st, char *const *paths, size_t n);
void ebpf_unw_free(struct ebpf_state *st);

/* watchdog.c: a process that resumes every stopped process of `holds` when
 * memtrack dies, even by SIGKILL. */
int ebpf_watchdog_start(struct ebpf_state *st);
/* Normal end: everything was resumed; the watchdog exits. */
/* Hand fds (uprobe links) to the watchdog, which closes them after
 * memtrack is gone: their slow detach then costs memtrack nothing. */
int ebpf_watchdog_adopt(struct ebpf_state *st, const int *fds, size_t n);
/* Hand fds over in a message `what` ('F' links, 'G' the gate's listener). */
int ebpf_watchdog_give(struct ebpf_state *st, char what, const int *fds,
		       size_t n);
void ebpf_watchdog_stop(struct ebpf_state *st);
/* SIGCONT the process of every entry of the holds map, delete the entry;
 * async-signal-safe (the watchdog runs it in a forked child). Returns the
 * number of entries. */
int ebpf_resume_map(int holds_fd);

#define TRACEFS "/sys/kernel/tracing"
/* the inode of the initial pid namespace (PROC_PID_INIT_INO) */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

/* args.c: parse the plugin's arguments into st, defaults first. */
int ebpf_parse_args(struct ebpf_state *st, const char *args);

/* system.c: what the kernel and our privileges lack, in one message. */
int ebpf_check_system(struct ebpf_state *st);

/* control.c: the `ctl` ring's records (ebpf_on_ctl() is its callback)
 * and the holds they make. release(): the stop of key was handled, drop
 * reason; the process is resumed when none is left (h moves). */
int ebpf_on_ctl(void *ctx, void *data, size_t len);
void ebpf_hold_release(struct ebpf_state *st, struct ebpf_hold *h,
		       unsigned int reason, const struct mt_hold_key *key);
/* Resume every process we hold, whatever the reason (destroy()). */
void ebpf_resume_all(struct ebpf_state *st);
uint64_t ebpf_now_ns(void);

/* sample.c: --sample-bytes under auto. create: 0 or -ENOMEM (nothing
 * without sample-bytes=); event: an event read, kept, dropped or held;
 * flush: the held events now decided (all: every one, at the end);
 * ctl_read: the control ring was read to its end from before_ns; hello:
 * the image of pid that began at image said hello at ts; say: the MTKR
 * payload, once, before the first event. */
int ebpf_sample_create(struct ebpf_state *st);
int ebpf_sample_event(struct ebpf_state *st, struct mt_emitter *em,
		      const struct mt_event *ev);
int ebpf_sample_flush(struct ebpf_state *st, struct mt_emitter *em, int all);
void ebpf_sample_ctl_read(struct ebpf_state *st, uint64_t before_ns);
void ebpf_sample_hello(struct ebpf_state *st, int32_t pid, uint64_t image,
		       uint64_t ts);
int ebpf_sample_say(struct ebpf_state *st, struct mt_emitter *em);
void ebpf_sample_log(struct ebpf_state *st);
void ebpf_sample_destroy(struct ebpf_state *st);
/* control.c: a pause or its end, for the host's statistics (poller) */
void ebpf_note(struct ebpf_state *st, const char *what, pid_t pid,
	       uint64_t ts);
/* pressure.c: resume the throttled processes once the rings are below
 * their low watermarks */
void ebpf_resume_throttled(struct ebpf_state *st);

/* ring.c: the rings' positions, their callbacks and reads. The read
 * functions return a negative errno after logging it. */
int ebpf_map_ring_positions(struct ebpf_state *st);
/* after the rings are mapped: no fork of memtrack copies them */
void ebpf_rings_dontfork(struct ebpf_state *st);
uint64_t ebpf_ring_unread(struct ebpf_state *st);
uint64_t ebpf_stack_ring_unread(struct ebpf_state *st);
/* Both rings below their low watermarks: held producers may go on (any
 * thread: it reads the rings' positions only) */
int ebpf_rings_below_low(struct ebpf_state *st);
int ebpf_on_event(void *ctx, void *data, size_t len);
void ebpf_report_drops(struct ebpf_state *st);
int ebpf_consume_ctl(struct ebpf_state *st);
int ebpf_consume_stacks(struct ebpf_state *st, struct mt_emitter *em);
/* At most max events; with end != 0, none past the record reaching end.
 * Returns how many. */
int ebpf_read_events(struct ebpf_state *st, struct mt_emitter *em,
		     size_t max, uint64_t end);
/* Everything written when called, and nothing more. */
int ebpf_ring_drain(struct ebpf_state *st, struct mt_emitter *em);

#define ebpf_log(st, level, ...) \
	(st)->host->log((st)->host, (level), EBPF_NAME, __VA_ARGS__)

#endif /* MT_PLUGIN_EBPF_H */

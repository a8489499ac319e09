/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command-env.h"
#include "control.h"
#include "host.h"
#include "input-guard.h"
#include "log.h"
#include "pipeline.h"
#include "plugin.h"
#include "run.h"
#include "source-args.h"
#include "spawn.h"
#include "attach.h"
#include "source-auto.h"
#include "stats.h"
#include "witness.h"

#define TICK_MS 100
/* Chunks per wakeup before the poll comes round again. Signals and control
 * requests are served between every two chunks anyway; this only keeps the
 * tick regular while a ring never empties. */
#define CHUNKS_PER_WAKEUP 256
/* How long a signal to memtrack alone waits before it is forwarded, in
 * case the same sender signals the whole group next: timeout(1) sends to
 * its child and then to its group, two system calls in a row. */
#define GROUP_GRACE_MS 20

struct run {
	const struct mt_run_opts *opts;
	struct mt_plugin *src_plugin, *enc_plugin, *sink_plugin;
	const struct mt_source_ops *src;
	void *src_state;
	struct mt_pipeline *pipe;
	struct mt_emitter *em;
	struct mt_spawn spawn;
	char **command_env; /* the command's environment, when the source
			     * sets some of it */
	char *source_args;  /* given to the source's create() */
	struct mt_control *control;
	struct mt_stats *stats;
	int sigfd;
	sigset_t old_mask;
	struct mt_witness *witness; /* tells group signals (witness.h) */
	bool have_command;
	bool attaching;   /* --pid */
	struct mt_attach attach;
	uint64_t end_ns;  /* --duration: when to stop; 0: never */
	bool root_exited;
	int root_status;
	bool tree_done;   /* no child left */
	bool source_eof;
	bool recording;   /* the pipeline takes events */
	bool interrupted; /* a command-less run got a signal */
	int early_signal; /* got before the command ran: sent to it */
	int exec_errno;   /* the command could not be executed */
	int error;        /* first error of memtrack itself */
};

static void set_error(struct run *r, int err)
{
	if (err < 0 && r->error == 0) {
		r->error = err;
	}
}

/* "name:args" -> name (copied into buf) and args (NULL when absent). */
static const char *split_spec(const char *spec, char *buf, size_t size,
			      const char **args)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

	if (len >= size) {
		len = size - 1;
	}
	memcpy(buf, spec, len);
	buf[len] = '\0';
	*args = colon ? colon + 1 : NULL;
	return buf;
}

static int load_plugins(struct run *r)
{
	const struct mt_run_opts *o = r->opts;
	char name[128];
	const char *args;
	int err;

	split_spec(o->source, name, sizeof(name), &args);
	err = strcmp(name, "auto") ?
		      mt_plugin_load(MT_PLUGIN_SOURCE, name, &r->src_plugin) :
		      mt_source_auto_plugin(&r->src_plugin);
	if (err < 0) {
		return err;
	}
	split_spec(o->encoder, name, sizeof(name), &args);
	err = mt_plugin_load(MT_PLUGIN_ENCODER, name, &r->enc_plugin);
	if (err < 0) {
		return err;
	}
	split_spec(o->sink ? o->sink : "file", name, sizeof(name), &args);
	err = mt_plugin_load(MT_PLUGIN_SINK, name, &r->sink_plugin);
	if (err < 0) {
		return err;
	}
	r->src = &r->src_plugin->ops.source;
	return 0;
}

/* A source call's result: a failure it did not explain is named. */
static int src_call(struct run *r, const char *call, int err)
{
	return mt_log_plugin_failure("source", r->src_plugin->desc->name,
				     call, err);
}

static int check_command(struct run *r)
{
	uint32_t flags = r->src->flags;
	const char *name = r->src_plugin->desc->name;

	if (r->attaching) {
		if (!(flags & MT_SOURCE_CAN_ATTACH) ||
		    r->src_plugin->desc->abi_minor < 3) {
			mt_err(strcmp(name, "preload") == 0 ?
				       "source 'preload' cannot attach to a running process: it is loaded by LD_PRELOAD when a program starts; use --source ebpf" :
				       "source '%s' cannot attach to a running process (--pid)",
			       name);
			return -EINVAL;
		}
		return 0;
	}
	if ((flags & MT_SOURCE_NEEDS_COMMAND) && !r->have_command) {
		mt_err("source '%s' needs a command: memtrack [OPTIONS] -- CMD [ARGS...]",
		       name);
		return -EINVAL;
	}
	if ((flags & MT_SOURCE_NO_COMMAND) && r->have_command) {
		mt_err("source '%s' runs no command; drop '-- %s'", name,
		       r->opts->argv[0]);
		return -EINVAL;
	}
	return 0;
}

/* The file sink truncates its file when it opens: never the file the
 * source reads (input-guard.h). Called once the source has opened it. */
static bool sink_destroys_input(const struct run *r)
{
	const char *args;
	char name[128];

	if (!r->opts->sink) {
		return false; /* a new name, made of a pid */
	}
	split_spec(r->opts->sink, name, sizeof(name), &args);
	if (strcmp(name, "file") != 0 || !args || !strcmp(args, "-") ||
	    !mt_file_is_open_input(args)) {
		return false;
	}
	mt_err("--sink file:%s: memtrack reads this file (the source's input): writing it would destroy it before it is read; write to another file",
	       args);
	return true;
}

static int block_signals(struct run *r)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	/* Before any thread exists, so that every thread inherits the mask
	 * and signals reach the signalfd only. */
	if (sigprocmask(SIG_BLOCK, &set, &r->old_mask) < 0) {
		return -errno;
	}
	/* A pipe or socket whose reader has gone (the held command killed
	 * before exec, a sink's stdout, a control client) is an error to
	 * handle, never memtrack's death. The command gets the caller's
	 * disposition back (host/spawn.c). */
	if (sigaction(SIGPIPE,
		      &(struct sigaction){ .sa_handler = SIG_IGN },
		      &r->spawn.sigpipe) < 0) {
		return -errno;
	}
	if (r->have_command) {
		/* with the signals blocked: it must not die of one */
		r->witness = mt_witness_start(&set);
	}
	r->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sigfd < 0) {
		mt_err("signalfd: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_sink(struct run *r, void **state)
{
	const char *args = NULL;
	char name[128], def[64];

	if (r->opts->sink) {
		split_spec(r->opts->sink, name, sizeof(name), &args);
	} else {
		/* The name the CodSpeed runner looks for. */
		snprintf(def, sizeof(def), "%d.MemtrackArtifact.msgpack",
			 r->have_command ? (int)r->spawn.pid :
			 r->attaching	 ? (int)r->attach.pid[0] :
					   (int)getpid());
		args = def;
	}
	return mt_log_plugin_failure("sink", r->sink_plugin->desc->name,
				     "open",
				     r->sink_plugin->ops.sink.open(mt_host_get(),
								   args,
								   state));
}

static int create_pipeline(struct run *r)
{
	struct mt_pipeline_config cfg = { 0 };
	const char *args;
	char name[128];
	void *sink_state = NULL;
	int err;

	err = open_sink(r, &sink_state);
	if (err < 0) {
		return err;
	}
	split_spec(r->opts->encoder, name, sizeof(name), &args);
	cfg.host = mt_host_get();
	cfg.encoder = &r->enc_plugin->ops.encoder;
	cfg.encoder_name = r->enc_plugin->desc->name;
	cfg.sink_name = r->sink_plugin->desc->name;
	cfg.encoder_args = args;
	cfg.sink = &r->sink_plugin->ops.sink;
	cfg.sink_state = sink_state;
	cfg.workers = r->opts->workers;
	cfg.batch_events = r->opts->batch;
	err = mt_pipeline_create(&cfg, &r->pipe);
	if (err < 0) {
		cfg.sink->close(sink_state);
		return err;
	}
	r->em = mt_pipeline_emitter(r->pipe);
	r->recording = true;
	return 0;
}

static int status_code(int status)
{
	if (WIFEXITED(status)) {
		return WEXITSTATUS(status);
	}
	if (WIFSIGNALED(status)) {
		return 128 + WTERMSIG(status);
	}
	return 1;
}

/*
 * As the init of a pid namespace (a container's first process) memtrack
 * is the parent of every orphan there, its own helpers included: the
 * sources fork theirs twice so that they are not its children
 * (plugins/ebpf/watchdog.c, plugins/preload/detacher.c), which only
 * works where init is another process. They name themselves
 * "memtrack-...". Are those all that is left?
 */
static bool only_helpers_left(void)
{
	char path[320], buf[4096], comm[32];
	bool helpers_only = true, any = false;
	struct dirent *de;
	DIR *d;

	d = opendir("/proc/self/task");
	if (!d) {
		return false;
	}
	while (helpers_only && (de = readdir(d))) {
		char *p, *end;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.') {
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/task/%s/children",
			 de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (p = buf; helpers_only; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p) {
				break;
			}
			any = true;
			snprintf(path, sizeof(path), "/proc/%ld/comm", c);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			n = fd < 0 ? -1 : read(fd, comm, sizeof(comm) - 1);
			if (fd >= 0) {
				close(fd);
			}
			comm[n > 0 ? n : 0] = '\0';
			helpers_only = strncmp(comm, "memtrack-", 9) == 0;
		}
	}
	closedir(d);
	return any && helpers_only;
}

/* Reap every child that has exited. memtrack is a subreaper, so orphans of
 * the tree come back to it: the tree is done when no child is left (but
 * memtrack's own helpers, when it is a namespace's init). */
static void reap(struct run *r)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid == 0) {
			if (r->root_exited && getpid() == 1 &&
			    only_helpers_left()) {
				r->tree_done = true;
			}
			return;
		}
		if (pid < 0) {
			if (errno == EINTR) {
				continue;
			}
			r->tree_done = true; /* ECHILD */
			return;
		}
		if (pid == r->spawn.pid) {
			r->root_exited = true;
			r->root_status = status;
			mt_debug("command exited: status %d",
				 status_code(status));
		}
	}
}

/*
 * Whether the command got the signal memtrack got: a signal sent to the
 * process group they share (a terminal's, timeout's, `kill -TERM -PGID`,
 * systemd's) reached both, one sent to memtrack alone did not. Without a
 * witness only a terminal's (SI_KERNEL) is known to be a group's. A
 * command that has moved to a group of its own gets every signal from
 * memtrack; its witness copy is taken all the same.
 */
static bool command_got(struct run *r, const struct signalfd_siginfo *si)
{
	bool same_group = getpgid(r->spawn.pid) == getpgrp();
	bool group;

	if (!r->witness) {
		return same_group && si->ssi_code == SI_KERNEL;
	}
	group = mt_witness_group_got(r->witness, (int)si->ssi_signo,
				     same_group ? GROUP_GRACE_MS : 0);
	return same_group && group;
}

static void handle_signals(struct run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			/* before the command: a helper of the source's, which
			 * waits for its own (and reaping finds no child of
			 * ours: the tree would count as done) */
			if (r->spawn.pid > 0) {
				reap(r);
			}
			continue;
		}
		if (r->have_command && r->spawn.pid < 0) {
			/* Before the command exists (loading the source
			 * takes a while): it gets the signal as it starts,
			 * whoever sent it, and the file is completed. The
			 * witness's copy is taken so that it is not counted
			 * for a later signal. */
			mt_witness_group_got(r->witness, (int)si.ssi_signo, 0);
			r->early_signal = (int)si.ssi_signo;
			continue;
		}
		/* Forward it unless the command has it already. memtrack
		 * itself goes on until the tree has exited, to finish the
		 * file. */
		if (r->have_command && !r->root_exited &&
		    !command_got(r, &si)) {
			kill(r->spawn.pid, (int)si.ssi_signo);
		}
		mt_debug("got signal %u", si.ssi_signo);
		if (!r->have_command) {
			r->interrupted = true;
		}
	}
}

/* MEMTRACK_TEST_SPAWN_DELAY_MS=N: wait N ms between the last look at the
 * signals and the command's fork, the window handle_signals_held() closes
 * (tests/test-startup-signals.sh sends a Ctrl-C into it). */
static void test_spawn_delay(void)
{
	const char *v = getenv("MEMTRACK_TEST_SPAWN_DELAY_MS");
	long ms = v ? strtol(v, NULL, 10) : 0;
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000L };

	if (ms > 0) {
		/* blocked signals do not interrupt it */
		nanosleep(&ts, NULL);
	}
}

/* Whether held process pid has signo pending (it blocks every signal
 * until released): /proc/PID/status, SigPnd (its thread's) and ShdPnd
 * (the process's, where a group's signal goes). */
static bool held_has_pending(pid_t pid, int signo)
{
	char path[64], line[256];
	bool got = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;

		if ((!strncmp(line, "SigPnd:", 7) ||
		     !strncmp(line, "ShdPnd:", 7)) &&
		    sscanf(line + 7, "%llx", &mask) == 1 && signo >= 1 &&
		    signo <= 64 && (mask >> (signo - 1) & 1)) {
			got = true;
		}
	}
	fclose(f);
	return got;
}

/*
 * Right after the command's fork, while it is held: the signals that came
 * since the last look. One that came before the fork, a group's included,
 * never reached the command, which did not exist yet; one that came after
 * it reached the command too if it was the group's, and waits there (the
 * held child blocks them all). The child tells which: what memtrack got
 * and the child has not is the command's to get as it starts, as for a
 * signal that came while the source loaded. Without this a Ctrl-C in that
 * window was taken for one the command had (the witness saw the group's
 * copy) and was lost (tests/test-startup-signals.sh, 1 run in 93 under
 * ASan: memtrack exit 0 after the command's full run).
 */
static void handle_signals_held(struct run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(r);
			continue;
		}
		/* the witness's copy, if it was the group's: not counted
		 * for a later signal */
		mt_witness_group_got(r->witness, (int)si.ssi_signo, 0);
		if (!held_has_pending(r->spawn.pid, (int)si.ssi_signo)) {
			r->early_signal = (int)si.ssi_signo;
		}
		mt_debug("got signal %u while the command was held",
			 si.ssi_signo);
	}
}

static void get_source_stats(struct run *r, struct mt_source_stats *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->size = sizeof(*ss);
	if (r->src_state && r->src->get_stats) {
		r->src->get_stats(r->src_state, ss);
	}
}

/* Stop tracing for good: resume whatever the source holds, detach. */
static void detach_source(struct run *r)
{
	if (r->src_state) {
		r->src->destroy(r->src_state);
		r->src_state = NULL;
	}
}

/*
 * End the recording: read what the source still holds, check nothing was
 * lost, store the summary, complete the file. Called once, at the end of
 * the run or on a control 'stop'. The command, if any, runs on untraced.
 */
static void finish_recording(struct run *r)
{
	struct mt_pipeline_stats ps;
	struct mt_source_stats ss;
	char *summary;
	int err;

	if (!r->recording) {
		return;
	}
	r->recording = false;
	if (r->src_state && r->src->drain) {
		set_error(r, src_call(r, "drain",
				      r->src->drain(r->src_state, r->em)));
	}
	get_source_stats(r, &ss);
	detach_source(r);
	if (ss.dropped) {
		/* advise only the options the source takes */
		mt_err("%" PRIu64 " events were lost: the ring overflowed (a larger --ring-size%s keeps them)",
		       ss.dropped,
		       mt_source_takes(r->src_plugin, MT_SOPT_HIGH_WATERMARK) ?
			       " or lower --high-watermark" :
			       "");
		set_error(r, -ENOBUFS);
	}
	if (ss.untracked) {
		mt_err("%" PRIu64 " processes of the traced tree were not followed (the source's map of processes was full): events of theirs are missing",
		       ss.untracked);
		set_error(r, -ENOSPC);
	}
	if (ss.unrecorded) {
		mt_err("%" PRIu64 " calls of the traced tree were not recorded (the source's map of threads was full): their events are missing",
		       ss.unrecorded);
		set_error(r, -ENOSPC);
	}
	if (ss.damaged) {
		mt_err("%" PRIu64 " records were damaged by a traced process (memory it shares with memtrack was overwritten) and dropped: their events are missing",
		       ss.damaged);
		set_error(r, -EBADMSG);
	}
	if (ss.gave_up) {
		mt_err("%" PRIu64 " processes stopped recording: memtrack did not answer them while they waited for room (was it stopped?); their later events are missing",
		       ss.gave_up);
		set_error(r, -ETIMEDOUT);
	}
	/* Frames all written: the summary's figures are then final. */
	err = mt_pipeline_sync(r->pipe);
	set_error(r, err);
	if (err == 0) {
		mt_pipeline_get_stats(r->pipe, &ps);
		summary = mt_stats_summary(r->stats, &ps, &ss);
		if (summary && r->enc_plugin->ops.encoder.encode_meta) {
			size_t len = strlen(MT_META_STATS) + strlen(summary);
			char *payload = malloc(len + 1);

			if (payload) {
				strcpy(payload, MT_META_STATS);
				strcat(payload, summary);
				set_error(r, mt_pipeline_meta(r->pipe,
							      MT_META_VARIANT,
							      payload, len));
				free(payload);
			}
		}
		free(summary);
	}
	set_error(r, mt_pipeline_finish(r->pipe));
}

static int ctl_set_enabled(void *ctx, int enabled)
{
	struct run *r = ctx;

	if (!r->src_state || !r->recording) {
		return -ESRCH;
	}
	if (!r->src->set_enabled) {
		return -ENOTSUP;
	}
	return r->src->set_enabled(r->src_state, enabled);
}

/* Everything recorded so far is in the file when the answer goes out. */
static int ctl_drain(void *ctx)
{
	struct run *r = ctx;
	int err = 0;

	if (!r->recording) {
		return -ESRCH;
	}
	if (r->src_state && r->src->drain) {
		err = src_call(r, "drain", r->src->drain(r->src_state, r->em));
	}
	if (err == 0) {
		err = mt_pipeline_sync(r->pipe);
	}
	set_error(r, err);
	return err;
}

static int ctl_stop(void *ctx)
{
	struct run *r = ctx;

	if (!r->recording) {
		return -ESRCH;
	}
	finish_recording(r);
	return r->error;
}

static const struct mt_control_handler control_handler = {
	.set_enabled = ctl_set_enabled,
	.drain = ctl_drain,
	.stop = ctl_stop,
};

/* Between two chunks: whatever must not wait for the ring to empty. */
static void between_chunks(struct run *r)
{
	if (r->src_state && r->src->maintain) {
		set_error(r, src_call(r, "maintain",
				      r->src->maintain(r->src_state)));
	}
	if (r->opts->throttle_us) {
		struct timespec ts = {
			.tv_sec = r->opts->throttle_us / 1000000,
			.tv_nsec = (long)(r->opts->throttle_us % 1000000) *
				   1000,
		};

		nanosleep(&ts, NULL);
	}
	handle_signals(r);
	mt_control_serve(r->control, &control_handler, r);
}

static void read_source(struct run *r)
{
	size_t chunk = r->opts->chunk;
	struct mt_source_stats ss;
	int i;

	for (i = 0; i < CHUNKS_PER_WAKEUP && r->src_state && r->recording;
	     i++) {
		uint32_t flags = 0;
		uint64_t t0 = mt_now_ns();
		int n = src_call(r, "read",
				 r->src->read(r->src_state, r->em, chunk,
					      &flags));

		if (n < 0) {
			set_error(r, n);
			return;
		}
		if (n > 0) {
			get_source_stats(r, &ss);
			mt_stats_chunk(r->stats, t0, mt_now_ns() - t0, n, &ss);
		}
		if (flags & MT_SOURCE_EOF) {
			r->source_eof = true;
			return;
		}
		between_chunks(r);
		if ((size_t)n < chunk) {
			return;
		}
	}
}

static bool finished(const struct run *r)
{
	if (r->have_command) {
		return r->tree_done;
	}
	if (r->attaching) {
		/* the processes go on; their children may too, untraced
		 * from here */
		return r->interrupted || r->error || r->source_eof ||
		       !r->recording || /* a control stop */
		       (r->end_ns && mt_now_ns() >= r->end_ns) ||
		       mt_attach_all_gone(&r->attach);
	}
	return r->source_eof || r->interrupted || r->error;
}

static void tick(struct run *r)
{
	struct mt_pipeline_stats ps;
	struct mt_source_stats ss;

	if (!r->recording) {
		return;
	}
	if (r->src_state && r->src->maintain) {
		set_error(r, src_call(r, "maintain",
				      r->src->maintain(r->src_state)));
	}
	get_source_stats(r, &ss);
	mt_pipeline_get_stats(r->pipe, &ps);
	mt_stats_tick(r->stats, &ss, ps.events);
}

static void loop(struct run *r)
{
	while (!finished(r)) {
		struct pollfd pfd[2 + MT_CONTROL_MAX_FDS];
		bool reading = r->recording && r->src_state && !r->source_eof;
		int fd = reading ? r->src->poll_fd(r->src_state) : -1;
		nfds_t n = 0;
		int timeout = TICK_MS;

		pfd[n++] = (struct pollfd){ .fd = r->sigfd, .events = POLLIN };
		if (fd >= 0) {
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		} else if (reading) {
			timeout = 0; /* a file: always ready */
		}
		n += mt_control_pollfds(r->control, pfd + n);
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			set_error(r, -errno);
			mt_err("poll: %s", strerror(errno));
			return;
		}
		handle_signals(r);
		if (reading) {
			read_source(r);
		}
		tick(r);
		mt_control_serve(r->control, &control_handler, r);
		/* The pipeline failed (its first error has been logged):
		 * stop tracing, but let the command finish untouched. */
		if (r->error && r->src_state) {
			detach_source(r);
		}
	}
}

static void cleanup(struct run *r)
{
	if (r->pipe) {
		mt_pipeline_destroy(r->pipe);
	}
	detach_source(r);
	mt_control_close(r->control);
	if (r->spawn.pid > 0 && !r->root_exited && !r->tree_done) {
		mt_spawn_abort(&r->spawn);
	}
	if (r->sigfd >= 0) {
		close(r->sigfd);
	}
	mt_witness_stop(r->witness);
	sigaction(SIGPIPE, &r->spawn.sigpipe, NULL);
	sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
	mt_host_set_stats(NULL);
	mt_stats_close(r->stats);
	mt_command_env_free(r->command_env);
	mt_attach_close(&r->attach);
	free(r->source_args);
	mt_plugin_close(r->src_plugin);
	mt_plugin_close(r->enc_plugin);
	mt_plugin_close(r->sink_plugin);
	mt_host_cleanup();
}

/* What the source wants in the command's environment (ABI 1.1). */
static int make_command_env(struct run *r)
{
	extern char **environ;
	const char *const *set;

	if (!r->src->command_env) {
		return 0;
	}
	errno = 0;
	set = r->src->command_env(r->src_state,
				  (const char *const *)r->opts->argv);
	if (!set) {
		return errno ? src_call(r, "command_env", -errno) : 0;
	}
	r->command_env = mt_command_env(environ, set);
	if (!r->command_env) {
		mt_err("the command's environment: %s", strerror(errno));
		return -errno;
	}
	r->spawn.envp = r->command_env;
	return 0;
}

static int open_stats(struct run *r)
{
	struct mt_stats_opts so = {
		.jsonl_path = r->opts->stats_path,
		.print_summary = r->opts->print_summary,
		.live = r->opts->live_status,
	};
	int err = mt_stats_open(&so, &r->stats);

	mt_host_set_stats(r->stats);
	return err;
}

static int exit_code(const struct run *r)
{
	if (r->exec_errno) {
		/* As a shell says it: not executable, or not found. */
		return r->exec_errno == EACCES ? 126 : 127;
	}
	if (r->error < 0) {
		return 1;
	}
	if (r->have_command) {
		return status_code(r->root_status);
	}
	return 0;
}

int mt_run(const struct mt_run_opts *opts)
{
	struct run r = { .opts = opts,
			 .sigfd = -1,
			 .spawn = { .pid = -1, .exec_gate_fd = -1 } };
	struct mt_target target = { .size = sizeof(target) };
	const char *args;
	char name[128];
	int err, code;

	r.have_command = opts->argv && opts->argv[0];
	r.attaching = opts->npids > 0;
	/* First: a SIGTERM while the source loads must not kill memtrack
	 * before it can finish a file and pass the signal on. */
	err = block_signals(&r);
	if (err < 0) {
		goto end;
	}
	err = load_plugins(&r);
	if (err < 0) {
		goto end;
	}
	if (check_command(&r) < 0) {
		cleanup(&r);
		return 2; /* a usage error */
	}
	if (r.attaching) {
		err = mt_attach_open(&r.attach, opts->pids, opts->npids);
		if (err == -EINVAL) {
			cleanup(&r);
			return 2; /* a pid that cannot be recorded */
		}
		if (err < 0) {
			goto end;
		}
	}
	split_spec(opts->source, name, sizeof(name), &args);
	err = mt_source_args(r.src_plugin, args, opts->source_opts,
			     &r.source_args);
	if (err == -EINVAL) {
		cleanup(&r);
		return 2; /* an option the source does not take */
	}
	if (err < 0) {
		goto end;
	}
	err = open_stats(&r);
	if (err < 0) {
		goto end;
	}
	err = src_call(&r, "create",
		       r.src->create(mt_host_get(), r.source_args,
				     &r.src_state));
	if (err < 0) {
		r.src_state = NULL;
		goto end;
	}
	if (sink_destroys_input(&r)) {
		cleanup(&r);
		return 2; /* a usage error */
	}
	err = mt_control_open(opts->control_path, &r.control);
	if (err < 0) {
		goto end;
	}
	if (r.have_command) {
		/* Orphans of the traced tree come back to us, so we can wait
		 * for all of them and lose none of their events. */
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		err = make_command_env(&r);
		if (err < 0) {
			goto end;
		}
		handle_signals(&r); /* what came while the source loaded */
		r.spawn.want_exec_gate =
			!!(r.src->flags & MT_SOURCE_GATES_EXECS);
		test_spawn_delay();
		err = mt_spawn_held(opts->argv, &r.old_mask, &r.spawn);
		if (err < 0) {
			goto end;
		}
		handle_signals_held(&r);
		if (r.spawn.want_exec_gate && r.spawn.exec_gate_fd < 0) {
			mt_info("no exec gate (%s): the source holds processes "
				"with signals a shell or debugger sees",
				strerror(r.spawn.exec_gate_errno));
		}
	}
	err = create_pipeline(&r);
	if (err < 0) {
		goto end;
	}
	target.root_pid = r.have_command ? r.spawn.pid :
			  r.attaching	 ? r.attach.pid[0] :
					   0;
	target.root_is_held = r.have_command;
	if (r.attaching) {
		target.nattach = (uint32_t)r.attach.n;
		target.attach_pids = r.attach.pid;
	}
	target.start_disabled = (uint32_t)opts->start_disabled;
	/* the source's from here on, whatever start() returns */
	if (r.have_command && r.spawn.exec_gate_fd >= 0) {
		target.has_exec_gate = 1;
		target.exec_gate_fd = r.spawn.exec_gate_fd;
		r.spawn.exec_gate_fd = -1;
	}
	err = src_call(&r, "start", r.src->start(r.src_state, &target));
	if (err < 0) {
		goto end;
	}
	if (r.have_command) {
		err = mt_spawn_release(&r.spawn, opts->argv[0]);
		if (err < 0) {
			/* The child exits 127: reap it like any other. */
			r.exec_errno = -err;
			set_error(&r, err);
		} else if (r.early_signal) {
			kill(r.spawn.pid, r.early_signal);
		}
	}
	if (opts->duration_ms) {
		r.end_ns = mt_now_ns() + (uint64_t)opts->duration_ms * 1000000u;
	}
	loop(&r);
	finish_recording(&r);
	err = r.error;
end:
	set_error(&r, err);
	if (r.error < 0 && !r.exec_errno &&
	    !__atomic_load_n(&mt_log_errors, __ATOMIC_RELAXED)) {
		/* exit 1 always comes with a line saying why */
		mt_err("stopped by an error nothing reported: %s",
		       strerror(-r.error));
	}
	code = exit_code(&r);
	cleanup(&r);
	return code;
}

/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/control.c - the control ring's records, and the holds they
 * make.
 *
 * BPF writes a record on the `ctl` ring for what user space must act on
 * (memtrack.h, enum mt_ctl_type): a fork, or an exec the exec gate let go
 * (with stacks: mappings to record; nobody waits for them), and each stop
 * it made (SIGSTOP): to attach a file the process mapped or exec'd, or
 * because a ring is nearly full. Each stopped process is held for one or
 * more reasons (HOLD_*) and resumed when none is left; pressure.c ends the
 * throttle holds once the rings have drained.
 *
 * The plugin reads one way: ring.c reads the ring and calls ebpf_on_ctl()
 * for each record; this file acts on it through attach.c and stacks.c,
 * and reads no ring itself.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>

#include <bpf/bpf.h>

#include <memtrack/plugin.h>

#include "memtrack.h"
#include "ebpf.h"
#include "array.h"

/* ------------------------------------------------------------------ */
/* Stopped processes                                                   */
/* ------------------------------------------------------------------ */

void ebpf_note(struct ebpf_state *st, const char *what, pid_t pid,
	       uint64_t ts)
{
	const struct mt_host *h = st->host;

	/* a host older than mt_host.note has a shorter struct */
	if (h->size >= offsetof(struct mt_host, note) + sizeof(h->note) &&
	    h->note) {
		h->note(h, what, pid, ts);
	}
}

uint64_t ebpf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct ebpf_hold *hold_get(struct ebpf_state *st, pid_t pid, int add)
{
	struct ebpf_hold *h;
	size_t i;

	for (i = 0; i < st->nholds; i++) {
		if (st->holds[i].pid == pid) {
			return &st->holds[i];
		}
	}
	if (!add) {
		return NULL;
	}
	h = mt_array_grow(st->holds, &st->holds_cap, st->nholds + 1,
			  sizeof(*st->holds));
	if (!h) {
		return NULL;
	}
	st->holds = h;
	st->holds[st->nholds].pid = pid;
	st->holds[st->nholds].reasons = 0;
	return &st->holds[st->nholds++];
}

/* Is a stop of pid in the map that we have not handled? (Handled ones are
 * deleted before their reason is dropped.) The map holds only the stops in
 * flight: a few entries. */
static int stop_pending(struct ebpf_state *st, pid_t pid)
{
	struct mt_hold_key key, next;
	void *prev = NULL;

	while (!bpf_map_get_next_key(st->holds_fd, prev, &next)) {
		if ((pid_t)next.tgid == pid) {
			return 1;
		}
		key = next;
		prev = &key;
	}
	return 0;
}

/*
 * A stop was handled: forget its map entry, drop its reason, and resume
 * the process when no reason is left. h moves (the array is compacted).
 */
void ebpf_hold_release(struct ebpf_state *st, struct ebpf_hold *h,
		       unsigned int reason, const struct mt_hold_key *key)
{
	pid_t pid = h->pid;

	bpf_map_delete_elem(st->holds_fd, key);
	if (reason == HOLD_THROTTLE && (h->reasons & HOLD_THROTTLE)) {
		st->throttled--;
		st->resumes++;
		ebpf_note(st, "resume", pid, ebpf_now_ns());
	}
	h->reasons &= ~reason;
	if (h->reasons) {
		return;
	}
	*h = st->holds[--st->nholds];
	/* stopped again meanwhile: the record of that stop is on its way
	 * and its handling resumes the process */
	if (stop_pending(st, pid)) {
		return;
	}
	if (kill(pid, SIGCONT)) {
		if (errno != ESRCH) {
			ebpf_log(st, MT_LOG_WARN,
				 "cannot resume process %d: %s", (int)pid,
				 strerror(errno));
		}
		return;
	}
	/* A stop recorded between the check and SIGCONT may have had its
	 * SIGSTOP cancelled by ours: stop it again; its record resumes it. */
	if (stop_pending(st, pid)) {
		kill(pid, SIGSTOP);
	}
}

static int on_stop(struct ebpf_state *st, const struct mt_ctl *c,
		   struct mt_hold_key *k);

int ebpf_on_ctl(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	const struct mt_ctl *c = data;
	struct mt_hold_key key = { .tgid = c->tgid };
	int err;

	if (len < sizeof(*c)) {
		return 0;
	}
	if (c->type == MT_CTL_FORK) {
		/* not a stop: nobody waits for it */
		return ebpf_note_fork(st, c->tgid, c->pad);
	}
	if (c->type == MT_CTL_EXIT) {
		ebpf_early_forget(st, (pid_t)c->tgid);
		return ebpf_note_exit(st, c->tgid);
	}
	if (c->type == MT_CTL_GONE) {
		ebpf_early_forget(st, (pid_t)c->tgid);
		ebpf_scope_gone(st, (pid_t)c->tgid);
		return ebpf_note_recorder(st, (pid_t)c->tgid,
					  c->pad & MT_TR_INTERPOSED, c->ts);
	}
	if (c->type == MT_CTL_HELLO) {
		/* not a stop: its interposer records it from now on */
		const char *late = getenv("MEMTRACK_TEST_HELLO_LATE_MS");

		if (late) {
			/* tests: a host that reads the hello late, after
			 * its process went on to exec (test-auto.c) */
			usleep((useconds_t)strtoul(late, NULL, 10) * 1000);
		}
		st->hellos++;
		ebpf_sample_hello(st, (int32_t)c->end, c->start, c->ts);
		ebpf_scope_release(st, (pid_t)c->tgid, c->ts);
		return 0;
	}
	if (c->type == MT_CTL_EXEC) {
		/* not a stop either: the exec gate attached what the new
		 * image runs, and its first executable mmap waits in the
		 * gate for this to be done */
		st->gate_execs++;
		st->in_ctl++;
		err = ebpf_record_maps(st, c->tgid, 1);
		st->in_ctl--;
		return err;
	}
	st->in_ctl++;
	err = on_stop(st, c, &key);
	st->in_ctl--;
	return err;
}

/* A stop announced on the ctl ring: act on it, resume when nothing is
 * left to wait for. */
static int on_stop(struct ebpf_state *st, const struct mt_ctl *c,
		   struct mt_hold_key *k)
{
	struct mt_hold_key key = *k;
	struct ebpf_hold *h;
	int err = 0, aerr;

	h = hold_get(st, c->tgid, 1);
	if (!h) {
		kill(c->tgid, SIGCONT);
		return -ENOMEM;
	}
	switch (c->type) {
	case MT_CTL_ATTACH:
		key.tid = c->tid;
		h->reasons |= HOLD_ATTACH;
		st->attach_stops++;
		if (c->pad & MT_CTL_AT_EXEC) {
			st->attach_stops_exec++;
		}
		/* the gate was there to spare it: say what it missed */
		ebpf_log(st, MT_LOG_DEBUG,
			 "attach: stopped process %u (thread %u) at %s of file %llu:%llu (0:0: not found)",
			 c->tgid, c->tid,
			 c->pad & MT_CTL_AT_EXEC ? "exec" : "an executable mmap",
			 c->dev, c->ino);
		if (st->stack_depth) {
			/* stopped at exec or at an executable mmap: what
			 * the process's stacks resolve through and are
			 * unwound with. Before the attach: building a table
			 * mallocs per row, and once the file just mapped is
			 * our libc every malloc of ours traps too */
			err = !(c->pad & MT_CTL_AT_EXEC) && c->start ?
				      ebpf_record_map(st, c->tgid, c->start,
						      c->end, c->off, c->dev,
						      c->ino) :
				      ebpf_record_maps(st, c->tgid,
						       c->pad & MT_CTL_AT_EXEC);
		}
		/* a stop for stacks at the mmap of a file attached already
		 * has nothing to attach: no scan of all the process's
		 * mappings (thousands of dlopens made that quadratic). An
		 * exec still scans: its interpreter may be new. */
		if (st->stack_depth && !(c->pad & MT_CTL_AT_EXEC) &&
		    (c->dev || c->ino) &&
		    ebpf_attach_known(st, c->dev, c->ino)) {
			aerr = 0;
		} else {
			aerr = ebpf_attach_process(st, c->tgid, c->dev,
						   c->ino);
		}
		if (!err) {
			err = aerr;
		}
		h = hold_get(st, c->tgid, 0); /* the array may have moved */
		if (h) {
			ebpf_hold_release(st, h, HOLD_ATTACH, &key);
		}
		break;
	case MT_CTL_THROTTLE:
		if (!(h->reasons & HOLD_THROTTLE)) {
			h->reasons |= HOLD_THROTTLE;
			st->throttled++;
		}
		st->stops++;
		ebpf_note(st, "stop", c->tgid, c->ts);
		break;
	default:
		ebpf_hold_release(st, h, 0, &key);
		break;
	}
	return err;
}

void ebpf_resume_all(struct ebpf_state *st)
{
	size_t i;

	for (i = 0; i < st->nholds; i++) {
		if (st->holds[i].reasons & HOLD_THROTTLE) {
			st->resumes++;
			ebpf_note(st, "resume", st->holds[i].pid, ebpf_now_ns());
		}
		kill(st->holds[i].pid, SIGCONT);
	}
	st->nholds = 0;
	st->throttled = 0;
}

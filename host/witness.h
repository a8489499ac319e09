/* SPDX-License-Identifier: MIT */
/*
 * Was a signal sent to memtrack's process group, or to memtrack alone?
 *
 * The kernel does not say: kill(pid) and kill(-pgid) give the same
 * siginfo (SI_USER and the sender's pid), and a terminal's SI_KERNEL is
 * only one of the ways a whole group is signalled (timeout, systemd, a CI
 * runner's cancel, `kill -TERM -PGID` all use SI_USER). The command shares
 * memtrack's group, so a group signal has reached it already and must not
 * be forwarded; a signal to memtrack alone must be, once.
 *
 * So a witness answers: a process of memtrack's group that blocks the
 * signals and does nothing else. A group signal stays pending in it; a
 * signal to memtrack alone never reaches it. Asked about signal N, it
 * takes a pending N (sigtimedwait, no wait) and says whether there was
 * one, so that each group signal is counted once.
 *
 * It is a clone child that sends no SIGCHLD when it ends (exit signal 0):
 * waitpid(-1) without __WCLONE does not see it, so memtrack's "no child
 * left, the tree is done" stays true of the traced tree. It keeps no fd
 * but its socket, makes only system calls (it runs in a copy of memtrack)
 * and ends when memtrack closes the socket or dies.
 *
 * Single-threaded use: from the poller thread only.
 */
#ifndef MT_HOST_WITNESS_H
#define MT_HOST_WITNESS_H

#include <signal.h>
#include <stdbool.h>

struct mt_witness;

/* Start the witness. set: the signals memtrack blocks (and takes on its
 * signalfd); they must be blocked in the caller already, so that the
 * witness never dies of one. Returns NULL (and says why at debug level)
 * when it cannot be started: the caller then has no way to tell. */
struct mt_witness *mt_witness_start(const sigset_t *set);

/* Whether signal signo, which memtrack has just received, was sent to
 * its whole process group. grace: when the witness has not got it, wait
 * that long for it once more, for senders that signal memtrack first and
 * the group next (timeout(1)); memtrack's own copy of that group signal
 * is then taken too, so that it does not count as another signal. */
bool mt_witness_group_got(struct mt_witness *w, int signo, int grace_ms);

/* End the witness and reap it. NULL is accepted. */
void mt_witness_stop(struct mt_witness *w);

#endif /* MT_HOST_WITNESS_H */

/* SPDX-License-Identifier: MIT */
/*
 * Open a file memtrack writes (the file sink's PATH, --stats=FILE) without
 * letting whoever made the name choose the file written.
 *
 * memtrack often runs as root, and its default output name
 * (PID.MemtrackArtifact.msgpack) is predictable: in a world-writable
 * directory another user can put a name there first. So:
 * - the last component is never followed (O_NOFOLLOW): memtrack creates
 *   no symlink, so one there was made by someone else;
 * - the open does not wait (O_NONBLOCK): a FIFO with no reader would hold
 *   memtrack forever;
 * - what was opened must be a regular file, or a character device
 *   (/dev/null, /dev/full, a terminal: the tests and users write there;
 *   only root can make one, so none is planted);
 * - a file with more than one name is refused: after O_NOFOLLOW a hard
 *   link is the way left for a planted name to reach a file elsewhere
 *   (/etc/shadow hard-linked into /tmp, where fs.protected_hardlinks is
 *   off), and the owner tells nothing there (the link is root's too);
 * - an existing file is cut to zero only after these checks.
 * Intermediate components are followed: they are the caller's choice.
 */
#ifndef MT_COMMON_OPEN_OUTPUT_H
#define MT_COMMON_OPEN_OUTPUT_H

/*
 * A write-only, close-on-exec, blocking descriptor of path, empty, or a
 * negative errno. *why is then a sentence for "PATH: <why>" when memtrack
 * refused the file itself (static storage), NULL when open(2) or fstat(2)
 * failed (say strerror) and on success.
 */
int mt_open_output(const char *path, const char **why);

#endif /* MT_COMMON_OPEN_OUTPUT_H */

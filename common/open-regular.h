/* SPDX-License-Identifier: MIT */
/*
 * Open a file named by untrusted input (a module path in a recording) for
 * reading, only if it is a regular file, without ever blocking: open(2)
 * of a FIFO waits for a writer and a device may do anything, so the file
 * is opened with O_NONBLOCK | O_NOCTTY, then checked with fstat().
 */
#ifndef MT_COMMON_OPEN_REGULAR_H
#define MT_COMMON_OPEN_REGULAR_H

/* A read-only, close-on-exec descriptor of path, or a negative errno:
 * -EINVAL when path is not a regular file (a FIFO, a device, a
 * directory), else open(2)'s error. */
int mt_open_regular(const char *path);

#endif /* MT_COMMON_OPEN_REGULAR_H */

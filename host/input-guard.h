/* SPDX-License-Identifier: MIT */
/*
 * Is the file a sink is about to truncate one this run reads?
 *
 * `--source replay:F --sink file:F` would empty F before the source reads
 * it. Sources open their input when they are created, before the sink is
 * opened, so the host can compare the sink's file with every regular file
 * memtrack has open for reading (same device and inode: links and other
 * spellings of the path count), without knowing how any source names its
 * input.
 */
#ifndef MT_HOST_INPUT_GUARD_H
#define MT_HOST_INPUT_GUARD_H

#include <stdbool.h>

/* True when path names an existing file that one of this process's file
 * descriptors has open for reading. */
bool mt_file_is_open_input(const char *path);

#endif /* MT_HOST_INPUT_GUARD_H */

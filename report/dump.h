/* SPDX-License-Identifier: MIT */
#ifndef MT_REPORT_DUMP_H
#define MT_REPORT_DUMP_H

/* Print every event of the artifact PATH ("-": stdin) to stdout, one JSON
 * object per line with the format's key names. Returns 0 or a negative
 * errno (logged). Events before a damaged spot are printed. */
int mt_dump(const char *path);

#endif /* MT_REPORT_DUMP_H */

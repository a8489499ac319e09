/* SPDX-License-Identifier: MIT */
#ifndef MT_CORE_REPORT_H
#define MT_CORE_REPORT_H

/* Print a summary of the recording PATH: events by type, allocations,
 * frees, bytes allocated and freed, peak live heap and what is still live
 * at the end, per process and in total. Returns 0 or a negative errno;
 * a damaged file still gives the report of the events before the damage. */
int mt_report(const char *path);

#endif /* MT_CORE_REPORT_H */

/* SPDX-License-Identifier: MIT */
/*
 * common/bpf-test-knobs.h - what the tests may ask of the BPF sources
 * through the environment, before their programs load. Header-only: the
 * callers link libbpf, libmtcommon does not.
 */
#ifndef MT_COMMON_BPF_TEST_KNOBS_H
#define MT_COMMON_BPF_TEST_KNOBS_H

#include <stdint.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

/* MEMTRACK_TEST_TRACKED_MAX=N: the map of traced processes holds N
 * (tests/test-untracked.sh: a tree larger than the map). 0 or libbpf's
 * error. */
static inline int mt_bpf_test_tracked_max(struct bpf_map *tracked)
{
	const char *v = getenv("MEMTRACK_TEST_TRACKED_MAX");

	return v ? bpf_map__set_max_entries(tracked, (uint32_t)atoi(v)) : 0;
}

/* MEMTRACK_TEST_THREADS_MAX=N: the map of threads in a call holds N
 * (tests/test-untracked.sh: more threads in calls than it holds). */
static inline int mt_bpf_test_threads_max(struct bpf_map *threads)
{
	const char *v = getenv("MEMTRACK_TEST_THREADS_MAX");

	return v ? bpf_map__set_max_entries(threads, (uint32_t)atoi(v)) : 0;
}

#endif /* MT_COMMON_BPF_TEST_KNOBS_H */

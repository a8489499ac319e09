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

/* $var=N: map holds N entries. 0 or libbpf's error. */
static inline int mt_bpf_test_map_max(struct bpf_map *map, const char *var)
{
	const char *v = getenv(var);

	return v ? bpf_map__set_max_entries(map, (uint32_t)atoi(v)) : 0;
}

/* MEMTRACK_TEST_TRACKED_MAX=N: the map of traced processes holds N
 * (tests/test-untracked.sh: a tree larger than the map). */
static inline int mt_bpf_test_tracked_max(struct bpf_map *tracked)
{
	return mt_bpf_test_map_max(tracked, "MEMTRACK_TEST_TRACKED_MAX");
}

/* MEMTRACK_TEST_THREADS_MAX=N: the map of threads in a call holds N
 * (tests/test-untracked.sh: more threads in calls than it holds). */
static inline int mt_bpf_test_threads_max(struct bpf_map *threads)
{
	return mt_bpf_test_map_max(threads, "MEMTRACK_TEST_THREADS_MAX");
}

#endif /* MT_COMMON_BPF_TEST_KNOBS_H */

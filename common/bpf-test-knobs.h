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
 * (tests/test-untracked.sh: a tree larger than the map). */
#define MT_TEST_TRACKED_MAX "MEMTRACK_TEST_TRACKED_MAX"
/* MEMTRACK_TEST_THREADS_MAX=N: the map of threads in a call holds N
 * (tests/test-untracked.sh: more threads in calls than it holds). */
#define MT_TEST_THREADS_MAX "MEMTRACK_TEST_THREADS_MAX"

/* $var=N: *max = N, and 1; 0 when unset. A light skeleton's maps take
 * their size this way (struct bpf_map_desc's max_entries). */
static inline int mt_bpf_test_max_entries(const char *var, uint32_t *max)
{
	const char *v = getenv(var);

	if (!v) {
		return 0;
	}
	*max = (uint32_t)atoi(v);
	return 1;
}

/* $var=N: map holds N entries. 0 or libbpf's error. */
static inline int mt_bpf_test_map_max(struct bpf_map *map, const char *var)
{
	uint32_t n;

	return mt_bpf_test_max_entries(var, &n) ?
		       bpf_map__set_max_entries(map, n) : 0;
}

static inline int mt_bpf_test_tracked_max(struct bpf_map *tracked)
{
	return mt_bpf_test_map_max(tracked, MT_TEST_TRACKED_MAX);
}

static inline int mt_bpf_test_threads_max(struct bpf_map *threads)
{
	return mt_bpf_test_map_max(threads, MT_TEST_THREADS_MAX);
}

#endif /* MT_COMMON_BPF_TEST_KNOBS_H */

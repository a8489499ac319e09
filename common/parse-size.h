/* SPDX-License-Identifier: MIT */
/*
 * common/parse-size.h - a byte count as sources take it in their args
 * (ring-size=, watermarks in bytes): decimal, 0x hex or 0 octal, with an
 * optional k, M, G or T suffix (powers of 1024, either case); and the
 * sampling options, which memtrack and its sources parse alike.
 */
#ifndef MT_COMMON_PARSE_SIZE_H
#define MT_COMMON_PARSE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0 and *out set, or -EINVAL (nothing, a bad number, trailing text,
 * more than a size_t holds). */
int mt_parse_size(const char *s, size_t *out);

/* The mean of --sample-bytes (sample-bytes=): a size of 1 to
 * MT_SAMPLE_MEAN_MAX (1T). Checked by memtrack and by each source that
 * takes it, alike. 0 or -EINVAL. */
int mt_parse_sample_bytes(const char *s, uint64_t *out);

/* --seed (seed=): a number of 0 to 2^64 - 1, decimal, 0x hex or 0 octal,
 * not negative. 0 or -EINVAL. */
int mt_parse_seed(const char *s, uint64_t *out);

/* --stack-depth (stack-depth=): frames per stack, 1 to
 * MT_STACK_DEPTH_MAX, decimal. 0 or -EINVAL. */
#define MT_STACK_DEPTH_MAX 127
int mt_parse_stack_depth(const char *s, unsigned int *out);

#endif /* MT_COMMON_PARSE_SIZE_H */

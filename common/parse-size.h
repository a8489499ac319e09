/* SPDX-License-Identifier: MIT */
/*
 * common/parse-size.h - a byte count as sources take it in their args
 * (ring-size=, watermarks in bytes): decimal, 0x hex or 0 octal, with an
 * optional k, M, G or T suffix (powers of 1024, either case).
 */
#ifndef MT_COMMON_PARSE_SIZE_H
#define MT_COMMON_PARSE_SIZE_H

#include <stddef.h>

/* 0 and *out set, or -EINVAL (nothing, a bad number, trailing text,
 * more than a size_t holds). */
int mt_parse_size(const char *s, size_t *out);

#endif /* MT_COMMON_PARSE_SIZE_H */

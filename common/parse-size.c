/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "parse-size.h"
#include "sample-draw.h"

int mt_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s) {
		return -EINVAL;
	}
	switch (tolower((unsigned char)*end)) {
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	case 't':
		shift = 40;
		break;
	default:
		break;
	}
	if (shift) {
		end++;
	}
	/* 16777216T wrapped to 0 before: too large is an error too */
	if (*end || v > (unsigned long long)SIZE_MAX >> shift) {
		return -EINVAL;
	}
	*out = (size_t)(v << shift);
	return 0;
}

int mt_parse_sample_bytes(const char *s, uint64_t *out)
{
	size_t v;

	if (mt_parse_size(s, &v) || !v || v > MT_SAMPLE_MEAN_MAX) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int mt_parse_seed(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int mt_parse_stack_depth(const char *s, unsigned int *out)
{
	long v;
	char *end;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > MT_STACK_DEPTH_MAX) {
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

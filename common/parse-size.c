/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "parse-size.h"

int mt_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s) {
		return -EINVAL;
	}
	switch (tolower((unsigned char)*end)) {
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

void *mt_array_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap) {
		return arr;
	}
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			errno = ENOMEM;
			return NULL;
		}
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem) {
		errno = ENOMEM;
		return NULL;
	}
	p = realloc(arr, ncap * elem);
	if (p) {
		memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
		*cap = ncap;
	}
	return p;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/odd-file.c - a site whose frame name holds a ';' (the
 * html report's search, tests/test-report-html.sh): the functions below
 * the #line say they are in "odd;name.c", so their frames read
 * 'semi_site (odd;name.c:LINE)', as a Rust frame reads '<[u8; 32] as
 * ...>'. From main:
 *   semi_site    64 KiB, never freed
 *   plain_site   1 KiB, never freed
 * Exits 0.
 */
#include <stdlib.h>

#include "chain.h"

static void *volatile sink;

int semi_site(int x);
int plain_site(int x);

CHAIN_FN int plain_site(int x)
{
	sink = malloc(1 << 10);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

#line 1 "odd;name.c"
CHAIN_FN int semi_site(int x)
{
	sink = malloc(64 << 10);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

int main(void)
{
	int r = semi_site(0);

	r += plain_site(0);
	__asm__ volatile("" : "+r"(r)); /* no tail calls: main stays */
	return r == 2 ? 0 : 1;
}

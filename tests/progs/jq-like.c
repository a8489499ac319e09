/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/jq-like.c - allocations made as jq makes them, for the text
 * report's site names (tests/test-report.sh, issue 29): every block comes
 * from one wrapper, jv_mem_alloc(), which jq's report named every site by.
 * jv_string_sized() over it is called from two places (a wrapper of a
 * wrapper); parse_string() is called from parse_value() at two lines, so
 * that those two sites share their naming frame and differ in their
 * caller's line only. The sites, by bytes:
 *   parse_string, for values   20 x (16 + 48) = 1280 B
 *   parse_string, for keys     20 x (16 + 16) =  640 B
 *   jv_array_new                5 x 96        =  480 B
 *   jv_object_new               5 x 64        =  320 B
 *   dump_value                  2 x (16 + 84) =  200 B
 * Every block is freed. Built -O2 -g: KEEP and the asm after each call
 * keep every function a frame of its own (-O2 turns "return malloc(n)"
 * into a jump, and the caller's frame is gone from the stack).
 */
#include <stdlib.h>

#define KEEP __attribute__((noipa))
/* after a call, so that the call is no tail call */
#define KEEP_FRAME(p) __asm__ volatile("" : "+r"(p))

#define NVALUES 20
#define NARRAYS 5

static void *blocks[2 * NVALUES + 2 * NARRAYS + 2];
static size_t nblocks;

KEEP static void *jv_mem_alloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		abort();
	}
	KEEP_FRAME(p);
	return p;
}

KEEP static void *jv_string_sized(size_t len)
{
	void *p = jv_mem_alloc(16 + len);

	KEEP_FRAME(p);
	return p;
}

KEEP static void *jv_array_new(size_t n)
{
	void *p = jv_mem_alloc(16 + 8 * n);

	KEEP_FRAME(p);
	return p;
}

KEEP static void *jv_object_new(void)
{
	void *p = jv_mem_alloc(64);

	KEEP_FRAME(p);
	return p;
}

KEEP static void *parse_string(size_t len)
{
	void *p = jv_string_sized(len);

	KEEP_FRAME(p);
	return p;
}

KEEP static void parse_value(int i)
{
	void *p;

	p = parse_string(16); /* the key */
	KEEP_FRAME(p);
	blocks[nblocks++] = p;
	p = parse_string(48); /* the value */
	KEEP_FRAME(p);
	blocks[nblocks++] = p;
	if (i % (NVALUES / NARRAYS) == 0) {
		p = jv_array_new(10);
		KEEP_FRAME(p);
		blocks[nblocks++] = p;
		p = jv_object_new();
		KEEP_FRAME(p);
		blocks[nblocks++] = p;
	}
}

KEEP static void dump_value(void)
{
	void *p = jv_string_sized(84);

	KEEP_FRAME(p);
	blocks[nblocks++] = p;
}

int main(void)
{
	size_t i;

	for (i = 0; i < NVALUES; i++) {
		parse_value((int)i);
	}
	for (i = 0; i < 2; i++) {
		dump_value();
	}
	for (i = 0; i < nblocks; i++) {
		free(blocks[i]);
	}
	return 0;
}

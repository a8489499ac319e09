/* SPDX-License-Identifier: MIT */
/*
 * The distance to the next sample point of --sample-bytes: exponential of
 * mean N bytes, so that the points form a Poisson process over the bytes a
 * thread allocates (Go's runtime and tcmalloc sample so). Shared by the
 * interposer (plugins/preload/interposer/sample.c), which has no libm,
 * and the eBPF source's sampling of what uprobes record under auto
 * (plugins/ebpf/sample.c): one draw, one distribution.
 */
#ifndef MT_COMMON_SAMPLE_DRAW_H
#define MT_COMMON_SAMPLE_DRAW_H

#include <stdint.h>
#include <string.h>

/* the largest mean a source takes (--sample-bytes 1T) */
#define MT_SAMPLE_MEAN_MAX (1ull << 40)

static inline uint64_t mt_splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * ln(u) for u in (0, 1]: u = m * 2^e with m in [1, 2), ln(m) =
 * 2 atanh(z) with z = (m - 1) / (m + 1) <= 1/3, whose series to z^11 is
 * within 2e-7 of it: far closer than a sampling needs.
 */
static inline double mt_ln_unit(double u)
{
	uint64_t bits;
	double m, z, z2;
	int e;

	memcpy(&bits, &u, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
	memcpy(&m, &bits, sizeof(m));
	z = (m - 1) / (m + 1);
	z2 = z * z;
	return e * 0.69314718055994530942 +
	       z * (2 + z2 * (2.0 / 3 + z2 * (2.0 / 5 + z2 * (2.0 / 7 +
		    z2 * (2.0 / 9 + z2 * (2.0 / 11))))));
}

/* The distance to the next sample point: -ln(U) mean, U uniform in
 * (0, 1] from *rng. U >= 2^-53: at most 37 means, which a mean of at
 * most MT_SAMPLE_MEAN_MAX keeps in range. */
static inline int64_t mt_sample_draw(uint64_t *rng, uint64_t mean)
{
	double u = (double)((mt_splitmix(rng) >> 11) + 1) * 0x1p-53;
	double d = -mt_ln_unit(u) * (double)mean;

	return (int64_t)d + 1;
}

/*
 * A sampled recording says so before its first event, in an "MTKR"
 * payload (little-endian): "MTKR", u32 version (1), u32 records (1), u32
 * FNV-1a-32 of the records, then u64 mean bytes between samples, u64
 * seed, u32 flags (bit 0: the seed was given), u32 0. The report
 * estimates from it (report/report.c); the reference reader skips it.
 * Both sources that sample write it, the same bytes for the same run.
 */
#define MT_SAMPLE_PAYLOAD_LEN 40

static inline void mt_sample_payload(unsigned char p[MT_SAMPLE_PAYLOAD_LEN],
				     uint64_t mean, uint64_t seed, int seeded)
{
	uint32_t v = 1, h = 2166136261u, fl = seeded ? 1 : 0;

	memset(p, 0, MT_SAMPLE_PAYLOAD_LEN);
	memcpy(p, "MTKR", 4);
	memcpy(p + 4, &v, 4);
	memcpy(p + 8, &v, 4);
	memcpy(p + 16, &mean, 8);
	memcpy(p + 24, &seed, 8);
	memcpy(p + 32, &fl, 4);
	for (size_t i = 16; i < MT_SAMPLE_PAYLOAD_LEN; i++) {
		h = (h ^ p[i]) * 16777619u;
	}
	memcpy(p + 12, &h, 4);
}

#endif /* MT_COMMON_SAMPLE_DRAW_H */

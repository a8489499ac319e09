/* SPDX-License-Identifier: MIT */
/*
 * tests/scenarios.h - one table of traced programs (tests/progs/) and what
 * each source must record of them, so that every source runs the same
 * cases through ebpf-testlib.
 */
#ifndef MT_TEST_SCENARIOS_H
#define MT_TEST_SCENARIOS_H

#include <stddef.h>

enum scenario_outcome {
	/* every line the program reports is one event, exactly */
	SC_SEEN = 1,
	/* the lines of the sizes in seen_sizes are one event each, exactly
	 * as SC_SEEN; of the others (an allocator the source cannot see)
	 * there is no event at all, not even a Free of their addresses; no
	 * other allocator event is recorded; memtrack does not name the
	 * file (nothing at exec tells it apart) */
	SC_PARTIAL,
	/* none of the sizes it reports is in the recording, and memtrack's
	 * stderr names the file and suggests --source ebpf */
	SC_REFUSED,
};

enum scenario_how {
	SC_PLAIN = 0, /* tests/progs/PROG */
	SC_SHELL,     /* sh -c "alloc-basic; alloc-ctor": fork and exec */
	SC_DLOPEN,    /* PROG tests/progs/.libs/libdlalloc.so */
	SC_DLOPEN_CXX, /* PROG tests/progs/.libs/libcxxlocal.so */
	SC_CONTROL,   /* PROG SOCKET with --start-disabled --control */
};

struct scenario {
	const char *name;
	const char *prog;
	enum scenario_how how;
	size_t min_expect; /* report lines the program must print */
	int optional;      /* built only when its library is installed */
	enum scenario_outcome ebpf, preload;
	/* SC_PARTIAL: the sizes of the lines that are seen, 0-terminated */
	const unsigned long long *seen_sizes;
};

extern const struct scenario scenarios[];
extern const size_t nscenarios;

/* Run scenario sc under memtrack --source source and check the recording
 * against outcome (Check assertions). */
void scenario_run(const struct scenario *sc, const char *source,
		  enum scenario_outcome outcome);

#endif

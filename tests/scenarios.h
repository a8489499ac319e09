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
	/* under SC_SECCOMP only: the command is killed by SIGSYS */
	SC_SIGSYS,
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

/* Where the scenario's command runs, under memtrack. */
enum scenario_confine {
	SC_UNCONFINED = 0,
	/* unshare --pid --fork --mount-proc (root): a pid namespace of its
	 * own, as in a container. The program reports the ids memtrack's
	 * namespace sees (report.h, MT_REPORT_PROC) and the check wants
	 * those in the recording (skipped where unshare cannot run) */
	SC_PIDNS,
	/* the same with --user --map-root-user (without root too) */
	SC_USERNS,
	/* tests/progs/seccomp-run with an allow-list of exactly the calls
	 * the command makes without memtrack (strace -f, just before):
	 * anything the interposer adds kills it with SIGSYS. The program
	 * reports as in SC_PIDNS, which takes getpid and gettid off the
	 * list (report.h) */
	SC_SECCOMP,
};

/* How the namespace's ids may show in the recording (SC_PIDNS and
 * SC_USERNS). */
enum scenario_ids {
	/* never: each process has memtrack's pid */
	SC_IDS_OURS = 0,
	/* where memtrack says "N events ... keep their namespace's ids"
	 * for at least as many events: what libc mode does today with
	 * processes that end before it reads their hello (issue 27) */
	SC_IDS_SAID,
};

/* scenario_run() with the command confined by how. The check is the
 * same, event for event; for SC_SECCOMP the command must also have run
 * under its allow-list without memtrack, and outcome may be SC_SIGSYS
 * (a known harm: memtrack exits 128 + SIGSYS, the program did not run
 * through). */
void scenario_run_confined(const struct scenario *sc, const char *source,
			   enum scenario_outcome outcome,
			   enum scenario_confine how, enum scenario_ids ids);

#endif

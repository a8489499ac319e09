/* SPDX-License-Identifier: MIT */
/*
 * One recording: load the plugins, spawn the command held, arm the source,
 * let the command run, poll the source into the pipeline until every
 * process of the tree has exited (or the source is exhausted), drain, and
 * finish the file.
 */
#ifndef MT_HOST_RUN_H
#define MT_HOST_RUN_H

#include <stddef.h>

#include "source-args.h"

struct mt_run_opts {
	const char *source;  /* "NAME[:ARGS]" */
	/* --ring-size...: the value, "" for --stacks, NULL when not given;
	 * appended to the source's ARGS (source-args.h) */
	const char *source_opts[MT_SOPT_COUNT];
	const char *encoder; /* "NAME[:ARGS]" */
	const char *sink;    /* "NAME[:ARGS]"; NULL: default artifact name */
	unsigned int workers;
	size_t batch;
	size_t chunk;        /* events per source read */
	const char *control_path;
	int start_disabled;
	unsigned int throttle_us; /* testing: sleep after each chunk */
	const char *stats_path;   /* --stats=FILE: JSON lines */
	int print_summary;        /* --stats or -v */
	int live_status;          /* a status line on stderr */
	char **argv;         /* the command, NULL-terminated; NULL: none */
	/* --pid: running processes to record instead of a command */
	const int *pids;
	size_t npids;
	unsigned long duration_ms; /* --duration: stop after it; 0: none */
};

/* Returns the process exit status: the command's (128 + signal when it was
 * killed), 1 when memtrack itself failed, 0 for a clean command-less run. */
int mt_run(const struct mt_run_opts *opts);

#endif /* MT_HOST_RUN_H */

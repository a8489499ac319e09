/* SPDX-License-Identifier: MIT */
/*
 * host/source-args.c - see source-args.h.
 *
 * A source's args are its own grammar: "replay:FILE" is one path, where
 * ",ring-size=4096" appended would become part of the file name. So the
 * host appends an option only to a source that says it takes it
 * (MT_SOURCE_TAKES_*, ABI 1.2), and refuses it for one that says it does
 * not. A source of an older ABI says nothing: it gets them all, as before,
 * and refuses through its own parser what it does not know.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "source-args.h"

/* the eBPF source traps on every call before it could skip one */
#define SAMPLING_WHY                                                       \
	"sampling saves nothing where every allocator call pays a uprobe's " \
	"trap (the ebpf source); --source preload samples in the process"

static const struct {
	const char *option; /* on memtrack's command line */
	const char *arg;    /* the source's arg */
	uint32_t flag;      /* the source takes it */
	const char *why;    /* said when a source does not (NULL: nothing) */
} opts[MT_SOPT_COUNT] = {
	[MT_SOPT_RING_SIZE] = { "--ring-size", "ring-size",
				MT_SOURCE_TAKES_RING_SIZE },
	[MT_SOPT_HIGH_WATERMARK] = { "--high-watermark", "high-watermark",
				     MT_SOURCE_TAKES_WATERMARKS },
	[MT_SOPT_LOW_WATERMARK] = { "--low-watermark", "low-watermark",
				    MT_SOURCE_TAKES_WATERMARKS },
	[MT_SOPT_STACKS] = { "--stacks", "stacks", MT_SOURCE_TAKES_STACKS },
	[MT_SOPT_STACK_DEPTH] = { "--stack-depth", "stack-depth",
				  MT_SOURCE_TAKES_STACKS },
	[MT_SOPT_SAMPLE_BYTES] = { "--sample-bytes", "sample-bytes",
				   MT_SOURCE_TAKES_SAMPLING, SAMPLING_WHY },
	[MT_SOPT_SEED] = { "--seed", "seed", MT_SOURCE_TAKES_SAMPLING,
			   SAMPLING_WHY },
};

const char *mt_source_opt_name(enum mt_source_opt opt)
{
	return opts[opt].option;
}

int mt_source_opt_valid(const char *value)
{
	return value && *value && !strchr(value, ',');
}

static int declares_options(const struct mt_plugin *src)
{
	return src->ops.source.abi_major == 1 &&
	       src->ops.source.abi_minor >= 2;
}

bool mt_source_takes(const struct mt_plugin *src, enum mt_source_opt opt)
{
	/* a source older than 1.2 says nothing: it gets every option */
	return !declares_options(src) ||
	       (src->ops.source.flags & opts[opt].flag);
}

int mt_source_args(const struct mt_plugin *src, const char *spec_args,
		   const char *const values[MT_SOPT_COUNT], char **out)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f;
	int i, n = 0;

	*out = NULL;
	for (i = 0; i < MT_SOPT_COUNT; i++) {
		if (values[i] && !mt_source_takes(src, i)) {
			mt_err("%s does not apply to source '%s'%s%s",
			       opts[i].option, src->desc->name,
			       opts[i].why ? ": " : "",
			       opts[i].why ? opts[i].why : "");
			return -EINVAL;
		}
	}
	f = open_memstream(&buf, &size);
	if (!f) {
		return -ENOMEM;
	}
	if (spec_args && *spec_args) {
		fputs(spec_args, f);
		n++;
	}
	for (i = 0; i < MT_SOPT_COUNT; i++) {
		if (!values[i]) {
			continue;
		}
		fprintf(f, "%s%s%s%s", n++ ? "," : "", opts[i].arg,
			*values[i] ? "=" : "", values[i]);
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	if (!n) {
		free(buf);
		buf = NULL;
	}
	*out = buf;
	return 0;
}

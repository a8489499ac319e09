/* SPDX-License-Identifier: MIT */
/*
 * The source's argument string: the ARGS of --source NAME:ARGS, then the
 * host options that belong to the source (--ring-size, --stacks...) as
 * args of the same name, for the sources that take them.
 */
#ifndef MT_HOST_SOURCE_ARGS_H
#define MT_HOST_SOURCE_ARGS_H

#include <stdbool.h>

#include "plugin.h"

enum mt_source_opt {
	MT_SOPT_RING_SIZE,      /* --ring-size BYTES: ring-size=BYTES */
	MT_SOPT_HIGH_WATERMARK, /* --high-watermark X */
	MT_SOPT_LOW_WATERMARK,  /* --low-watermark X */
	MT_SOPT_STACKS,         /* --stacks: stacks */
	MT_SOPT_STACK_DEPTH,    /* --stack-depth N */
	MT_SOPT_SAMPLE_BYTES,   /* --sample-bytes SIZE */
	MT_SOPT_SEED,           /* --seed N */
	MT_SOPT_COUNT,
};

/* "--ring-size" for MT_SOPT_RING_SIZE... */
const char *mt_source_opt_name(enum mt_source_opt opt);

/* Is value acceptable as the value of a source option: not empty, and
 * without the ',' that separates args? */
int mt_source_opt_valid(const char *value);

/* Whether source src takes host option opt (its ABI 1.2 flags; an older
 * source is given every option). */
bool mt_source_takes(const struct mt_plugin *src, enum mt_source_opt opt);

/*
 * Build the args for source plugin src. spec_args: what followed "NAME:"
 * (NULL: nothing); values[opt]: the option's value, "" for one without a
 * value (--stacks), NULL when not given. *out is malloc'd, or NULL when
 * there are no args at all.
 *
 * Returns 0; -EINVAL when an option given does not apply to this source
 * (a usage error, logged naming the option and the source); -ENOMEM.
 */
int mt_source_args(const struct mt_plugin *src, const char *spec_args,
		   const char *const values[MT_SOPT_COUNT], char **out);

#endif /* MT_HOST_SOURCE_ARGS_H */

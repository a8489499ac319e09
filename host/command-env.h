/* SPDX-License-Identifier: MIT */
/*
 * The command's environment: memtrack's own, with the variables a source
 * asks for (mt_source_ops.command_env) set on top.
 */
#ifndef MT_CORE_COMMAND_ENV_H
#define MT_CORE_COMMAND_ENV_H

/*
 * A malloc'd NULL-terminated copy of base (memtrack's environ) where each
 * "NAME=VALUE" of set replaces NAME, except LD_PRELOAD, whose value goes in
 * front of the one base has (separated by ':'), so that the user's
 * preloads stay loaded after the source's. Built before the command is
 * forked: the held child does not allocate. Returns NULL with errno set
 * (ENOMEM, EINVAL for an entry without '='); free with
 * mt_command_env_free().
 */
char **mt_command_env(char *const *base, const char *const *set);

void mt_command_env_free(char **env);

#endif /* MT_CORE_COMMAND_ENV_H */

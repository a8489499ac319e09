/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command-env.h"

static size_t name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq ? (size_t)(eq - entry) : 0;
}

static bool same_name(const char *a, const char *b, size_t len)
{
	return name_len(a) == len && strncmp(a, b, len) == 0;
}

/* "LD_PRELOAD=ours" in front of "LD_PRELOAD=theirs": "LD_PRELOAD=ours:theirs" */
static char *prepend_preload(const char *ours, const char *theirs)
{
	const char *t = theirs + sizeof("LD_PRELOAD=") - 1;
	char *s;

	if (!*t) {
		return strdup(ours);
	}
	if (asprintf(&s, "%s:%s", ours, t) < 0) {
		return NULL;
	}
	return s;
}

char **mt_command_env(char *const *base, const char *const *set)
{
	size_t nbase = 0, nset = 0, n = 0, i, j;
	char **env;

	while (base && base[nbase]) {
		nbase++;
	}
	while (set && set[nset]) {
		if (!name_len(set[nset])) {
			errno = EINVAL;
			return NULL;
		}
		nset++;
	}
	env = calloc(nbase + nset + 1, sizeof(*env));
	if (!env) {
		return NULL;
	}
	for (i = 0; i < nbase; i++) {
		const char *b = base[i];
		bool replaced = false;

		for (j = 0; j < nset; j++) {
			size_t len = name_len(set[j]);

			if (!same_name(b, set[j], len)) {
				continue;
			}
			replaced = true;
			break;
		}
		if (replaced) {
			continue; /* set[j] goes in below */
		}
		env[n] = strdup(b);
		if (!env[n++]) {
			goto error;
		}
	}
	for (j = 0; j < nset; j++) {
		const char *theirs = NULL;
		size_t len = name_len(set[j]);

		for (i = 0; i < nbase; i++) {
			if (same_name(base[i], set[j], len)) {
				theirs = base[i];
			}
		}
		if (theirs && len == sizeof("LD_PRELOAD") - 1 &&
		    strncmp(set[j], "LD_PRELOAD", len) == 0) {
			env[n] = prepend_preload(set[j], theirs);
		} else {
			env[n] = strdup(set[j]);
		}
		if (!env[n++]) {
			goto error;
		}
	}
	return env;

error:
	mt_command_env_free(env);
	errno = ENOMEM;
	return NULL;
}

void mt_command_env_free(char **env)
{
	size_t i;

	for (i = 0; env && env[i]; i++) {
		free(env[i]);
	}
	free(env);
}

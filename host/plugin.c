/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-check.h"
#include "log.h"
#include "plugin.h"

#define MT_MAX_DIRS 16

/* The smallest structs a 1.0 plugin may hand us: up to the last field of
 * ABI 1.0. A plugin's struct may be larger (newer minor) or exactly this. */
#define MIN_DESC_SIZE (offsetof(struct mt_plugin_desc, ops) + sizeof(void *))
#define MIN_SOURCE_SIZE \
	(offsetof(struct mt_source_ops, destroy) + sizeof(void *))
#define MIN_ENCODER_SIZE \
	(offsetof(struct mt_encoder_ops, decode) + sizeof(void *))
#define MIN_SINK_SIZE (offsetof(struct mt_sink_ops, close) + sizeof(void *))

const char *mt_plugin_kind_name(enum mt_plugin_kind kind)
{
	switch (kind) {
	case MT_PLUGIN_SOURCE:
		return "source";
	case MT_PLUGIN_ENCODER:
		return "encoder";
	case MT_PLUGIN_SINK:
		return "sink";
	}
	return NULL;
}

static int set_why(char **why, const char *fmt, ...) MT_PRINTF(2, 3);

static int set_why(char **why, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	if (!why) {
		return 0;
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0) {
		msg = NULL;
	}
	va_end(ap);
	free(*why);
	*why = msg;
	return 0;
}

/* Search directories, in order. Returns how many were filled in. */
static size_t search_dirs(char dirs[][PATH_MAX], size_t max)
{
	const char *env = getenv("MEMTRACK_PLUGIN_PATH");
	char exe[PATH_MAX];
	size_t n = 0;
	ssize_t len;

	if (env) {
		const char *p = env;

		while (*p && n < max) {
			size_t l = strcspn(p, ":");

			if (l > 0 && l < PATH_MAX) {
				memcpy(dirs[n], p, l);
				dirs[n][l] = '\0';
				n++;
			}
			p += l;
			if (*p == ':') {
				p++;
			}
		}
	}

	/* An uninstalled ./memtrack finds the plugins built next to it. */
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0 && n < max) {
		size_t bl = strlen(MT_ABS_BUILDDIR);

		exe[len] = '\0';
		if (strncmp(exe, MT_ABS_BUILDDIR "/", bl + 1) == 0 &&
		    !strchr(exe + bl + 1, '/')) {
			snprintf(dirs[n++], PATH_MAX, "%s/plugins/.libs",
				 MT_ABS_BUILDDIR);
		}
	}
	if (n < max) {
		snprintf(dirs[n++], PATH_MAX, "%s", MT_PLUGINDIR);
	}
	return n;
}

/* The header's rule, [a-z0-9-]+ (1-64): the name is also half of the
 * file name, <kind>-<name>.so. */
static bool valid_name(const char *name)
{
	const char *c;

	if (!name || !*name || strlen(name) > 64) {
		return false;
	}
	for (c = name; *c; c++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '-')) {
			return false;
		}
	}
	return true;
}

/* Every vtable starts like this. */
struct ops_header {
	uint32_t size;
	uint16_t abi_major;
	uint16_t abi_minor;
};

/*
 * A struct larger than ours is fine as long as we lose nothing by cutting
 * it: every byte past host_size must be zero (libbpf's rule). A plugin
 * that set a field we do not know would otherwise run without it.
 */
static int check_tail(struct mt_plugin *p, const char *what, const void *s,
		      size_t plugin_size, size_t host_size, char **why)
{
	const unsigned char *b = s;
	size_t i;

	for (i = host_size; i < plugin_size; i++) {
		if (b[i]) {
			set_why(why,
				"%s: plugin '%s': %s of %zu bytes, memtrack (ABI %u.%u) knows %zu: byte %zu is not zero (a field of a newer memtrack?)",
				p->path, p->desc->name, what, plugin_size,
				MT_ABI_MAJOR, MT_ABI_MINOR, host_size, i);
			return -E2BIG;
		}
	}
	return 0;
}

static int check_ops(struct mt_plugin *p, const void *ops, size_t min,
		     size_t host_size, void *copy, char **why)
{
	const struct ops_header *h = ops;
	const char *kind = mt_plugin_kind_name(p->desc->kind);
	char kind_ops[32];
	int err;

	if (!ops) {
		set_why(why, "%s: %s plugin '%s' has no operations", p->path,
			kind, p->desc->name);
		return -EINVAL;
	}
	if (h->abi_major != MT_ABI_MAJOR || h->abi_minor > MT_ABI_MINOR) {
		set_why(why,
			"%s: %s operations built for plugin ABI %u.%u, memtrack has ABI %u.%u",
			p->path, kind, h->abi_major, h->abi_minor,
			MT_ABI_MAJOR, MT_ABI_MINOR);
		return -EPROTO;
	}
	if (h->size < min) {
		set_why(why,
			"%s: %s operations are %u bytes, ABI %u.0 needs at least %zu",
			p->path, kind, h->size, MT_ABI_MAJOR, min);
		return -EPROTO;
	}
	snprintf(kind_ops, sizeof(kind_ops), "%s operations", kind);
	err = check_tail(p, kind_ops, ops, h->size, host_size, why);
	if (err < 0) {
		return err;
	}
	/* Fields past the plugin's size keep their zero default. */
	memset(copy, 0, host_size);
	memcpy(copy, ops, h->size < host_size ? h->size : host_size);
	return 0;
}

static int check_plugin(struct mt_plugin *p, char **why)
{
	const struct mt_plugin_desc *d = p->desc;
	int err;

	if (!d) {
		set_why(why, "%s: %s() returned NULL", p->path,
			MT_PLUGIN_ENTRY_SYMBOL);
		return -EINVAL;
	}
	if (d->abi_major != MT_ABI_MAJOR || d->abi_minor > MT_ABI_MINOR) {
		set_why(why,
			"%s: plugin built for ABI %u.%u, memtrack has ABI %u.%u (%s)",
			p->path, d->abi_major, d->abi_minor, MT_ABI_MAJOR,
			MT_ABI_MINOR,
			d->abi_major != MT_ABI_MAJOR ?
				"major versions differ" :
				"plugin needs a newer memtrack");
		return -EPROTO;
	}
	if (d->size < MIN_DESC_SIZE) {
		set_why(why, "%s: descriptor is %u bytes, ABI %u.0 needs %zu",
			p->path, d->size, MT_ABI_MAJOR, MIN_DESC_SIZE);
		return -EPROTO;
	}
	if (!mt_plugin_kind_name(d->kind)) {
		set_why(why, "%s: unknown plugin kind %u", p->path, d->kind);
		return -EINVAL;
	}
	if (!valid_name(d->name)) {
		set_why(why, "%s: invalid plugin name '%.64s' (want [a-z0-9-]+, 1-64 characters)",
			p->path, d->name ? d->name : "(null)");
		return -EINVAL;
	}
	if (!d->description || !d->version) {
		set_why(why, "%s: plugin '%s' lacks a description or version",
			p->path, d->name);
		return -EINVAL;
	}
	err = check_tail(p, "descriptor", d, d->size, sizeof(*d), why);
	if (err < 0) {
		return err;
	}

	switch (d->kind) {
	case MT_PLUGIN_SOURCE:
		err = check_ops(p, d->ops.source, MIN_SOURCE_SIZE,
				sizeof(p->ops.source), &p->ops.source, why);
		if (!err && (!p->ops.source.create || !p->ops.source.start ||
			     !p->ops.source.poll_fd || !p->ops.source.read ||
			     !p->ops.source.destroy)) {
			err = -EINVAL;
		}
		break;
	case MT_PLUGIN_ENCODER:
		err = check_ops(p, d->ops.encoder, MIN_ENCODER_SIZE,
				sizeof(p->ops.encoder), &p->ops.encoder, why);
		if (!err && (!p->ops.encoder.create || !p->ops.encoder.encode ||
			     !p->ops.encoder.frame_free ||
			     !p->ops.encoder.destroy)) {
			err = -EINVAL;
		}
		break;
	default:
		err = check_ops(p, d->ops.sink, MIN_SINK_SIZE,
				sizeof(p->ops.sink), &p->ops.sink, why);
		if (!err && (!p->ops.sink.open || !p->ops.sink.write ||
			     !p->ops.sink.close)) {
			err = -EINVAL;
		}
		break;
	}
	if (err == -EINVAL && why && !*why) {
		set_why(why, "%s: %s plugin '%s' lacks a mandatory operation",
			p->path, mt_plugin_kind_name(d->kind), d->name);
	}
	return err;
}

/* Checked with reads, before dlopen() maps it: a truncated file would
 * otherwise kill us with SIGBUS (elf-check.h). */
static int check_file(const char *path, char **why)
{
	char reason[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int err;

	if (fd < 0) {
		err = -errno;
		set_why(why, "%s: %s", path, strerror(errno));
		return err;
	}
	err = mt_elf_check_loadable(fd, reason, sizeof(reason));
	close(fd);
	if (err == -ENOEXEC) {
		set_why(why, "%s: %s", path, reason);
	} else if (err < 0) {
		set_why(why, "%s: %s", path, strerror(-err));
	}
	return err;
}

int mt_plugin_open(const char *path, struct mt_plugin **out, char **why)
{
	struct mt_plugin *p = NULL;
	mt_plugin_entry_fn entry;
	struct stat st;
	int err;

	*out = NULL;
	if (stat(path, &st) < 0) {
		err = -errno;
		set_why(why, "%s: %s", path, strerror(errno));
		goto error;
	}
	if (!S_ISREG(st.st_mode)) {
		set_why(why, "%s: not a regular file", path);
		err = -EINVAL;
		goto error;
	}
	err = check_file(path, why);
	if (err < 0) {
		goto error;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		err = -ENOMEM;
		set_why(why, "%s: out of memory", path);
		goto error;
	}
	/* RTLD_NOW: an unresolved symbol is reported here, not as a crash in
	 * the middle of a run. */
	p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!p->handle) {
		set_why(why, "%s: cannot load: %s (check it with 'ldd %s')",
			path, dlerror(), path);
		err = -ENOEXEC;
		goto error;
	}
	*(void **)&entry = dlsym(p->handle, MT_PLUGIN_ENTRY_SYMBOL);
	if (!entry) {
		set_why(why, "%s: not a memtrack plugin (no %s symbol)", path,
			MT_PLUGIN_ENTRY_SYMBOL);
		err = -ENOENT;
		goto error;
	}
	p->desc = entry();
	err = check_plugin(p, why);
	if (err < 0) {
		goto error;
	}
	*out = p;
	return 0;

error:
	mt_plugin_close(p);
	return err;
}

void mt_plugin_close(struct mt_plugin *p)
{
	if (!p) {
		return;
	}
	/* Valgrind needs the code mapped to name frames in leak reports. */
	if (p->handle && !getenv("MEMTRACK_PLUGIN_NOCLOSE")) {
		dlclose(p->handle);
	}
	free(p->path);
	free(p);
}

int mt_plugin_load(enum mt_plugin_kind kind, const char *name,
		   struct mt_plugin **out)
{
	char dirs[MT_MAX_DIRS][PATH_MAX];
	size_t n = search_dirs(dirs, MT_MAX_DIRS);
	const char *kname = mt_plugin_kind_name(kind);
	char path[PATH_MAX + 128];
	char *why = NULL;
	size_t i;
	int err;

	*out = NULL;
	if (!valid_name(name)) {
		mt_err("invalid %s name '%s'", kname, name);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s-%s.so", dirs[i], kname,
			 name);
		if (access(path, F_OK) == 0) {
			break;
		}
	}
	if (i == n) {
		mt_err("no %s plugin '%s' (looked for %s-%s.so in "
		       "$MEMTRACK_PLUGIN_PATH and %s; 'memtrack plugins' lists what is there)",
		       kname, name, kname, name, MT_PLUGINDIR);
		return -ENOENT;
	}
	err = mt_plugin_open(path, out, &why);
	if (err == 0 && ((*out)->desc->kind != (uint32_t)kind ||
			 strcmp((*out)->desc->name, name) != 0)) {
		set_why(&why, "%s: file is the %s plugin '%s', not %s '%s'",
			path, mt_plugin_kind_name((*out)->desc->kind),
			(*out)->desc->name, kname, name);
		mt_plugin_close(*out);
		*out = NULL;
		err = -EINVAL;
	}
	if (err < 0) {
		mt_err("%s", why ? why : "cannot load plugin");
	}
	free(why);
	return err;
}

static int visit_dir(const char *dir, mt_plugin_visit_fn fn, void *ctx)
{
	struct dirent **names = NULL;
	char path[PATH_MAX + 256];
	int count, i;

	count = scandir(dir, &names, NULL, alphasort);
	if (count < 0) {
		return 0; /* a missing directory is simply empty */
	}
	for (i = 0; i < count; i++) {
		const char *nm = names[i]->d_name;
		size_t l = strlen(nm);
		struct mt_plugin *p = NULL;
		char *why = NULL;

		if (l > 3 && strcmp(nm + l - 3, ".so") == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, nm);
			mt_plugin_open(path, &p, &why);
			fn(path, p, why, ctx);
			mt_plugin_close(p);
			free(why);
		}
		free(names[i]);
	}
	free(names);
	return 0;
}

int mt_plugin_foreach(mt_plugin_visit_fn fn, void *ctx)
{
	char dirs[MT_MAX_DIRS][PATH_MAX];
	char real[MT_MAX_DIRS][PATH_MAX];
	size_t n = search_dirs(dirs, MT_MAX_DIRS);
	size_t i, j;

	for (i = 0; i < n; i++) {
		bool seen = false;

		if (!realpath(dirs[i], real[i])) {
			real[i][0] = '\0';
			continue;
		}
		for (j = 0; j < i; j++) {
			seen = seen || strcmp(real[i], real[j]) == 0;
		}
		if (!seen) {
			visit_dir(dirs[i], fn, ctx);
		}
	}
	return 0;
}

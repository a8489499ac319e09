/* SPDX-License-Identifier: MIT */
/*
 * memtrack report: the front end. Opens the recording(s), has the
 * msgpack-zstd decoder feed the analysis, decides what a damaged file
 * means, and hands the model to the chosen output format.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "log.h"
#include "report-analyze.h"
#include "report-model.h"

int mt_report_parse_format(const char *s, enum mt_report_format *out)
{
	static const char *const names[] = { "text", "json", "collapsed",
					     "svg", "html", "pprof" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum mt_report_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

int mt_report_parse_weight(const char *s, enum mt_report_weight *out)
{
	if (strcmp(s, "bytes") == 0) {
		*out = MT_REPORT_BYTES;
	} else if (strcmp(s, "count") == 0) {
		*out = MT_REPORT_COUNT;
	} else {
		return -EINVAL;
	}
	return 0;
}

/*
 * Read one recording into a new analysis state (*out, NULL on failure).
 * A decoding error after some events is damage, not failure: the report
 * covers what came before it, and says so.
 */
static int load(const struct mt_report_opts *o, const char *path,
		struct mt_rep_state **out)
{
	struct mt_rep_state *st = mt_rep_begin(o, path);
	struct mt_rep *r;
	int fd, err;

	*out = NULL;
	if (!st) {
		mt_err("%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	fd = strcmp(path, "-") == 0 ? dup(STDIN_FILENO) :
				      open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		mt_err("%s: %s", path, strerror(errno));
		mt_rep_free(st);
		return err;
	}
	err = mt_rep_decode(st, fd, path);
	close(fd);
	r = mt_rep_finish(st);
	if (err == -ENOMEM) {
		mt_err("%s: out of memory", path);
		mt_rep_free(st);
		return err;
	}
	if (err) {
		/* the decoder said what and where; say what it means */
		if (!r->events) {
			if (err != -ENODATA) { /* the decoder said it whole */
				mt_err("%s: no event could be read", path);
			}
			mt_rep_free(st);
			return err < 0 ? err : -EIO;
		}
		r->damaged = true;
		mt_warn("%s: damaged; the report covers the %llu events before the damage",
			path, (unsigned long long)r->events);
	}
	if (mt_rep_merge_sites(r) < 0) {
		mt_warn("%s: out of memory: some sites that name the same frames are shown apart",
			path);
	}
	if (r->too_many) {
		mt_warn("%s: too many processes; the rest are left out", path);
	}
	*out = st;
	return 0;
}

int mt_report_run(const struct mt_report_opts *o)
{
	struct mt_rep_state *a = NULL, *b = NULL;
	struct mt_rep *ra;
	int err;

	err = load(o, o->path, &a);
	if (err < 0) {
		goto end;
	}
	ra = mt_rep_finish(a);
	if (o->diff_b) {
		err = load(o, o->diff_b, &b);
		if (err < 0) {
			goto end;
		}
		err = mt_rep_diff(stdout, ra, mt_rep_finish(b), o);
		goto written;
	}
	switch (o->format) {
	case MT_REPORT_JSON:
		err = mt_rep_json(stdout, ra, o);
		break;
	case MT_REPORT_COLLAPSED:
		err = mt_rep_collapsed(stdout, ra, o);
		break;
	case MT_REPORT_SVG:
		err = mt_rep_svg(stdout, ra, o, false);
		break;
	case MT_REPORT_HTML:
		err = mt_rep_html(stdout, ra, o);
		break;
	case MT_REPORT_PPROF:
		err = mt_rep_pprof(stdout, ra, o);
		break;
	default:
		err = mt_rep_text(stdout, ra, o);
		break;
	}
written:
	/* the formats return -EIO when stdout failed, without a word: say
	 * it, with the reason the last write got (fflush writes again) */
	errno = 0;
	if (fflush(stdout) == EOF || ferror(stdout) || err == -EIO) {
		int e = errno ? errno : EIO;

		mt_err("writing to standard output: %s", strerror(e));
		err = -e;
	}
end:
	mt_rep_free(a);
	mt_rep_free(b);
	mt_host_cleanup();
	return err;
}

int mt_report(const char *path)
{
	struct mt_report_opts o = { .path = path, .stack_lines = -1 };

	return mt_report_run(&o);
}

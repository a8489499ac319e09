/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "host.h"
#include "log.h"

static int print_events(void *ctx, const struct mt_event *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++, ev++) {
		const char *type = mt_event_kind_name(ev->kind);

		printf("{\"pid\":%" PRId32 ",\"tid\":%" PRId32
		       ",\"timestamp\":%" PRIu64 ",\"addr\":%" PRIu64
		       ",\"type\":\"%s\"",
		       ev->pid, ev->tid, ev->timestamp, ev->addr,
		       type ? type : "?");
		if (ev->flags & MT_EVF_OLD_ADDR) {
			printf(",\"old_addr\":%" PRIu64, ev->old_addr);
		}
		if (ev->kind != MT_EV_FREE) {
			printf(",\"size\":%" PRIu64, ev->size);
		}
		if (ev->flags & MT_EVF_STACK) {
			printf(",\"stack\":%" PRIu32, ev->stack_id);
		}
		fputs("}\n", stdout);
	}
	if (ferror(stdout)) {
		return -EIO;
	}
	return 0;
}

int mt_dump(const char *path)
{
	static char buf[1 << 16];
	int fd, err;

	fd = strcmp(path, "-") == 0 ? dup(STDIN_FILENO) :
				      open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		mt_err("%s: %s", path, strerror(errno));
		return err;
	}
	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	err = mt_host_decode(NULL, fd, path, print_events, NULL, NULL);
	close(fd);
	if (fflush(stdout) != 0 || err == -EIO) {
		if (err >= 0 || err == -EIO) {
			mt_err("writing to standard output: %s",
			       strerror(errno ? errno : EIO));
			err = -EIO;
		}
	}
	mt_host_cleanup();
	return err < 0 ? err : 0;
}

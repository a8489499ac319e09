/* SPDX-License-Identifier: MIT */
/*
 * The control socket (--control PATH): a unix stream socket, mode 0600,
 * one command per line, each answered on its own line.
 *   ping     -> ok
 *   enable   -> ok            (recording on)
 *   disable  -> ok            (recording off)
 *   drain    -> ok            (every event recorded so far is in the file)
 *   stop     -> ok            (recording ended, the file is complete)
 *   anything else -> error: <why>
 * Served from the poller thread between source reads, so a request is
 * taken up within one chunk's time however busy the source is.
 */
#ifndef MT_HOST_CONTROL_H
#define MT_HOST_CONTROL_H

#include <poll.h>

#define MT_CONTROL_MAX_CLIENTS 8
#define MT_CONTROL_MAX_FDS (1 + MT_CONTROL_MAX_CLIENTS)

struct mt_control;

/* path NULL: no control socket (*out = NULL, returns 0). */
int mt_control_open(const char *path, struct mt_control **out);

/* Fill pfd with the fds to poll; returns how many. */
unsigned int mt_control_pollfds(struct mt_control *c, struct pollfd *pfd);

/* What the commands do; each returns 0 or a negative errno. */
struct mt_control_handler {
	int (*set_enabled)(void *ctx, int enabled);
	int (*drain)(void *ctx);
	int (*stop)(void *ctx);
};

/* Accept and answer whatever is pending; never waits for a client. */
void mt_control_serve(struct mt_control *c,
		      const struct mt_control_handler *h, void *ctx);

void mt_control_close(struct mt_control *c);

#endif /* MT_HOST_CONTROL_H */

/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "log.h"

#define LINE_MAX_LEN 128
/* Two runs taking paths in one directory wait this long for each other
 * (the lock is held for a connect, an unlink and a bind: microseconds). */
#define DIR_LOCK_TRIES 200
#define DIR_LOCK_WAIT_NS 10000000L

struct client {
	int fd;
	size_t len;
	char buf[LINE_MAX_LEN];
};

struct mt_control {
	char *path;
	int listen_fd;
	dev_t dev; /* the socket file we made: removed only if it is */
	ino_t ino; /* still there at the end */
	struct client clients[MT_CONTROL_MAX_CLIENTS];
};

/*
 * Two runs given one path must not take it from each other: the one that
 * finds a live socket there (something accepts a connect) refuses it, a
 * stale one (refused: its run was killed) is replaced. Probing and
 * replacing are one step under a lock on the directory, so that two runs
 * replacing one stale socket do not remove each other's new one. Without
 * the lock (a directory that takes none, or that another program keeps
 * locked) the step is only nearly atomic.
 */
static int lock_dir(const char *path)
{
	struct timespec wait = { .tv_nsec = DIR_LOCK_WAIT_NS };
	char *copy = strdup(path);
	int fd, i;

	if (!copy) {
		return -1;
	}
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0) {
		return -1;
	}
	for (i = 0; i < DIR_LOCK_TRIES; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			return fd;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			break;
		}
		nanosleep(&wait, NULL);
	}
	mt_debug("--control %s: its directory could not be locked: %s",
		 path, strerror(errno));
	close(fd);
	return -1;
}

/* Whether a run answers on the socket at the path: 0 stale (refused),
 * -EADDRINUSE live, or the connect's error. */
static int probe(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);
	int err = 0;

	if (fd < 0) {
		return -errno;
	}
	/* EAGAIN: its backlog is full, so it is alive */
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ||
	    errno == EAGAIN || errno == EINPROGRESS) {
		err = -EADDRINUSE;
	} else if (errno != ECONNREFUSED) {
		err = -errno;
	}
	close(fd);
	return err;
}

/* Bind the path, replacing a stale socket; remember what we made. */
static int take_path(struct mt_control *c, const struct sockaddr_un *sa)
{
	struct stat st;
	mode_t old;
	int err;

	if (lstat(sa->sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			/* never removed: it is not ours to remove */
			return -EEXIST;
		}
		err = probe(sa);
		if (err < 0) {
			return err;
		}
		mt_debug("--control %s: replacing a stale socket",
			 sa->sun_path);
		if (unlink(sa->sun_path) < 0 && errno != ENOENT) {
			return -errno;
		}
	}
	/* 0600 from the start: no window in which others can connect. */
	old = umask(0177);
	err = bind(c->listen_fd, (const struct sockaddr *)sa, sizeof(*sa));
	umask(old);
	if (err < 0 || listen(c->listen_fd, MT_CONTROL_MAX_CLIENTS) < 0 ||
	    lstat(sa->sun_path, &st) < 0) {
		return -errno;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	return 0;
}

int mt_control_open(const char *path, struct mt_control **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct mt_control *c;
	int dir_fd, err, i;

	*out = NULL;
	if (!path) {
		return 0;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		mt_err("--control %s: path too long for a unix socket", path);
		return -ENAMETOOLONG;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < MT_CONTROL_MAX_CLIENTS; i++) {
		c->clients[i].fd = -1;
	}
	strcpy(sa.sun_path, path);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
					       SOCK_NONBLOCK, 0);
	if (c->listen_fd < 0) {
		err = -errno;
		goto error;
	}
	dir_fd = lock_dir(path);
	err = take_path(c, &sa);
	if (dir_fd >= 0) {
		close(dir_fd); /* and the lock with it */
	}
	if (err == -EADDRINUSE) {
		goto busy;
	}
	if (err < 0) {
		goto error;
	}
	*out = c;
	return 0;

busy:
	mt_err("--control %s: a live socket is there (something answers on it: another memtrack run?); it is not taken from its owner: give this run another path",
	       path);
	goto free;
error:
	mt_err("--control %s: %s", path,
	       err == -EEXIST ? "exists and is not a socket: not replaced" :
				strerror(-err));
free:
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
	}
	free(c->path);
	free(c);
	return err;
}

unsigned int mt_control_pollfds(struct mt_control *c, struct pollfd *pfd)
{
	unsigned int n = 0;
	int i;

	if (!c) {
		return 0;
	}
	pfd[n++] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
	for (i = 0; i < MT_CONTROL_MAX_CLIENTS; i++) {
		if (c->clients[i].fd >= 0) {
			pfd[n++] = (struct pollfd){ .fd = c->clients[i].fd,
						    .events = POLLIN };
		}
	}
	return n;
}

static void drop(struct client *cl)
{
	close(cl->fd);
	cl->fd = -1;
	cl->len = 0;
}

static void reply(struct client *cl, const char *msg)
{
	size_t len = strlen(msg), done = 0;

	/* Replies are tiny; a client that does not read them is dropped. */
	while (done < len) {
		ssize_t n = send(cl->fd, msg + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			drop(cl);
			return;
		}
		done += (size_t)n;
	}
}

static void execute(struct client *cl, const char *cmd,
		    const struct mt_control_handler *h, void *ctx)
{
	char msg[128];
	int err;

	if (strcmp(cmd, "ping") == 0) {
		reply(cl, "ok\n");
		return;
	}
	if (strcmp(cmd, "enable") == 0) {
		err = h->set_enabled(ctx, 1);
	} else if (strcmp(cmd, "disable") == 0) {
		err = h->set_enabled(ctx, 0);
	} else if (strcmp(cmd, "drain") == 0) {
		err = h->drain(ctx);
	} else if (strcmp(cmd, "stop") == 0) {
		err = h->stop(ctx);
	} else {
		reply(cl, "error: unknown command (ping, enable, disable, drain, stop)\n");
		return;
	}
	if (err < 0) {
		snprintf(msg, sizeof(msg), "error: %s: %s\n", cmd,
			 err == -ENOTSUP ? "not supported by this source" :
					   strerror(-err));
		reply(cl, msg);
		return;
	}
	mt_info("control: %s", cmd);
	reply(cl, "ok\n");
}

static void serve_client(struct client *cl,
			 const struct mt_control_handler *h, void *ctx)
{
	for (;;) {
		ssize_t n = recv(cl->fd, cl->buf + cl->len,
				 sizeof(cl->buf) - cl->len, MSG_DONTWAIT);
		char *nl;

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return;
		}
		if (n <= 0) {
			drop(cl);
			return;
		}
		cl->len += (size_t)n;
		while (cl->fd >= 0 &&
		       (nl = memchr(cl->buf, '\n', cl->len)) != NULL) {
			size_t used = (size_t)(nl - cl->buf) + 1;

			*nl = '\0';
			if (nl > cl->buf && nl[-1] == '\r') {
				nl[-1] = '\0';
			}
			execute(cl, cl->buf, h, ctx);
			memmove(cl->buf, cl->buf + used, cl->len - used);
			cl->len -= used;
		}
		if (cl->fd >= 0 && cl->len == sizeof(cl->buf)) {
			reply(cl, "error: line too long\n");
			if (cl->fd >= 0) {
				drop(cl);
			}
		}
		if (cl->fd < 0) {
			return;
		}
	}
}

void mt_control_serve(struct mt_control *c,
		      const struct mt_control_handler *h, void *ctx)
{
	int i, fd;

	if (!c) {
		return;
	}
	while ((fd = accept4(c->listen_fd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		for (i = 0; i < MT_CONTROL_MAX_CLIENTS; i++) {
			if (c->clients[i].fd < 0) {
				c->clients[i].fd = fd;
				c->clients[i].len = 0;
				break;
			}
		}
		if (i == MT_CONTROL_MAX_CLIENTS) {
			close(fd); /* busy: the client sees EOF */
		}
	}
	for (i = 0; i < MT_CONTROL_MAX_CLIENTS; i++) {
		if (c->clients[i].fd >= 0) {
			serve_client(&c->clients[i], h, ctx);
		}
	}
}

void mt_control_close(struct mt_control *c)
{
	struct stat st;
	int i;

	if (!c) {
		return;
	}
	for (i = 0; i < MT_CONTROL_MAX_CLIENTS; i++) {
		if (c->clients[i].fd >= 0) {
			close(c->clients[i].fd);
		}
	}
	/* Only the socket this run made, and before it stops listening: a
	 * run that finds ours still answers does not take the path, so the
	 * file checked is the file removed. */
	if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == c->dev && st.st_ino == c->ino) {
		unlink(c->path);
	}
	close(c->listen_fd);
	free(c->path);
	free(c);
}

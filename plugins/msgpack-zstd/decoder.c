/* SPDX-License-Identifier: MIT */
/*
 * decoder.c - reads a msgpack-zstd stream back into events, as the reference
 * reader does: zstd frames back to back form one MessagePack stream (a record
 * may even straddle two frames), skippable frames are skipped (and reported
 * through on_meta), unknown map keys are ignored whatever their value.
 *
 * Choices where the reference reader only "stops":
 *   - an unknown "type" ends decoding with -EBADMSG and a message naming the
 *     type and where it is: a new event kind is not a compatible extension,
 *     and guessing would silently drop data;
 *   - a stream that ends inside a frame or inside a record is an error
 *     ("truncated at byte N"), after every complete event before that point
 *     has been delivered: a partial recording is usable up to its last
 *     complete frame;
 *   - a record longer than MZ_RECORD_MAX (only possible with huge unknown
 *     values) is refused, so that memory stays bounded whatever the input.
 *
 * Memory: one input chunk, one decompression buffer, zstd's window (at most
 * 2^27 bytes, zstd's default limit) and one batch of events, whatever the
 * file size. Works on pipes: only read(2), no seeking.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "msgpack.h"

#define MZ_IN_CHUNK (128 * 1024)
#define MZ_OUT_CHUNK (256 * 1024)
#define MZ_RECORD_MAX (16 * 1024 * 1024)
#define MZ_META_MAX (16 * 1024 * 1024)
#define MZ_BATCH 4096

#define MZ_ZSTD_MAGIC 0xFD2FB528u
#define MZ_SKIPPABLE_MASK 0xFFFFFFF0u
#define MZ_SKIPPABLE_MAGIC 0x184D2A50u

struct dec {
	struct mz_state *st;
	const char *name;
	int fd;
	ZSTD_DCtx *dctx;

	/* input: in[in_pos..in_len) not consumed yet; in[0] is at file
	 * offset in_off */
	uint8_t *in;
	size_t in_pos, in_len;
	uint64_t in_off;
	int eof;

	/* decompressed: records are parsed from dbuf[dstart..dlen); dbuf[0]
	 * is at offset d_off of the decompressed stream */
	uint8_t *dbuf;
	size_t dcap, dstart, dlen;
	uint64_t d_off;

	/* the frame being read: 1-based index and file offset */
	uint64_t frame_no, frame_off;

	struct mt_event *batch;
	size_t nbatch;
	mt_event_cb on_events;
	mt_meta_cb on_meta;
	void *ctx;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t file_pos(const struct dec *d)
{
	return d->in_off + d->in_pos;
}

/* Hand the pending events over; the callback's non-zero value stops us. */
static int flush_events(struct dec *d)
{
	int ret;

	if (!d->nbatch) {
		return 0;
	}
	ret = d->on_events(d->ctx, d->batch, d->nbatch);
	d->nbatch = 0;
	return ret;
}

/*
 * Read more input, keeping the unconsumed bytes. Returns 0 (d->eof set at
 * the end of the stream) or a negative errno.
 */
static int fill(struct dec *d)
{
	ssize_t n;
	size_t keep = d->in_len - d->in_pos;

	if (d->eof) {
		return 0;
	}
	if (keep && d->in_pos) {
		memmove(d->in, d->in + d->in_pos, keep);
	}
	d->in_off += d->in_pos;
	d->in_pos = 0;
	d->in_len = keep;
	do {
		n = read(d->fd, d->in + d->in_len, MZ_IN_CHUNK - d->in_len);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = errno;

		mz_log(d->st, MT_LOG_ERROR, "%s: read error at byte %llu: %s",
		       d->name, (unsigned long long)(d->in_off + d->in_len),
		       strerror(err));
		return -err;
	}
	if (n == 0) {
		d->eof = 1;
	}
	d->in_len += (size_t)n;
	return 0;
}

/* At least want bytes of input, unless the stream ends first. */
static int need_input(struct dec *d, size_t want)
{
	int ret;

	while (d->in_len - d->in_pos < want && !d->eof) {
		ret = fill(d);
		if (ret < 0) {
			return ret;
		}
	}
	return 0;
}

static int truncated(struct dec *d, const char *where)
{
	mz_log(d->st, MT_LOG_ERROR,
	       "%s: truncated at byte %llu: the stream ends %s (frame %llu at byte %llu)",
	       d->name, (unsigned long long)(d->in_off + d->in_len), where,
	       (unsigned long long)d->frame_no,
	       (unsigned long long)d->frame_off);
	return -EBADMSG;
}

/*
 * Decode every complete record in dbuf into the batch. A record cut by the
 * end of dbuf stays for the next round.
 */
static int parse_records(struct dec *d)
{
	struct mt_msgpack_error err;
	enum mt_msgpack_status s;
	size_t used;
	int ret;

	while (d->dstart < d->dlen) {
		/* records of our own writer, while MT_MSGPACK_FAST_MIN bytes
		 * are there (a record cut by the end of dbuf is not) */
		if (d->dlen - d->dstart >= MT_MSGPACK_FAST_MIN) {
			d->nbatch += mt_msgpack_unpack_run(
				d->dbuf + d->dstart, d->dlen - d->dstart,
				&d->batch[d->nbatch], MZ_BATCH - d->nbatch,
				&used);
			d->dstart += used;
			if (d->nbatch == MZ_BATCH) {
				ret = flush_events(d);
				if (ret) {
					return ret;
				}
				continue;
			}
			if (d->dstart >= d->dlen) {
				break;
			}
		}
		/* anything else, one record */
		s = mt_msgpack_unpack(d->dbuf + d->dstart, d->dlen - d->dstart,
				      &d->batch[d->nbatch], &used, &err);
		if (s == MT_MSGPACK_MORE) {
			if (d->dlen - d->dstart >= MZ_RECORD_MAX) {
				ret = flush_events(d);
				if (ret) {
					return ret;
				}
				mz_log(d->st, MT_LOG_ERROR,
				       "%s: record at decompressed byte %llu (frame %llu at byte %llu) is longer than %d bytes",
				       d->name,
				       (unsigned long long)(d->d_off + d->dstart),
				       (unsigned long long)d->frame_no,
				       (unsigned long long)d->frame_off,
				       MZ_RECORD_MAX);
				return -EBADMSG;
			}
			return 0;
		}
		if (s == MT_MSGPACK_ERROR) {
			/* what came before the bad record is good data */
			ret = flush_events(d);
			if (ret) {
				return ret;
			}
			mz_log(d->st, MT_LOG_ERROR,
			       "%s: %s%s at decompressed byte %llu (record at decompressed byte %llu, zstd frame %llu at byte %llu)",
			       d->name, err.unknown_type ?
			       "cannot decode further: " : "bad record: ",
			       err.msg,
			       (unsigned long long)(d->d_off + d->dstart +
						    err.offset),
			       (unsigned long long)(d->d_off + d->dstart),
			       (unsigned long long)d->frame_no,
			       (unsigned long long)d->frame_off);
			return -EBADMSG;
		}
		d->dstart += used;
		if (++d->nbatch == MZ_BATCH) {
			ret = flush_events(d);
			if (ret) {
				return ret;
			}
		}
	}
	return 0;
}

/* Room for at least MZ_OUT_CHUNK / 2 more decompressed bytes. */
static int make_room(struct dec *d)
{
	size_t left = d->dlen - d->dstart;
	uint8_t *bigger;

	if (d->dstart) {
		memmove(d->dbuf, d->dbuf + d->dstart, left);
		d->d_off += d->dstart;
		d->dstart = 0;
		d->dlen = left;
	}
	if (d->dcap - d->dlen >= MZ_OUT_CHUNK / 2) {
		return 0;
	}
	/* one record longer than the buffer: grow, up to MZ_RECORD_MAX (then
	 * parse_records refuses it) */
	bigger = realloc(d->dbuf, d->dcap * 2);
	if (!bigger) {
		return -ENOMEM;
	}
	d->dbuf = bigger;
	d->dcap *= 2;
	return 0;
}

static int read_zstd_frame(struct dec *d)
{
	ZSTD_inBuffer ib;
	ZSTD_outBuffer ob;
	size_t r;
	int ret;

	for (;;) {
		if (d->in_pos == d->in_len) {
			ret = fill(d);
			if (ret < 0) {
				return ret;
			}
			if (d->in_pos == d->in_len) {
				/* events of the complete records first */
				ret = flush_events(d);
				if (ret) {
					return ret;
				}
				return truncated(d, "inside a zstd frame");
			}
		}
		ret = make_room(d);
		if (ret < 0) {
			return ret;
		}
		ib.src = d->in;
		ib.size = d->in_len;
		ib.pos = d->in_pos;
		ob.dst = d->dbuf;
		ob.size = d->dcap;
		ob.pos = d->dlen;
		r = ZSTD_decompressStream(d->dctx, &ob, &ib);
		d->in_pos = ib.pos;
		d->dlen = ob.pos;
		if (ZSTD_isError(r)) {
			ret = parse_records(d);
			if (!ret) {
				ret = flush_events(d);
			}
			if (ret) {
				return ret;
			}
			mz_log(d->st, MT_LOG_ERROR,
			       "%s: corrupt zstd data near byte %llu (frame %llu at byte %llu): %s",
			       d->name, (unsigned long long)file_pos(d),
			       (unsigned long long)d->frame_no,
			       (unsigned long long)d->frame_off,
			       ZSTD_getErrorName(r));
			return -EBADMSG;
		}
		ret = parse_records(d);
		if (ret) {
			return ret;
		}
		if (r == 0) {
			/* frame complete and flushed: the input now starts
			 * the next frame */
			return 0;
		}
		/* otherwise zstd either wants input (it took all it had) or
		 * has output left to flush (dbuf was full): the next round
		 * reads or makes room. Each round consumes input, produces
		 * output, reads, or hits the end: no endless loop. */
	}
}

static int read_skippable_frame(struct dec *d, uint32_t magic)
{
	uint32_t len;
	uint8_t *payload = NULL;
	size_t got = 0, take;
	int ret;

	ret = need_input(d, 8);
	if (ret < 0) {
		return ret;
	}
	if (d->in_len - d->in_pos < 8) {
		/* the events of the frames before are complete: theirs */
		ret = flush_events(d);
		return ret ? ret : truncated(d,
					     "inside a skippable frame header");
	}
	len = le32(d->in + d->in_pos + 4);
	d->in_pos += 8;
	if (d->on_meta && len <= MZ_META_MAX) {
		payload = malloc(len ? len : 1);
		if (!payload) {
			return -ENOMEM;
		}
	} else if (d->on_meta) {
		mz_log(d->st, MT_LOG_WARN,
		       "%s: skippable frame at byte %llu holds %u bytes, more than %d: skipped, not reported",
		       d->name, (unsigned long long)d->frame_off, len,
		       MZ_META_MAX);
	}
	while (got < len) {
		if (d->in_pos == d->in_len) {
			ret = fill(d);
			if (ret < 0) {
				goto end;
			}
			if (d->in_pos == d->in_len) {
				ret = flush_events(d);
				if (!ret) {
					ret = truncated(d,
							"inside a skippable frame");
				}
				goto end;
			}
		}
		take = d->in_len - d->in_pos;
		if (take > len - got) {
			take = len - got;
		}
		if (payload) {
			memcpy(payload + got, d->in + d->in_pos, take);
		}
		d->in_pos += take;
		got += take;
	}
	ret = 0;
	if (payload) {
		/* keep file order: the events before it go first */
		ret = flush_events(d);
		if (!ret) {
			ret = d->on_meta(d->ctx, magic - MZ_SKIPPABLE_MAGIC,
					 payload, len);
		}
	}
end:
	free(payload);
	return ret;
}

static int decode_stream(struct dec *d)
{
	uint32_t magic;
	int ret;

	for (;;) {
		ret = need_input(d, 4);
		if (ret < 0) {
			return ret;
		}
		if (d->in_pos == d->in_len && !d->frame_no) {
			/* nothing memtrack or the reference writes: even a
			 * recording without events has a frame */
			mz_log(d->st, MT_LOG_ERROR,
			       "%s: empty file, not a recording", d->name);
			return -ENODATA;
		}
		if (d->in_pos == d->in_len) {
			/* clean end, unless a record is still open */
			ret = flush_events(d);
			if (ret) {
				return ret;
			}
			if (d->dstart < d->dlen) {
				mz_log(d->st, MT_LOG_ERROR,
				       "%s: truncated at byte %llu: the stream ends inside the record at decompressed byte %llu",
				       d->name,
				       (unsigned long long)file_pos(d),
				       (unsigned long long)(d->d_off +
							    d->dstart));
				return -EBADMSG;
			}
			return 0;
		}
		d->frame_no++;
		d->frame_off = file_pos(d);
		if (d->in_len - d->in_pos < 4) {
			ret = flush_events(d);
			return ret ? ret : truncated(d, "inside a frame header");
		}
		magic = le32(d->in + d->in_pos);
		if ((magic & MZ_SKIPPABLE_MASK) == MZ_SKIPPABLE_MAGIC) {
			ret = read_skippable_frame(d, magic);
		} else if (magic == MZ_ZSTD_MAGIC) {
			ret = read_zstd_frame(d);
		} else {
			ret = flush_events(d);
			if (ret) {
				return ret;
			}
			mz_log(d->st, MT_LOG_ERROR,
			       "%s: not a zstd frame at byte %llu (magic 0x%08x)",
			       d->name, (unsigned long long)d->frame_off, magic);
			return -EBADMSG;
		}
		if (ret) {
			return ret;
		}
	}
}

int mz_decode(void *state, int fd, const char *name, mt_event_cb on_events,
	      mt_meta_cb on_meta, void *ctx)
{
	struct dec d = {
		.st = state,
		.name = name ? name : "(stream)",
		.fd = fd,
		.on_events = on_events,
		.on_meta = on_meta,
		.ctx = ctx,
	};
	int ret;

	if (!state || !on_events || fd < 0) {
		return -EINVAL;
	}
	d.dctx = ZSTD_createDCtx();
	d.in = malloc(MZ_IN_CHUNK);
	d.dcap = MZ_OUT_CHUNK;
	d.dbuf = malloc(d.dcap);
	d.batch = malloc(MZ_BATCH * sizeof(*d.batch));
	if (!d.dctx || !d.in || !d.dbuf || !d.batch) {
		ret = -ENOMEM;
		goto end;
	}
	ret = decode_stream(&d);
end:
	ZSTD_freeDCtx(d.dctx);
	free(d.in);
	free(d.dbuf);
	free(d.batch);
	return ret;
}

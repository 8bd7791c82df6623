/* SPDX-License-Identifier: MIT */
/*
 * The zstd backend: the frame walk (frame and block headers, nothing
 * decoded) gives each frame's compressed extent and, from its
 * Frame_Content_Size or an agreeing seek table, its size; a frame without
 * either is measured by one decode pass at open (checksum verified).  One
 * map entry per non-empty frame, so multi-frame files (pzstd, the seekable
 * format) are read at random per frame, and a single frame is read in
 * order through a parked decoder.
 *
 * Shown raw, with one log line: frames that need a dictionary, and windows
 * larger than ZSTDDEC_WINDOW_DEFAULT (128 MiB, what zstd -d decodes without
 * --memory): their decoder alone would pass any reasonable cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "reader_int.h"
#include "zlog.h"
#include "zstddec.h"

/* Bytes of memory per frame in the map: the walk's entry, the map's start, entry and bad mark. */
#define ZSTD_FRAME_COST (sizeof(struct zstddec_frame) + sizeof(uint64_t) + sizeof(size_t) + 1)

/* The walk, and whether zmount decodes what it found; why says why not. */
static int walk(int fd, uint64_t size, struct zstddec_index **out, struct zerr *why)
{
	struct zerr err = { 0 };
	struct zstddec_index *z;
	int ret = zstddec_index_read(fd, size, ZSTDDEC_WINDOW_DEFAULT, &z, &err);

	*out = NULL;
	if (ret < 0) {
		*why = err;
		return ret == -ENOMEM ? -EINVAL : ret;
	}
	for (size_t i = 0; i < z->nframes; i++) {
		const struct zstddec_frame *f = &z->frames[i];

		if (f->flags & (ZSTDDEC_F_DICT | ZSTDDEC_F_BIGWIN)) {
			ret = f->flags & ZSTDDEC_F_DICT
				      ? zerr_set(why, -ENOTSUP, f->coff,
						 "frame %zu needs dictionary %" PRIu32
						 "; shown as it is", i, f->dict_id)
				      : zerr_set(why, -ENOTSUP, f->coff,
						 "frame %zu has a window of %" PRIu64
						 " MiB, more than %llu MiB; shown as it is",
						 i, f->window >> 20, ZSTDDEC_WINDOW_DEFAULT >> 20);
			zstddec_index_free(z);
			return ret;
		}
	}
	*out = z;
	return 0;
}

static int zstd_probe(int fd, uint64_t size, struct zerr *why)
{
	struct zstddec_index *z;
	int ret = walk(fd, size, &z, why);

	zstddec_index_free(z);
	return ret;
}

static int zstd_open(struct reader *r, struct zerr *why)
{
	struct zstddec_index *z;
	int ret = walk(r->fd, (uint64_t)r->st.st_size, &z, why);

	if (ret == -EINVAL) {
		struct zerr w = *why; /* zerr_set must not read what it writes */

		return zerr_set(why, ret, w.coff,
				"not readable as zstd (at compressed offset %" PRIu64 "): %s", w.coff,
				w.msg);
	}
	if (ret < 0)
		return ret;
	r->idx = z;
	if (z->seek == ZSTDDEC_SEEK_IGNORED)
		reader_log(r, ZLOG_WARN, NULL, "seek table ignored: %s", z->seek_reason);
	if (z->nframes > r->opts.index_max / ZSTD_FRAME_COST)
		return zerr_set(why, -EINVAL, 0,
				"its %zu frames need more than cache_size/4 (%zu KiB) of map; raise "
				"cache_size", z->nframes, r->opts.index_max >> 10);
	/* Streamed input has no sizes: one decode pass each (checksums verified on the way). */
	for (size_t i = 0; i < z->nframes; i++) {
		struct zerr err = { 0 };
		uint64_t usize;

		if (z->frames[i].usize != ZSTDDEC_UNKNOWN)
			continue;
		ret = zstddec_measure(r->fd, &z->frames[i], &usize, &err);
		if (ret == 0)
			ret = zstddec_index_settle(z, i, usize);
		if (ret < 0)
			return zerr_set(why, ret == -ENOMEM ? ret : -EINVAL, err.coff,
					"corrupt zstd at compressed offset %" PRIu64 ": %s", err.coff,
					err.msg[0] ? err.msg : "frame size does not settle");
		atomic_fetch_add(&r->ctx->stats.decoded, usize);
	}
	if (reader_map_init(r, z->nframes) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < z->nframes; i++) {
		if (z->frames[i].usize == 0)
			continue;
		cmap_add(&r->map, z->frames[i].uoff);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, z->nframes ? z->usize : 0);
	if (z->nframes && z->nchecksum < z->nframes)
		reader_log(r, ZLOG_INFO, NULL,
			   "%zu of %zu frames have no checksum: their bytes are not verified",
			   z->nframes - z->nchecksum, z->nframes);
	return 0;
}

static void zstd_free(void *idx)
{
	zstddec_index_free(idx);
}

static const struct zstddec_frame *frame(const struct reader *r, size_t k)
{
	return &((const struct zstddec_index *)r->idx)->frames[r->entry[k]];
}

static int zstd_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	return zstddec_dec_open(frame(r, k), (struct zstddec_dec **)dec, err);
}

static ssize_t zstd_dec_read(void *dec, int fd, void *buf, size_t len, struct zerr *err)
{
	return zstddec_dec_read(dec, fd, buf, len, err);
}

static uint64_t zstd_dec_tell(const void *dec)
{
	return zstddec_dec_tell(dec);
}

/* The frame's window and buffers: known from its header, as the decoder was sized. */
static size_t zstd_dec_cost(const void *dec)
{
	return (size_t)zstddec_dec_cost_of(dec);
}

static void zstd_dec_close(void *dec)
{
	zstddec_dec_close(dec);
}

static void zstd_extent(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
			uint64_t *cend)
{
	*cstart = frame(r, k0)->coff;
	*cend = frame(r, k1)->coff + frame(r, k1)->csize;
}

static void zstd_info(const struct reader *r, struct reader_info *in)
{
	const struct zstddec_index *z = r->idx;

	in->streams = z->nframes;
	in->blocks = r->map.n;
	in->padding = z->skippable_bytes;
}

const struct fmt fmt_zstd = {
	.name = "zstd",
	.unit = "frame",
	.probe = zstd_probe,
	.open = zstd_open,
	.free = zstd_free,
	.dec_open = zstd_dec_open,
	.dec_read = zstd_dec_read,
	.dec_tell = zstd_dec_tell,
	.dec_cost = zstd_dec_cost,
	.dec_close = zstd_dec_close,
	.extent = zstd_extent,
	.info = zstd_info,
};

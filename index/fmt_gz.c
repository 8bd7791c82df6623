/* SPDX-License-Identifier: MIT */
/*
 * The gzip backend: one inflate pass builds checkpoints every opts.span
 * bytes (at deflate block boundaries) and verifies every member's CRC32 and
 * ISIZE; or a saved index of this very version of the file is loaded from
 * opts.index_dir.  One map entry per checkpoint span.  The pass leaves its
 * first opts.warm_bytes of output in the cache (struct warm), so a reader
 * that starts at the beginning does not decode them twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "gzdec.h"
#include "idxfile.h"
#include "reader_int.h"
#include "zlog.h"

/* What a parked decoder holds (gzdec.h: inflate state, window, input buffer). */
#define GZ_DEC_COST (80u << 10)

/* A saved index for this very version of the file, or NULL. */
static struct gzdec_index *load_gz(struct reader *r, const struct idxfile_id *id)
{
	struct zerr err = { 0 };
	struct gzdec_index *g;
	/*
	 * Any span will do: span only trades random-read cost for index size,
	 * and a full pass to change it would cost far more than it saves.
	 */
	int ret = idxfile_load(r->opts.index_dir, r->name, id, 0, &g, &err);

	if (ret == 0) {
		atomic_fetch_add(&r->ctx->stats.loaded, 1);
		reader_log(r, ZLOG_DEBUG, NULL, "using its saved index");
		return g;
	}
	if (ret == -EPERM) {
		/* Another user could have written it (idxfile.h): never used; said once. */
		if (!atomic_flag_test_and_set(&r->ctx->untrusted_logged))
			reader_log(r, ZLOG_WARN, NULL, "saved index not trusted (%s); indexes are rebuilt",
				   err.msg[0] ? err.msg : strerror(-ret));
	} else if (ret != -ENOENT) {
		reader_log(r, ZLOG_INFO, NULL, "saved index not usable (%s); rebuilding it",
		     err.msg[0] ? err.msg : strerror(-ret));
	}
	return NULL;
}

static void save_gz(struct reader *r, const struct idxfile_id *id, const struct gzdec_index *g)
{
	int ret = idxfile_save(r->opts.index_dir, r->name, id, g, NULL);

	if (ret < 0 && !atomic_flag_test_and_set(&r->ctx->save_failed_logged))
		zmctx_log(r->ctx, ZLOG_WARN, NULL, NULL,
			  "cannot save indexes in %s (%s); keeping them in memory",
		     r->opts.index_dir, strerror(-ret));
}

/* Collects the chunks a gzip pass decodes and offers the first ones to the cache. */
struct warm {
	struct reader *r;
	uint64_t start;       /* uncompressed offset of buf[0] */
	unsigned char *buf;
	size_t len, cap;
	uint64_t budget;      /* bytes it may still put in the cache */
	bool stop;
};

static void warm_flush(struct warm *w)
{
	struct bcache_ent *e;

	if (w->stop || w->len == 0)
		goto out;
	if (w->len > w->budget) {
		w->stop = true;
		goto out;
	}
	if (bcache_claim(w->r->cache, w->r->id, w->start, w->len, &e) == 1) {
		memcpy(bcache_buf(e), w->buf, w->len);
		bcache_done(w->r->cache, e, 0);
		bcache_put(w->r->cache, e);
		atomic_fetch_add(&w->r->ctx->stats.decoded, w->len);
	}
	w->budget -= w->len;
out:
	w->start += w->len;
	w->len = 0;
}

static void warm_output(void *ctx, const void *buf, size_t len)
{
	struct warm *w = ctx;

	/* Past the budget nothing more is kept: stop before growing the buffer. */
	if (!w->stop && w->len + len > w->budget)
		w->stop = true;
	if (w->stop)
		return;
	if (w->len + len > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1u << 20;
		void *p;

		while (cap < w->len + len)
			cap *= 2;
		p = realloc(w->buf, cap);
		if (!p) {
			w->stop = true;
			return;
		}
		w->buf = p;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, buf, len);
	w->len += len;
}

static void warm_point(void *ctx, uint64_t uoff)
{
	struct warm *w = ctx;

	if (!w->stop && uoff == w->start + w->len)
		warm_flush(w);
}

static int gz_probe(int fd, uint64_t size, struct zerr *why)
{
	return gzdec_header_check(fd, size, why);
}

static int gz_open(struct reader *r, struct zerr *why)
{
	struct warm w = { .r = r, .budget = r->opts.warm_bytes, .stop = !r->opts.warm_bytes };
	struct gzdec_sink sink = { warm_output, warm_point, &w };
	struct zerr err = { 0 };
	struct gzdec_index *g = NULL;
	struct idxfile_id id;
	bool persist = r->opts.index_dir && r->name[0] == '/' &&
		       idxfile_identify(r->fd, &id) == 0;
	int ret;

	/* A header it cannot read is shown raw, as reader_probe says (the pass would fail). */
	if (gz_probe(r->fd, (uint64_t)r->st.st_size, why) < 0)
		return -ENOTSUP;
	if (persist)
		g = load_gz(r, &id);
	if (!g) {
		ret = gzdec_index_build_opts(r->fd, (uint64_t)r->st.st_size, r->opts.span,
					     w.stop ? NULL : &sink,
					     r->opts.salvage ? GZDEC_SALVAGE : 0, &g, &err);
		if (ret == 0)
			warm_flush(&w); /* the last chunk ends at the end of the data */
		free(w.buf);
		if (ret < 0)
			return zerr_set(why, ret, err.coff, "corrupt gzip at compressed offset %" PRIu64 ": %s",
					err.coff, err.msg);
		atomic_fetch_add(&r->ctx->stats.built, 1);
		r->pass = true;
		/* A salvaged index is only for this mount: saved, it would pass for a whole file. */
		if (persist && !g->salvaged)
			save_gz(r, &id, g);
	}
	r->idx = g;
	if (g->salvaged)
		reader_log(r, ZLOG_WARN, NULL,
		     "corrupt gzip at compressed offset %" PRIu64 ": %s; salvage: showing the "
		     "%" PRIu64 " bytes before the damage (%" PRIu64 " of them verified by a CRC32)",
		     g->damage_coff, err.msg, g->usize, g->verified);
	if (g->trailing == GZDEC_TRAIL_GARBAGE)
		reader_log(r, ZLOG_WARN, NULL, "trailing garbage after the last member at offset %" PRIu64
			   " ignored", g->trail_off);
	if (reader_map_init(r, g->npoints) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < g->npoints; i++) {
		if (g->points[i].uoff >= g->usize)
			break;
		cmap_add(&r->map, g->points[i].uoff);
		r->entry[r->map.n - 1] = i;
	}
	cmap_end(&r->map, g->usize);
	return 0;
}

static void gz_free(void *idx)
{
	gzdec_index_free(idx);
}

static int gz_dec_open(struct reader *r, size_t k, void **dec, struct zerr *err)
{
	return gzdec_dec_open(r->idx, r->entry[k], (struct gzdec_dec **)dec, err);
}

static ssize_t gz_dec_read(void *dec, int fd, void *buf, size_t len, struct zerr *err)
{
	return gzdec_dec_read(dec, fd, buf, len, err);
}

static uint64_t gz_dec_tell(const void *dec)
{
	return gzdec_dec_tell(dec);
}

static size_t gz_dec_cost(const void *dec)
{
	(void)dec;
	return GZ_DEC_COST;
}

static void gz_dec_close(void *dec)
{
	gzdec_dec_close(dec);
}

static void gz_extent(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
		      uint64_t *cend)
{
	const struct gzdec_index *g = r->idx;
	size_t p = r->entry[k1] + 1;

	*cstart = g->points[r->entry[k0]].coff;
	if (*cstart > 0)
		(*cstart)--; /* its first bits may be in the byte before */
	*cend = p < g->npoints ? g->points[p].coff : g->csize;
}

static void gz_info(const struct reader *r, struct reader_info *in)
{
	const struct gzdec_index *g = r->idx;

	in->salvaged = g->salvaged;
	in->streams = g->members;
	in->blocks = g->npoints;
	if (g->trailing != GZDEC_TRAIL_NONE)
		in->padding = in->csize - g->trail_off;
}

const struct fmt fmt_gzip = {
	.name = "gzip",
	.unit = "checkpoint",
	.probe = gz_probe,
	.open = gz_open,
	.free = gz_free,
	.dec_open = gz_dec_open,
	.dec_read = gz_dec_read,
	.dec_tell = gz_dec_tell,
	.dec_cost = gz_dec_cost,
	.dec_close = gz_dec_close,
	.extent = gz_extent,
	.info = gz_info,
};

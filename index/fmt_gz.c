/* SPDX-License-Identifier: MIT */
/*
 * The gzip backend: one inflate pass builds checkpoints every opts.span
 * bytes (at deflate block boundaries) and verifies every member's CRC32 and
 * ISIZE; or a saved index of this very version of the file is loaded from
 * opts.index_dir.  One map entry per checkpoint span.  The pass leaves up
 * to opts.warm_bytes of its first output in the cache (struct warm), so a
 * reader that starts at the beginning does not decode them twice.
 *
 * Each span (one map entry) also carries the CRC32 the pass recorded for
 * it, and gzdec_dec_read checks it in the call that returns the span's last
 * byte: a span read whole (up to whole_max) is checked before any of it is
 * cached or served; one streamed in slices is checked at its end, as a
 * large xz Block is, its earlier slices having been served already.  A
 * mismatch is an -EIO like any decode error: the core marks the entry bad
 * and logs one line (reader_fail_entry).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcache.h"
#include "gzdec.h"
#include "idxfile.h"
#include "idxrec.h"
#include "idxtee.h"
#include "rawkeep.h"
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
			reader_log(r, ZLOG_WARN, NULL,
				   "saved index not trusted (%s); indexes are rebuilt",
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

	r->saved = ret == 0;
	if (ret < 0 && !atomic_flag_test_and_set(&r->ctx->save_failed_logged))
		zmctx_log(r->ctx, ZLOG_WARN, NULL, NULL,
			  "cannot save indexes in %s (%s); keeping them in memory",
			  idxstore_name(r->opts.index_dir), strerror(-ret));
}

/*
 * Puts the first output of a gzip pass in the cache, in the units readers
 * will ask for.  A unit's end is not known until the next checkpoint (or
 * the end of the data), so output is staged until then in piece-sized
 * buffers (opts.slice), each reserved in the cache's budget before it is
 * allocated: eight passes at once stage no more than the cache has room
 * for, and a pass the cache cannot take stops keeping anything.  An entry
 * longer than whole_max is not kept either: it is cached in slices that its
 * reader's parked decoder fills in order (reader.c), and slices left here
 * would make that reader's first miss, deep in the entry, decode it again
 * from its start.  So staging never holds more than whole_max plus a piece.
 */
struct warm {
	struct reader *r;
	uint64_t ustart;       /* uncompressed offset of the entry being staged */
	uint64_t len;	       /* bytes of that entry staged so far */
	unsigned char **piece; /* the staged bytes, psize per piece, each reserved */
	size_t npieces, maxpieces;
	size_t psize;
	uint64_t budget; /* bytes it may still put in the cache */
	bool stop;
	struct zmctx_slot *prog; /* the pass's progress, in compressed bytes (zmctx_pass_begin) */
};

/* Frees the pieces from k on and gives back their reservations. */
static void warm_trim(struct warm *w, size_t k)
{
	for (size_t i = k; i < w->npieces; i++) {
		free(w->piece[i]);
		bcache_unreserve(w->r->cache, w->psize);
	}
	if (w->npieces > k)
		w->npieces = k;
}

/* Keeps nothing more: a unit the cache had no room for would leave a gap anyway. */
static void warm_stop(struct warm *w)
{
	warm_trim(w, 0);
	w->stop = true;
}

/* A new piece at the end of the staging, reserved first; false: stop keeping. */
static bool warm_grow(struct warm *w)
{
	unsigned char *p;

	if (w->npieces == w->maxpieces) {
		size_t n = w->maxpieces ? 2 * w->maxpieces : 8;
		void *a = realloc(w->piece, n * sizeof(*w->piece));

		if (!a)
			return false;
		w->piece = a;
		w->maxpieces = n;
	}
	if (bcache_reserve(w->r->cache, w->psize) < 0)
		return false;
	p = malloc(w->psize);
	if (!p) {
		bcache_unreserve(w->r->cache, w->psize);
		return false;
	}
	w->piece[w->npieces++] = p;
	return true;
}

static void warm_output(void *ctx, const void *buf, size_t len)
{
	struct warm *w = ctx;
	const unsigned char *src = buf;

	reader_pass_out(w->r, buf, len); /* every byte of the pass, kept or not */
	while (len && !w->stop) {
		size_t i = (size_t)(w->len / w->psize), o = (size_t)(w->len % w->psize);
		size_t k = w->psize - o < len ? w->psize - o : len;

		if (w->len + k > w->budget || w->len + k > w->r->opts.whole_max ||
		    (i == w->npieces && !warm_grow(w))) {
			warm_stop(w);
			return;
		}
		memcpy(w->piece[i] + o, src, k);
		src += k;
		len -= k;
		w->len += k;
	}
}

/*
 * The entry being staged ends here (at a checkpoint, or at the end of the
 * data): it goes to the cache as one unit, if there is room beside the
 * staging (both are counted: the copy briefly holds the unit twice).
 */
static void warm_end(struct warm *w)
{
	struct bcache *c = w->r->cache;
	struct bcache_ent *e;

	if (w->stop || w->len == 0)
		return;
	if (bcache_claim(c, w->r->id, w->ustart, (size_t)w->len, &e) != 1) {
		warm_stop(w);
		return;
	}
	for (uint64_t done = 0; done < w->len; done += w->psize) {
		size_t k = w->len - done < w->psize ? (size_t)(w->len - done) : w->psize;

		memcpy((unsigned char *)bcache_buf(e) + done, w->piece[done / w->psize], k);
	}
	bcache_done(c, e, 0);
	bcache_put(c, e);
	atomic_fetch_add(&w->r->ctx->stats.decoded, w->len);
	w->budget -= w->len;
	w->ustart += w->len;
	w->len = 0;
	warm_trim(w, 1); /* one piece is kept for the next entry */
}

static void warm_point(void *ctx, uint64_t uoff)
{
	struct warm *w = ctx;

	if (!w->stop && uoff == w->ustart + w->len)
		warm_end(w);
}

static void warm_read(void *ctx, uint64_t coff)
{
	zmctx_pass_set(((struct warm *)ctx)->prog, coff);
}

static void warm_free(struct warm *w)
{
	warm_trim(w, 0);
	free(w->piece);
}

/*
 * For a remote source, a tee over in that keeps the compressed bytes the
 * pass fetches (rawkeep.h), or NULL.  They get the room the decoded ones
 * would (opts.warm_bytes, while a first open waits: opts.warm_when), all
 * of it that the object needs first: the object is several times denser
 * than its text, and whatever is not kept either way is fetched again.
 * What the object leaves of it goes to the decoded output, so an object
 * whose text fits that room is neither fetched nor decoded twice.  A
 * larger object may go on into room the cache has spare, up to
 * RAW_SPARE_MAX of it: a mount's first reads find the cache idle, and
 * the quarter left holds the first read's decoded units until the chunks
 * it reads through are given up.
 */
#define RAW_SPARE_MAX(cache) ((cache) / 4 * 3)

static struct zsrc *keep_raw(struct reader *r, struct warm *w, struct zsrc *in)
{
	uint64_t size = (uint64_t)r->st.st_size, budget = r->opts.warm_bytes;
	uint64_t most = RAW_SPARE_MAX((uint64_t)bcache_budget(r->cache));
	struct zsrc *keep;

	if (!in->ops->remote || !budget)
		return NULL;
	if (size < budget)
		budget = size;
	if (size < most)
		most = size;
	if (rawkeep_tee(r->cache, r->id, UNIT_RAW, in, budget, most > budget ? most - budget : 0,
			r->opts.warm_when, &keep) < 0)
		return NULL;
	w->budget -= budget;
	return keep;
}

static int gz_probe(struct zsrc *src, uint64_t size, size_t index_max, struct zerr *why)
{
	(void)index_max; /* a gzip map is checkpoints, counted by the pass */
	return gzdec_header_check(src, size, why);
}

/*
 * "corrupt gzip in the member at M, found at compressed offset C: why" when
 * the build names the member (GZDEC_MEMBER_AT, gzdec.h): a CRC32 fails at
 * the member's end whatever byte in it was damaged, so its start is where
 * to look.  Otherwise "corrupt gzip at compressed offset C: why".
 */
static void gz_corrupt(char *out, size_t len, uint64_t coff, const char *msg)
{
	const size_t at = strlen(GZDEC_MEMBER_AT);
	unsigned long long member;
	int used = 0;

	if (strncmp(msg, GZDEC_MEMBER_AT, at) == 0 &&
	    sscanf(msg + at, "%llu: %n", &member, &used) == 1 && used > 0)
		snprintf(out, len,
			 "corrupt gzip in the member at %llu, found at compressed offset %" PRIu64
			 ": %s",
			 member, coff, msg + at + (size_t)used);
	else
		snprintf(out, len, "corrupt gzip at compressed offset %" PRIu64 ": %s", coff, msg);
}

/*
 * Whether gzdec's error e is the data ending early (its words for that are
 * "unexpected end of file"): then why gets zerr_cut's words, the same as
 * every format's, for a file of size bytes, and it returns true.
 */
static bool cut_short(const struct zerr *e, uint64_t size, struct zerr *why)
{
	if (!strstr(e->msg, "unexpected end of file"))
		return false;
	zerr_cut(why, -EINVAL, size, "inside its gzip data");
	return true;
}

static int gz_open(struct reader *r, struct zerr *why)
{
	struct warm w = { .r = r,
			  .budget = r->opts.warm_bytes,
			  .psize = r->opts.slice,
			  .stop = !r->opts.warm_bytes || !r->opts.slice || r->opts.warm_when };
	struct gzdec_sink sink = { warm_output, warm_point, &w, warm_read };
	struct zerr err = { 0 };
	struct gzdec_index *g = NULL;
	struct zsrc *tee = NULL, *keep = NULL, *in;
	uint64_t kept = 0;
	struct idxfile_id id;
	char text[sizeof(err.msg) + 128];
	bool persist =
		r->opts.index_dir && idxfile_keyed(r->name) && idxfile_identify(r->src, &id) == 0;
	int ret;

	/* A header it cannot read is shown raw, as reader_probe says (the pass would fail). */
	if (gz_probe(r->src, (uint64_t)r->st.st_size, SIZE_MAX, why) < 0)
		return -ENOTSUP;
	if (persist)
		g = load_gz(r, &id);
	if (!g) {
		/* the sink also reports progress: a stopped warm keeps nothing */
		w.prog = zmctx_pass_begin(r->ctx, r->name, "index", (uint64_t)r->st.st_size);
		/* The pass reads all of it: saving the index need not read it again (idxtee.h). */
		if (persist && idxtee_new(r->src, &tee) < 0)
			tee = NULL;
		in = tee ? tee : r->src;
		keep = keep_raw(r, &w, in);
		ret = gzdec_index_build_opts(keep ? keep : in, (uint64_t)r->st.st_size,
					     r->opts.span, &sink,
					     r->opts.salvage ? GZDEC_SALVAGE : 0, &g, &err);
		if (tee)
			idxtee_take(tee, &id);
		zsrc_put(tee);
		if (keep)
			kept = rawkeep_kept(keep);
		zsrc_put(keep);
		zmctx_pass_end(r->ctx, w.prog);
		/* The last entry ends at the end of the data.  A failed build
		 * leaves no reader to use its units, and a salvaged build's sink
		 * saw bytes past usize, in units that must not be kept. */
		if (ret == 0 && !g->salvaged)
			warm_end(&w);
		warm_free(&w);
		if (ret < 0 || g->salvaged)
			bcache_drop(r->cache, r->id);
		if (ret < 0 && cut_short(&err, (uint64_t)r->st.st_size, why))
			return ret;
		if (ret < 0) {
			gz_corrupt(text, sizeof(text), err.coff, err.msg);
			return zerr_set(why, ret, err.coff, "%s", text);
		}
		atomic_fetch_add(&r->ctx->stats.built, 1);
		r->pass = true;
		if (kept && !g->salvaged) {
			r->rawkept = true;
			reader_keep_view(r);
		}
		/* A salvaged index is only for this mount: saved, it would pass for a whole file.
		 */
		if (persist && !g->salvaged)
			save_gz(r, &id, g);
	}
	r->idx = g;
	if (g->salvaged && cut_short(&err, (uint64_t)r->st.st_size, &err)) {
		reader_log(r, ZLOG_WARN, NULL,
			   "%s; salvage: showing the %" PRIu64 " bytes gzip -dc prints (%" PRIu64
			   " of them verified by a CRC32)",
			   err.msg, g->usize, g->verified);
	} else if (g->salvaged) {
		gz_corrupt(text, sizeof(text), g->damage_coff, err.msg);
		reader_log(r, ZLOG_WARN, NULL,
			   "%s; salvage: showing its first %" PRIu64 " bytes (%" PRIu64
			   " of them verified by a CRC32)",
			   text, g->usize, g->verified);
	}
	if (g->trailing == GZDEC_TRAIL_GARBAGE)
		reader_log(r, ZLOG_WARN, NULL,
			   "trailing garbage after the last member at offset %" PRIu64 " ignored",
			   g->trail_off);
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

static ssize_t gz_dec_read(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err)
{
	return gzdec_dec_read(dec, src, buf, len, err);
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

static int gz_sniff(struct zsrc *src, const unsigned char *head, size_t n)
{
	(void)src;
	return gzdec_magic(head, n);
}

/* fmttab_saved: idxfile_load with any span, since mounts take any (load_gz). */
static int gz_fresh(const struct idxstore *dir, const char *real, struct zsrc *src,
		    struct zerr *err)
{
	struct gzdec_index *g = NULL;
	struct idxfile_id id;
	int ret = idxfile_identify(src, &id);

	if (ret == 0)
		ret = idxfile_load(dir, real, &id, 0, &g, err);
	gzdec_index_free(g);
	return ret;
}

static int gz_info_line(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len,
			"gzip\tmembers=%" PRIu64 "\tcheckpoints=%" PRIu64 "\tcompressed=%" PRIu64
			"\tuncompressed=%" PRIu64 "\tmax_span=%" PRIu64 "\ttrailing=%" PRIu64,
			in->streams, in->blocks, in->csize, in->usize, in->max_block, in->padding);
}

static int gz_info_counts(const struct reader_info *in, char *out, size_t len)
{
	return snprintf(out, len, "members=%" PRIu64 "\ncheckpoints=%" PRIu64 "\n", in->streams,
			in->blocks);
}

static int gz_advice(enum fmttab_advice what, const char *bs, char *out, size_t len)
{
	(void)bs;
	switch (what) {
	case FMTTAB_UNIT:
		return snprintf(out, len, "gzip span");
	case FMTTAB_NO_INDEX:
		return snprintf(out, len, "gzip not yet indexed, so its index was built");
	default:
		return snprintf(out, len, "%s",
				""); /* spans are the index's: cache_size is the fix */
	}
}

static const struct fmt_suffix gz_suffixes[] = {
	{ ".gz", "" },
	{ ".tgz", ".tar" },
	{ NULL, NULL },
};

/* Its saved index: the checkpoints and windows (idxrec_gz.c). */
static const struct fmt_saved gz_saved = {
	.kind = IDXFILE_KIND_GZIP,
	.name = "gzip",
	.ext = IDXFILE_EXT,
	.spanned = true,
	.max = idxrec_gz_max,
	.fits = idxrec_gz_fits,
	.check = idxrec_gz_check,
	.size = idxrec_gz_size,
	.put = idxrec_gz_put,
	.get = idxrec_gz_get,
	.fresh = gz_fresh,
};

const struct fmt fmt_gzip = {
	.name = "gzip",
	.unit = "checkpoint",
	.sniff = gz_sniff,
	.suffixes = gz_suffixes,
	.bg = FMTTAB_BG_INDEX,
	.salvage = true,
	.open_verifies = true,
	.saved = &gz_saved,
	.info_line = gz_info_line,
	.info_counts = gz_info_counts,
	.advice = gz_advice,
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

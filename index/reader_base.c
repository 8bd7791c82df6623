/* SPDX-License-Identifier: MIT */
/*
 * The reader's ground floor: the small functions that every service of the
 * reader calls (fill.c, udec.c, readahead.c, ckahead.c, reader_ck.c and
 * reader.c itself): its log line, its size and unit look-up, its version
 * tests, the marks of units that failed, and the signal that wakes reads
 * waiting for their turn.  They sit here, below those services, so
 * that the services never call back up into reader.c: reader.c calls
 * readahead, fill, udec and reader_ck, and each of those calls only down,
 * to here (struct reader is in reader_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "cmap.h"
#include "fmt.h"
#include "idxfile.h"
#include "rawkeep.h"
#include "reader.h"
#include "reader_int.h"
#include "srcid.h"
#include "zlog.h"

void reader_log(const struct reader *r, enum zlog_level level, const struct zerr *why,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	zmctx_vlog(r->ctx, level, r->name, why, fmt, ap);
	va_end(ap);
}

uint64_t reader_size(const struct reader *r)
{
	return cmap_size(&r->map);
}

int reader_matches(const struct reader *r, const struct stat *st)
{
	return srcid_same(st, &r->st);
}

bool reader_same_version(const struct reader *r, struct zsrc *src)
{
	char tag[ZSRC_TAG_MAX];
	struct stat st;

	if (zsrc_stat(src, &st) < 0 || !reader_matches(r, &st))
		return false;
	zsrc_tag(src, tag);
	return strcmp(tag, r->tag) == 0;
}

int reader_fail_entry(struct reader *r, size_t k, uint64_t off, const struct zerr *err)
{
	return reader_mark_failed(r, k, off, -EIO, err);
}

/*
 * Whether a failure came from the version opened being gone: codecs report
 * a failed read as -EIO with the reason in words, so the source is asked
 * once more (one byte; an object answers -ESTALE from then on).
 */
static bool version_gone(struct reader *r)
{
	unsigned char c;

	return r->src && zsrc_pread(rawkeep_under(r->src), &c, 1, 0) == -ESTALE;
}

/*
 * The version opened is gone for now: an object overwritten, whose GETs
 * fail If-Match.  Not damage of that version, so no unit is marked: failure
 * marks belong to the version that failed, and this one may come back.
 */
static int version_away(struct reader *r, uint64_t off)
{
	struct zerr why;
	bool first;

	pthread_mutex_lock(&r->lock);
	first = !r->away;
	r->away = true;
	pthread_mutex_unlock(&r->lock);
	zerr_set(&why, -EIO, 0, "the version opened is gone (overwritten or deleted)");
	if (first)
		reader_log(r, ZLOG_ERROR, &why,
			   "read at offset %" PRIu64 ": the version opened is gone (overwritten "
			   "or deleted); reads fail until it comes back or the file is opened anew",
			   off);
	return -EIO;
}

void reader_mark_read(struct reader *r)
{
	bool back;

	pthread_mutex_lock(&r->lock);
	back = r->away;
	r->away = false;
	pthread_mutex_unlock(&r->lock);
	if (back)
		reader_log(r, ZLOG_WARN, NULL, "the version opened is back; it reads again");
}

/* Marks entry k failed and writes its one log line.  Returns -EIO. */
int reader_mark_failed(struct reader *r, size_t k, uint64_t off, int ret, const struct zerr *err)
{
	struct zerr why;
	bool first;

	/* The line names both offsets: a caller gets it as data (reader_last_error). */
	if (ret == -ESTALE || version_gone(r))
		return version_away(r, off);
	zerr_set(&why, ret, err->coff,
		 "read error at offset %" PRIu64 " (%s %zu, compressed offset %" PRIu64 "): %s",
		 off, r->f->unit, r->entry[k], err->coff, err->msg[0] ? err->msg : strerror(-ret));
	pthread_mutex_lock(&r->lock);
	first = !r->bad[k];
	if (ret != -ENOMEM && first) { /* memory comes back; corrupt data does not */
		r->bad[k] = 1;
		if (r->failed++ == 0)
			r->first_err = why;
	}
	pthread_mutex_unlock(&r->lock);
	if (first)
		atomic_fetch_add(&r->ctx->stats.errors, 1);
	/* Formatted again, not from why.msg: the log line is not cut at sizeof(why.msg). */
	if (first)
		reader_log(r, ZLOG_ERROR, &why,
			   "read error at offset %" PRIu64 " (%s %zu, compressed offset %" PRIu64
			   "): %s",
			   off, r->f->unit, r->entry[k], err->coff,
			   err->msg[0] ? err->msg : strerror(-ret));
	return ret == -ENOMEM ? ret : -EIO;
}

static bool same_meta(const struct stat *a, const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_nlink == b->st_nlink && a->st_uid == b->st_uid &&
	       a->st_gid == b->st_gid;
}

/*
 * Whether the file, whose ctime alone moved since open (st: size and mtime
 * as at open), still holds the bytes it had.  A rename, unlink, link, chmod
 * or chown moves only ctime (logrotate renames the file under a long grep),
 * and so does a write that restores mtime (rsync --inplace -t), which a
 * unit's own check cannot catch: the new unit's check is valid.  So the
 * move must have a cause other than a write: since the stat last accepted,
 * the link count, mode or owner changed, or the name stopped leading to
 * the file (opts.still_named).  Without one, it is a write: false.  With
 * one, the first and last 4 KiB must still hash as at open, as a last
 * guard.  What it does not catch: a write after such a cause, before the
 * next miss looks (the ctime both moved), that keeps both ends; and a
 * chmod or chown that changes nothing, which looks like a write and fails
 * the handle.  Checked once per new ctime.
 */
static bool same_bytes(struct reader *r, const struct stat *st0)
{
	struct idxfile_id id;
	struct stat st = *st0, ok_st, after;
	bool named_ok, named, raced = false;

	if (!r->sampled || !srcid_same_but_ctime(&st, &r->st))
		return false;
	pthread_mutex_lock(&r->lock);
	ok_st = r->st_ok;
	named_ok = r->named_ok;
	pthread_mutex_unlock(&r->lock);
	/* A few tries: a chmod racing the hash moves ctime and mode again. */
	for (int tries = 0; tries < 3; tries++) {
		if (ok_st.st_ctim.tv_sec == st.st_ctim.tv_sec &&
		    ok_st.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
			return true;
		named = st.st_nlink > 0 &&
			(!r->opts.still_named || r->opts.still_named(r->opts.still_named_ctx, r));
		/* raced: the mode, owner or links moved under the hash, a cause seen */
		if (!raced && same_meta(&st, &ok_st) && (named || !named_ok))
			return false;
		if (idxfile_identify(r->src, &id) < 0 || id.fingerprint != r->sample ||
		    zsrc_stat(r->src, &after) < 0 || !srcid_same_but_ctime(&after, &r->st))
			return false;
		if (same_meta(&after, &st)) {
			pthread_mutex_lock(&r->lock);
			r->st_ok = st;
			r->named_ok = named;
			pthread_mutex_unlock(&r->lock);
			return true;
		}
		st = after;
		raced = true;
	}
	return false;
}

/*
 * The source must still be the file indexed at open: a file changed in
 * place would mix versions.  Checked on every miss; hits serve the old bytes.
 */
int reader_check_unchanged(struct reader *r)
{
	struct stat st;
	bool first;

	if (zsrc_stat(r->src, &st) == 0 && (srcid_same(&st, &r->st) || same_bytes(r, &st)))
		return 0;
	pthread_mutex_lock(&r->lock);
	first = !r->changed;
	r->changed = true;
	pthread_mutex_unlock(&r->lock);
	if (first) {
		struct zerr why;

		zerr_set(&why, -EIO, 0, "source changed since it was opened");
		reader_log(
			r, ZLOG_ERROR, &why,
			"source changed since it was opened; reads of it fail until it is reopened");
	}
	return -EIO;
}

/*
 * Whether entry k is cached in slices, by a decoder parked between them: an
 * entry wider than whole_max, or one that may get checkpoints (from open
 * on, so its units never change shape).
 */
bool reader_streamed(const struct reader *r, size_t k)
{
	return cmap_len(&r->map, k) > r->opts.whole_max ||
	       (r->ckable && r->ckable[k] == CKABLE_WIDE);
}

/* The cache unit holding byte off, as map entry k and [*ustart, *ustart + *len). */
size_t reader_unit_of(const struct reader *r, uint64_t off, uint64_t *ustart, size_t *len)
{
	size_t k = cmap_find(&r->map, off);
	uint64_t start = r->map.start[k], elen = cmap_len(&r->map, k);

	if (reader_streamed(r, k)) {
		uint64_t s = (off - start) / r->opts.slice;

		start += s * r->opts.slice;
		elen = r->map.start[k + 1] - start;
		if (elen > r->opts.slice)
			elen = r->opts.slice;
	}
	*ustart = start;
	*len = (size_t)elen;
	/* A counter, not state: const readers count too (as reader_last_error locks). */
	atomic_fetch_add_explicit((atomic_uint_fast64_t *)&r->lookups, 1, memory_order_relaxed);
	return k;
}

bool reader_is_bad(struct reader *r, size_t k)
{
	bool bad;

	pthread_mutex_lock(&r->lock);
	bad = r->bad[k] || r->changed;
	pthread_mutex_unlock(&r->lock);
	return bad;
}

void reader_moved_locked(struct reader *r)
{
	r->moves++;
	if (r->waiters)
		pthread_cond_broadcast(&r->moved);
}

void reader_moved(struct reader *r)
{
	pthread_mutex_lock(&r->lock);
	reader_moved_locked(r);
	pthread_mutex_unlock(&r->lock);
}

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_FMTTAB_H
#define ZMOUNT_FMTTAB_H

/*
 * The table of formats, and everything fs/ and tools/ may know about one.
 * Like the kernel's fs/squashfs/decompressor.c, the table in fmttab.c is
 * the one place that lists the formats: callers hold a format id and ask
 * here what it is called, which names it strips, what the background
 * indexer does with it and how the tools describe it; they never test for
 * a given format.
 *
 * Ids: 0 is "not an archive" (plain); 1..fmttab_count() are the table's
 * entries in order (xz 1, gzip 2, zstd 3, which the unit tests use).  Every function here accepts
 * any id: an id out of range is plain.  All are pure lookups on constant
 * data, safe on any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include "src.h"

/* Ids are below this; per-format arrays (counters, context state) have this many slots. */
#define FMTTAB_MAX 8

struct reader_info;

/* What the background indexer does with a format's files (fs/indexer.c). */
enum fmttab_bg {
	FMTTAB_BG_NONE,	 /* nothing: indexed on first use */
	FMTTAB_BG_INDEX, /* first pass: open it, which builds (or loads) its index */
	FMTTAB_BG_CKPT,	 /* second pass: checkpoints inside its wide units */
};

/* The id of source src (borrowed) by its magic alone (fmt.h's sniff), 0 if none, or -errno. */
int fmttab_by_magic(struct zsrc *src);

/* The number of formats; their ids are 1 to this. */
int fmttab_count(void);

/* "xz", "gzip", "zstd", ...; "plain" for id 0 (and any id out of range). */
const char *fmttab_name(int id);

/* What one map entry is called in log lines and tools: "Block", "checkpoint", "frame". */
const char *fmttab_unit(int id);

/*
 * The naming rule: if name ends with one of a format's suffixes (the
 * longest that matches, over all formats), writes its visible name to out
 * (the stem, plus ".tar" for .txz, .tgz, .tzst) and returns that format's
 * id; else returns 0 with out untouched, also when out (outlen bytes) is
 * too small.  The stem is not empty; names_strip judges the rest ("..gz").
 */
int fmttab_strip(const char *name, char *out, size_t outlen);

/* The id whose suffix name has (as fmttab_strip), or 0.  A name only proposes: the magic decides.
 */
int fmttab_by_suffix(const char *name);

/* What the background indexer does with files of this format. */
enum fmttab_bg fmttab_bg(int id);

/*
 * Whether a listing opens the reader to decide that a file shows under
 * its stripped name (xz: its Index is cheap to read, and a damaged one is
 * logged at once); else the probe's answer is enough.
 */
bool fmttab_list_opens(int id);

/* Whether -o salvage can show the verified start of a damaged file of this format. */
bool fmttab_salvages(int id);

/* Whether opening checks every byte (the gzip pass): verifying need not read it all. */
bool fmttab_open_verifies(int id);

/* Whether the format has checkpoints inside its units (a saved checkpoint set). */
bool fmttab_has_ckpts(int id);

/* Whether the format saves an index in index_dir (fmttab_saved works for it). */
bool fmttab_saves(int id);

/* Whether a file of it may need no saved index (zstd frames that all state their size). */
bool fmttab_index_optional(int id);

/*
 * Whether store holds a saved index a mount would use for the version of
 * source real that src has open (the mount's own load and checks).
 * Returns 0 (fresh), 1 (this file needs none), -ENOTSUP (the format saves
 * none), or the load's error: -ENOENT, -ESTALE, -EBADMSG, -EPERM, -EIO,
 * -ENOMEM; err (may be NULL) says why.
 */
struct zerr;
struct idxstore;
int fmttab_saved(int id, const struct idxstore *store, const char *real, struct zsrc *src,
		 struct zerr *err);

/*
 * The per-format counter's name in the mount's stats ("xz_indexes": the
 * reader_counters.opened slot of this id), or NULL if it has none.
 */
const char *fmttab_counter(int id);

/*
 * zmount-info's line for one file after its name: the format's name, then
 * its own tab-separated fields (streams, Blocks, members...; sizes), no
 * newline.  Returns what snprintf returns.
 */
int fmttab_info_line(int id, const struct reader_info *in, char *out, size_t len);

/* zmount-index info's count lines ("streams=...\nblocks=...\n"), each ending in a newline. */
int fmttab_info_counts(int id, const struct reader_info *in, char *out, size_t len);

/* What zmount-stat tells a user about a slow file of a format (fmttab_advice). */
enum fmttab_advice {
	FMTTAB_UNIT,	 /* a unit, to a user: "Block", "frame", "gzip span" */
	FMTTAB_FIX_ONE,	 /* a file of one unit: "recompress with xz -T0 --block-size=BS (...)" */
	FMTTAB_FIX_WIDE, /* wide units: "recompress with pzstd" */
	FMTTAB_NO_INDEX, /* why opening decoded it all: "gzip not yet indexed, so ..." */
};

/*
 * Writes the advice what for format id to out (len bytes), bs standing
 * for the block size that fits the cache ("8MiB"); "" if the format has
 * none (a fix it does not have), a neutral sentence for id 0.  Returns
 * what snprintf returns.
 */
int fmttab_advice(int id, enum fmttab_advice what, const char *bs, char *out, size_t len);

/* "xz, gzip or zstd": every format's name, for messages. */
const char *fmttab_names(void);

#endif

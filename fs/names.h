/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NAMES_H
#define ZMOUNT_NAMES_H

/*
 * The naming rules, as pure functions so they can be tested alone.
 *  - x.xz, x.gz and x.zst show as x; x.txz, x.tgz and x.tzst as x.tar:
 *    the suffixes are the formats' own (fmttab_strip).
 *  - A name only makes a file a candidate; the caller decides, from the
 *    magic bytes and structure, whether it really is an archive.
 *  - If the stripped name exists in the source directory (any type), that
 *    entry wins and the archive stays visible under its own name.
 *  - If several archives strip to the same name (x.gz and x.xz), a sound
 *    one wins over a damaged one (cut short or corrupt, as far as the
 *    caller found at listing time), so a broken x.xz never hides a good
 *    x.zst; among equals the one whose source name sorts first bytewise
 *    wins.  The others stay visible under their own names.
 */

#include <stdbool.h>
#include <stddef.h>

/*
 * Writes the visible name of an archive called name into out (outlen
 * bytes).  Returns 1 if name has an archive suffix and a stem that is not
 * empty, "." or ".."; else 0 (out untouched), also if out is too small.
 */
int names_strip(const char *name, char *out, size_t outlen);

struct names_ent {
	const char *name; /* source name, borrowed */
	int candidate;	  /* caller: 1 if a regular file whose name strips */
	char *visible;	  /* out: malloc'd visible name, or NULL = same as name */
};

/* What is_archive says of a candidate. */
enum names_verdict {
	NAMES_NOT = 0,	   /* not an archive (its magic, or unreadable): keeps its name */
	NAMES_SOUND = 1,   /* an archive */
	NAMES_DAMAGED = 2, /* an archive found damaged: takes its name only if no sound one does */
};

/*
 * Decides the visible name of every entry of one directory.  is_archive is
 * called at most once per candidate whose stripped name is free, and
 * returns an enum names_verdict.  Entries may be in any order.  Returns 0,
 * or -ENOMEM (visible names set so far are kept; free them with
 * names_free).
 */
int names_resolve(struct names_ent *ents, size_t n, int (*is_archive)(void *ctx, size_t i),
		  void *ctx);

/* Frees the visible names set by names_resolve. */
void names_free(struct names_ent *ents, size_t n);

/*
 * names_resolve over one listed directory whose files are all taken as
 * archives by their suffix (an S3 prefix: s3tree.h's strip, whose contract
 * this is): visible[i] is file i's malloc'd visible name or NULL.  Returns
 * 0, or -ENOMEM with every visible[i] NULL.
 */
int names_resolve_suffix(const char *const *names, const bool *file, char **visible, size_t n);

#endif

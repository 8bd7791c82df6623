/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TOOLTAR_H
#define ZMOUNT_TOOLTAR_H

/*
 * What zmount-info --members and zmount-cat FILE MEMBER share to read the
 * members of a tar held in an .xz, .gz or .zst file or s3:// object (or a
 * plain local tar): the archive through the daemon's reader, its member table
 * by one sequential pass of the tar scanner (index/tarscan.h), a member found
 * by name, and its bytes.  Saved member tables are not used: the tools make
 * their own.  Messages go to stderr, one line each, starting with the
 * tool's name.  Single-threaded: one tool's main thread.
 */

#include <limits.h>
#include <stdint.h>

#include "reader.h"
#include "tartab.h"
#include "zmctx.h"

struct tooltar {
	const char *tool;	 /* the program, for messages */
	char name[4 * PATH_MAX]; /* the file as given, escaped to one line */
	struct reader *r;	 /* NULL: a plain tar, read from fd */
	int fd;
	uint64_t size; /* the tar's bytes (decoded) */
	struct tartab t;
	char *buf;
};

/*
 * Opens file: the reader on it, or for a local file that is none of the
 * formats, the file itself as a plain tar.  Returns 0, or after one line on
 * stderr the tool's exit status, with *why the reason: 1 (an object that is
 * none of the formats), 2 (cannot be opened or read, out of memory).
 * tooltar_close it either way.
 */
int tooltar_open(struct tooltar *tt, const char *tool, const char *file, struct zmctx *zm,
		 const struct reader_opts *ro, struct zerr *why);

/*
 * Fills tt->t by one pass over the tar, up to its end-of-archive block; each
 * member left out for an unsafe name gets one line on stderr.  Returns 0, or
 * 2 when a read failed or the tar is damaged (not a tar at all included):
 * *why says why and where, and the members before the damage stay in the
 * table.  Nothing is printed for that error: the caller says it its way.
 */
int tooltar_scan(struct tooltar *tt, struct zerr *why);

/*
 * The member name stands for: the last one with that name in normal form
 * (what tar -x leaves), a hard link followed to its file.  NULL: none.
 */
const struct tar_member *tooltar_find(const struct tooltar *tt, const char *name);

/* Writes member m's bytes (zeros for sparse holes) to fd.  Returns 0, or 2 after one line. */
int tooltar_cat(struct tooltar *tt, const struct tar_member *m, int fd);

/*
 * One member as tar --full-time -tvf shows it, fields separated by sep:
 * mode (its first letter the type: - d l h c b p), owner (names, else ids),
 * size, local time to the second (nanoseconds when the tar has them), name,
 * and for links "-> TARGET" or "link to TARGET".  Names are escaped to one
 * line (zlog_escape).  Written to out (n bytes, cut if shorter).
 */
void tooltar_line(const struct tooltar *tt, const struct tar_member *m, char sep, char *out,
		  size_t n);

/* Frees what tooltar_open and tooltar_scan made; tt may be half open. */
void tooltar_close(struct tooltar *tt);

#endif

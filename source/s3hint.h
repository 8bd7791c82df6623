/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3HINT_H
#define ZMOUNT_S3HINT_H

/*
 * What to tell a user whose prefix lists no object, most often a typo:
 * the nearest existing prefixes of the same level, from one listing of the
 * parent with delimiter '/' (s3_list_dir, its first 1000 names at most).
 * "Nearest" is the edit distance of the last segment (bytes; a swap of
 * neighbours counts one), at most a third of its length (at least 1), or
 * a name that starts with it.
 */

#include <stddef.h>

struct s3;

/*
 * Writes one line (no newline) into line (n bytes) for the empty prefix of
 * bucket ("s3://B/logz/: no objects; did you mean s3://B/logs/?"; up to 3
 * names, nearest first), or, with no near name, what the parent holds.
 * prefix is as the user gave it ("" for the bucket, '/' at the end or
 * not).  Makes one listing at most; its failure only shortens the line
 * (the client logs it as any).  Returns 1 if a name was suggested, else 0.
 */
int s3hint_empty(struct s3 *s, const char *bucket, const char *prefix, char *line, size_t n);

#endif

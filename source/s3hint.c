/* SPDX-License-Identifier: MIT */
/*
 * How it works.  The prefix is split into its parent ("a/b/") and its last
 * segment ("logz"); the parent is listed one level deep, and each common
 * prefix there is scored by the edit distance of its last segment to the
 * typed one (a swap of neighbours is one edit, as typos go; three rows of
 * the dynamic programme, segments over 255 bytes not compared).
 * The best few within the limit are named.
 */
#include "s3hint.h"
#include "s3.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEG_MAX 255  /* longer segments are not compared */
#define NAMES	1000 /* the names of the parent looked at: one page */
#define SUGGEST 3    /* the names a line suggests at most */

struct near {
	const char *seg; /* the typed last segment */
	size_t slen;
	unsigned seen, dirs;
	struct {
		char name[SEG_MAX + 2]; /* the segment and its '/' */
		unsigned d;
	} best[SUGGEST];
	unsigned nbest;
};

/* The edit distance of a and b, a swap of two neighbours counting as one edit (OSA). */
static unsigned distance(const char *a, size_t an, const char *b, size_t bn)
{
	unsigned row[3][SEG_MAX + 1];

	for (size_t j = 0; j <= bn; j++)
		row[0][j] = (unsigned)j;
	for (size_t i = 1; i <= an; i++) {
		unsigned *pp = row[(i + 1) % 3], *prev = row[(i - 1) % 3], *cur = row[i % 3];

		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= bn; j++) {
			unsigned sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			unsigned del = prev[j] + 1, ins = cur[j - 1] + 1;
			unsigned best =
				sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);

			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			cur[j] = best;
		}
	}
	return row[an % 3][bn];
}

static int score(void *arg, const struct s3_obj *o)
{
	struct near *nr = arg;
	const char *seg;
	size_t len;
	unsigned d, lim = nr->slen / 3 ? (unsigned)(nr->slen / 3) : 1, i;

	if (++nr->seen > NAMES)
		return 1; /* enough: stops the listing */
	if (!o->dir)
		return 0;
	nr->dirs++;
	len = strlen(o->key) - 1; /* without its '/' */
	seg = memrchr(o->key, '/', len);
	seg = seg ? seg + 1 : o->key;
	len -= (size_t)(seg - o->key);
	if (len > SEG_MAX || nr->slen > SEG_MAX)
		return 0;
	d = distance(nr->seg, nr->slen, seg, len);
	if (d > lim && !(len > nr->slen && !memcmp(seg, nr->seg, nr->slen)))
		return 0;
	/* Insert by distance, keeping the listing's order among equals. */
	for (i = nr->nbest; i > 0 && nr->best[i - 1].d > d; i--)
		if (i < SUGGEST)
			nr->best[i] = nr->best[i - 1];
	if (i == SUGGEST)
		return 0;
	memcpy(nr->best[i].name, seg, len);
	memcpy(nr->best[i].name + len, "/", 2);
	nr->best[i].d = d;
	if (nr->nbest < SUGGEST)
		nr->nbest++;
	return 0;
}

/* Replaces control bytes of line (names from the server or the command line); returns ret. */
static int one_line(char *line, int ret)
{
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return ret;
}

int s3hint_empty(struct s3 *s, const char *bucket, const char *prefix, char *line, size_t n)
{
	struct near nr = { 0 };
	size_t plen = strlen(prefix), off;
	char *parent;
	int rc;

	while (plen && prefix[plen - 1] == '/')
		plen--;
	off = snprintf(line, n, "s3://%s/%.*s%s: no objects", bucket, (int)plen, prefix,
		       plen ? "/" : "");
	if (!plen || off >= n)
		return one_line(line, 0); /* the whole bucket is empty: nothing to compare */
	nr.seg = memrchr(prefix, '/', plen);
	nr.seg = nr.seg ? nr.seg + 1 : prefix;
	nr.slen = plen - (size_t)(nr.seg - prefix);
	parent = strndup(prefix, (size_t)(nr.seg - prefix));
	if (!parent)
		return one_line(line, 0);
	rc = s3_list_dir(s, parent, score, &nr);
	if (rc < 0) {
		free(parent);
		return one_line(line, 0);
	}
	if (nr.nbest) {
		snprintf(line + off, n - off, "; did you mean ");
		for (unsigned i = 0; i < nr.nbest; i++) {
			off = strlen(line);
			snprintf(line + off, n - off, "%ss3://%s/%s%s",
				 i == 0		     ? ""
				 : i + 1 == nr.nbest ? " or "
						     : ", ",
				 bucket, parent, nr.best[i].name);
		}
		off = strlen(line);
		snprintf(line + off, n - off, "?");
	} else if (nr.seen == 0) {
		snprintf(line + off, n - off, ", and s3://%s/%s is empty too", bucket, parent);
	} else {
		snprintf(line + off, n - off,
			 " (s3://%s/%s has %s%u other prefix%s, none near \"%.*s\")", bucket,
			 parent, nr.seen > NAMES ? "over " : "", nr.dirs, nr.dirs == 1 ? "" : "es",
			 (int)nr.slen, nr.seg);
	}
	free(parent);
	return one_line(line, nr.nbest > 0);
}

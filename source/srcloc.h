/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_SRCLOC_H
#define ZMOUNT_SRCLOC_H

/*
 * What a source argument names, a local path or an s3:// URL, and the
 * one set of messages for one that names nothing usable.  The daemon
 * (fs/ns_open.c, fs/main.c) and the tools (tools/toolsrc.c) both parse
 * through here, so the same bad argument gets the same words from each;
 * each prints them after its own "PROGRAM: SRC: " prefix.  Below FUSE and
 * the reader: it needs only s3src_url and stat.
 *
 * Threads: any; no state.
 */

#include <stddef.h>

/* What the caller will do with the source: list it, or read its bytes. */
enum srcloc_want {
	SRCLOC_TREE,  /* a directory, or s3://BUCKET[/PREFIX] (a bucket alone is one) */
	SRCLOC_OBJECT /* a file (not checked beyond existing), or s3://BUCKET/KEY */
};

struct srcloc {
	int s3;		 /* 1: an s3:// URL (even one refused); 0: a local path */
	char bucket[64]; /* s3 only */
	char key[1025];	 /* s3 only: the key or prefix after "BUCKET/", "" for none */
};

/*
 * Parses src for want.  A local path is stat()ed (following symlinks), so
 * a missing one is said here, before any open.  Returns 0 with *l, or
 * -errno with the reason in why (n bytes, one line, without src):
 *  -EINVAL  an s3:// URL S3 would refuse (bucket name, lengths), or a
 *           bucket alone where an object is wanted;
 *  -ENOTDIR a local path that is not a directory where a tree is wanted;
 *  else     stat's error ("cannot open: ...").
 */
int srcloc_parse(const char *src, enum srcloc_want want, struct srcloc *l, char *why, size_t n);

/*
 * The reason for a failure err (-errno) to open a source, in the words
 * srcloc_parse uses: "cannot open: <strerror>".  why gets n bytes.
 */
void srcloc_why(int err, char *why, size_t n);

#endif

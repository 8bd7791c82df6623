/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_NS_OPEN_H
#define ZMOUNT_NS_OPEN_H

/*
 * The namespace constructor chooser: above both implementations (ns.h),
 * so that neither they nor the stack below them depends on the other.
 */

#include <stddef.h>

struct ns;
struct opts;

/*
 * Opens src, a directory (an absolute, canonical path) or an
 * s3://BUCKET[/PREFIX] URL, with the mount's options (opts.h), told
 * apart by srcloc_parse (source/srcloc.h), as the tools tell theirs.  An S3 namespace connects and
 * lists once now (ns_s3.h).  Returns 0 and *out, or -errno with one line in msg (msglen bytes),
 * "SRC: " then srcloc.h's words for a bad path or URL.
 */
int ns_open_src(const char *src, const struct opts *o, struct ns **out, char *msg, size_t msglen);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TOOLSRC_H
#define ZMOUNT_TOOLSRC_H

/*
 * What the tools share to read s3://BUCKET/KEY as they read local files:
 * the S3 flags, the one client per bucket, and the reader on an object.  A
 * path or URL is parsed by srcloc_parse (source/srcloc.h), the daemon's
 * parser, so a bad one gets the daemon's words.  Single-threaded: a tool's
 * main thread calls these (the sources may fetch ahead on threads of their
 * own).
 */

#include <stddef.h>

#include "reader.h"
#include "s3src.h"
#include "src.h"

/* The flags, for --help texts. */
#define TOOLSRC_HELP                                                                               \
	"  --endpoint URL     the S3 endpoint of s3:// URLs (default $AWS_ENDPOINT_URL_S3,\n"      \
	"                     $AWS_ENDPOINT_URL, else https://s3.REGION.amazonaws.com)\n"          \
	"  --region R         its region (default $AWS_REGION, else us-east-1)\n"                  \
	"  --credentials FILE the keys, as ~/.aws/credentials (default $AWS_ACCESS_KEY_ID\n"       \
	"                     and $AWS_SECRET_ACCESS_KEY, else ~/.aws/credentials;\n"              \
	"                     profile $AWS_PROFILE)\n"                                             \
	"  --profile P        its section (default $AWS_PROFILE, else default)\n"

/*
 * Takes "--endpoint URL", "--region R", "--credentials FILE" and "--profile P" (or
 * "--flag=VALUE") out of argv[1..*argc), up to a "--", and remembers them
 * for toolsrc_open; argv keeps the other arguments in their order.  tool
 * names the program in the message.  Returns 0, or -1 after printing one
 * line for a flag without its value.
 */
int toolsrc_flags(const char *tool, int *argc, char **argv);

/* Whether path is an s3:// URL (else a local path). */
int toolsrc_is_url(const char *path);

/*
 * Opens the object of an s3:// URL as a source: the client for its bucket
 * (made on first use, kept until toolsrc_end), a HEAD of the key, then
 * s3src_open.  Returns 0 and *out (the caller's reference), or -errno with
 * one line in msg (n bytes): a bad URL or one naming no key (-EINVAL), no
 * credentials, the HEAD's failure (-ENOENT, -EACCES, ...).
 */
int toolsrc_open(const char *url, struct zsrc **out, char *msg, size_t n);

/*
 * As toolsrc_open for an object whose listing gave st (its ETag): no
 * HEAD.  Returns 0 and *out, or -errno with one line in msg.
 */
int toolsrc_open_listed(const char *url, const struct s3_stat *st, struct zsrc **out, char *msg,
			size_t n);

/*
 * Lists the objects under the prefix of an s3://BUCKET[/PREFIX] URL, taken
 * as a directory as a mount takes it ('/' added), and calls cb for each
 * (folder markers, keys ending in '/', are skipped) with its URL and what
 * the listing says of it (both valid during the call).  A non-zero cb
 * stops the listing and is returned.  Returns 0, or -errno with one line
 * in msg: the listing's failure (s3.h), or -ENOENT when the prefix holds
 * no object, msg then naming the nearest prefixes (s3hint.h).
 */
int toolsrc_list(const char *url, int (*cb)(void *arg, const char *url, const struct s3_stat *st),
		 void *arg, char *msg, size_t n);

/*
 * reader_open for path, or for an s3:// URL toolsrc_open then
 * reader_open_src named by the URL.  A failure of toolsrc_open is logged
 * through ctx's sink (one line, as the reader logs its own) and returns
 * as reader_open's do, with *why set.  Returns 0 and *out, or -errno.
 */
int toolsrc_reader(const char *path, struct zmctx *ctx, const struct reader_opts *opts,
		   struct reader **out, struct zerr *why);

/* The S3 settings the flags named (endpoint, region, credentials, profile; NULL: defaults), for a
 * client of the tool's own, such as an index store (source/s3idx.h).  Valid until exit. */
const struct s3src_conf *toolsrc_conf(void);

/* Closes the clients; every source of toolsrc_open must be gone. */
void toolsrc_end(void);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_FMT_H
#define ZMOUNT_FMT_H

/*
 * One compressed format behind the reader (internal to index/).  The
 * reader's core (reader.c) keeps the cache units, read-ahead, version
 * checks, views, parked decoders and the byte budget; a backend only knows
 * its format: how to build the block map, and how to decode from the start
 * of one map entry.
 *
 * Adding a format: one file fmt_NAME.c defining `const struct fmt
 * fmt_NAME`, a PROBE_NAME in codec/probe.h, and one line in reader.c's
 * table.  Its codec (codec/NAMEdec.*) is the only place that includes the
 * library's header.
 *
 * Contracts:
 *  - open reads or builds the index from r->fd (size r->st.st_size), sets
 *    r->idx (freed with free), and fills r->map and r->entry (map entry ->
 *    the backend's own unit number).  It returns 0, -ENOTSUP (show the file
 *    raw; why says why, and the core logs it unless the magic was wrong),
 *    -EINVAL (corrupt: why names the compressed offset), -ENOMEM or -EIO.
 *  - probe (may be NULL) says cheaply, for listings, whether a file with
 *    the right magic is one zmount will decode: 0, or -errno with why set
 *    (the file is shown raw).  index_max is opts.index_max (SIZE_MAX: no
 *    limit), for a format whose map size the probe can count.
 *  - dec_open gives a decoder at the start of map entry k; it may pread
 *    r->fd during the call but keeps no descriptor: dec_read gets the fd
 *    on every call.  dec_read returns min(len, bytes left in entry k)
 *    bytes, or a negative errno with err set; the core never reads past
 *    the entry.  The call that returns an entry's last byte has verified
 *    that entry's integrity check where the format has one (xz Check,
 *    zstd content checksum, the CRC32 the gzip index pass recorded for the
 *    span).
 *  - dec_cost is what keeping the decoder parked costs, in bytes.
 *  - extent gives the compressed bytes entries [k0, k1] read, for
 *    read-ahead hints; info fills the format's fields of reader_info.
 * Threads: open runs once, before the reader is shared; the rest may run
 * on any thread at once (each decoder on one thread at a time).
 *
 * Checkpoints inside one entry (ckpt.h), for formats that have them (ck
 * not NULL):
 *  - ck->build decodes map entry k whole from fd (not r->fd: the reader
 *    may be detached), verifying it as
 *    dec_read would, and feeds b through ckpt_build_out and
 *    ckpt_build_point, a point at the first place it can resume at or past
 *    every span bytes.  Returns 0 (every point handed out is good), or
 *    -ENOTSUP (this entry cannot have any: a filter or a table the codec
 *    cannot resume), -EIO (corrupt), -ENOMEM, with err set.
 *  - ck->open gives a decoder at the point whose blob is given (blob NULL:
 *    the entry's start), driven through ck->ops; the core wraps it in a
 *    ckpt_dec, which checks each piece of output against the CRC32s the
 *    build recorded.  -EINVAL (a blob not for this entry), -EIO, -ENOMEM.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckpt.h"

struct reader;
struct reader_info;
struct zerr;

struct fmt_ck {
	int (*build)(struct reader *r, int fd, size_t k, uint64_t span, struct ckpt_build *b,
		     struct zerr *err);
	int (*open)(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
		    struct zerr *err);
	struct ckpt_inner_ops ops;
};

struct fmt {
	const char *name; /* "xz", "gzip", "zstd" */
	const char *unit; /* what one map entry is, for log lines: "Block", ... */
	int (*probe)(int fd, uint64_t size, size_t index_max, struct zerr *why);
	int (*open)(struct reader *r, struct zerr *why);
	void (*free)(void *idx);
	int (*dec_open)(struct reader *r, size_t k, void **dec, struct zerr *err);
	ssize_t (*dec_read)(void *dec, int fd, void *buf, size_t len, struct zerr *err);
	uint64_t (*dec_tell)(const void *dec); /* bytes returned since the entry's start */
	size_t (*dec_cost)(const void *dec);
	void (*dec_close)(void *dec);
	void (*extent)(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
		       uint64_t *cend);
	void (*info)(const struct reader *r, struct reader_info *in);
	const struct fmt_ck *ck; /* NULL: no checkpoints inside an entry */
};

extern const struct fmt fmt_xz, fmt_gzip, fmt_zstd;

#endif

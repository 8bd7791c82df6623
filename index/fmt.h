/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_FMT_H
#define ZMOUNT_FMT_H

/*
 * One compressed format behind the reader (internal to index/).  The
 * reader's core (reader.c, fill.c, udec.c, park.c, readahead.c) keeps the
 * cache units, read-ahead, version checks, views, parked decoders and the
 * byte budget; a backend only knows
 * its format: how to build the block map, and how to decode from the start
 * of one map entry.
 *
 * Adding a format: one file fmt_NAME.c defining `const struct fmt
 * fmt_NAME` with every hook set but those that may be NULL (probe, ck,
 * saved, ctx_new/ctx_free, wide_fix, counter; check_fmttab checks the
 * rest), and one line in fmttab.c's table.  Its codec (codec/NAMEdec.*) is
 * the only place that includes the library's header.  Nothing else in the
 * tree names a format: fs/ and tools/ ask fmttab.h (suffixes, probe name,
 * background indexing, info fields, saved indexes), the core and the
 * context keep per-format state in arrays indexed by the format's id
 * (r->fmt, its position in the table, 1-based).
 *
 * Every hook that reads takes a struct zsrc (codec/src.h), borrowed: no
 * backend knows whether its bytes come from a file or an object.
 * Contracts:
 *  - open reads or builds the index from r->src (size r->st.st_size), sets
 *    r->idx (freed with free), and fills r->map and r->entry (map entry ->
 *    the backend's own unit number).  It returns 0, -ENOTSUP (show the file
 *    raw; why says why, and the core logs it unless the magic was wrong),
 *    -EINVAL (corrupt: why names the compressed offset), -ENOMEM or -EIO.
 *  - probe (may be NULL) says cheaply, for listings, whether a file with
 *    the right magic is one zmount will decode: 0, or -errno with why set
 *    (the file is shown raw).  index_max is opts.index_max (SIZE_MAX: no
 *    limit), for a format whose map size the probe can count.
 *  - dec_open gives a decoder at the start of map entry k; it may pread
 *    r->src during the call but keeps no source: dec_read gets the src
 *    on every call.  dec_read returns min(len, bytes left in entry k)
 *    bytes, or a negative errno with err set; the core never reads past
 *    the entry.  The call that returns an entry's last byte has verified
 *    that entry's integrity check where the format has one (xz Check,
 *    zstd content checksum, the CRC32 the gzip index pass recorded for the
 *    span).
 *  - dec_cost is what keeping the decoder parked costs, in bytes.
 *  - extent gives the compressed bytes entries [k0, k1] read, for
 *    read-ahead hints; info fills the format's fields of reader_info.
 *  - sniff says from the first bytes of the file (head, n of
 *    them, n may be short) whether it has this format's magic; it may
 *    pread src for more (zstd steps over skippable frames).  The first
 *    format in the table whose sniff says yes is the file's.
 *  - suffixes (the list may be empty) end with a NULL ext; add is what
 *    the visible name gets instead (".tar" for .txz), or "".
 *  - ctx_new/ctx_free (may be NULL) make and free the format's state in a
 *    context (zmctx_new, zmctx_free): fmt_state(r) while a reader runs.
 *    ctx_new returns 0 or -ENOMEM; ctx_free accepts NULL.
 *  - saved (NULL: the format saves no index) is fmttab_saved's contract.
 *  - bg, list_open, salvage, open_verifies, index_optional, counter,
 *    info_line, info_counts and advice are what fmttab.h's functions of
 *    the same names return, and say there what they mean.
 * Threads: open runs once, before the reader is shared; the rest may run
 * on any thread at once (each decoder on one thread at a time).
 *
 * Checkpoints inside one entry (ckpt.h), for formats that have them (ck
 * not NULL):
 *  - ck->build decodes map entry k whole from src (not r->src: the reader
 *    may be detached), verifying it as
 *    dec_read would, and feeds b through ckpt_build_out and
 *    ckpt_build_point, a point at the first place it can resume at or past
 *    every span bytes.  Returns 0 (every point handed out is good), or
 *    -ENOTSUP (this entry cannot have any: a filter or a table the codec
 *    cannot resume), -EIO (corrupt), -ENOMEM, with err set.
 *  - open may also build sets on a pass that sizes entries by decoding
 *    them whole (zstd frames that state no size), verified as ck->build
 *    would, and hand them over in r->ck_open (calloc'd, map.n entries,
 *    NULL where none): the core keeps those of wide entries, so that pass
 *    is their checkpoint pass, and frees the rest.
 *  - ck->open gives a decoder at the point whose blob is given (blob NULL:
 *    the entry's start), driven through ck->ops; the core wraps it in a
 *    ckpt_dec, which checks each piece of output against the CRC32s the
 *    build recorded.  -EINVAL (a blob not for this entry), -EIO, -ENOMEM.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdbool.h>

#include "ckpt.h"
#include "fmttab.h"

struct reader;
struct reader_info;
struct zerr;

struct fmt_ck {
	int (*build)(struct reader *r, struct zsrc *src, size_t k, uint64_t span,
		     struct ckpt_build *b, struct zerr *err);
	int (*open)(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
		    struct zerr *err);
	struct ckpt_inner_ops ops;
};

struct fmt {
	const char *name; /* "xz", "gzip", "zstd" */
	const char *unit; /* what one map entry is, for log lines: "Block", ... */
	int (*probe)(struct zsrc *src, uint64_t size, size_t index_max, struct zerr *why);
	int (*open)(struct reader *r, struct zerr *why);
	void (*free)(void *idx);
	int (*dec_open)(struct reader *r, size_t k, void **dec, struct zerr *err);
	ssize_t (*dec_read)(void *dec, struct zsrc *src, void *buf, size_t len, struct zerr *err);
	uint64_t (*dec_tell)(const void *dec); /* bytes returned since the entry's start */
	size_t (*dec_cost)(const void *dec);
	void (*dec_close)(void *dec);
	void (*extent)(const struct reader *r, size_t k0, size_t k1, uint64_t *cstart,
		       uint64_t *cend);
	void (*info)(const struct reader *r, struct reader_info *in);
	const struct fmt_ck *ck; /* NULL: no checkpoints inside an entry */

	/* Naming and policy, for fs/ and tools/ through fmttab.h. */
	int (*sniff)(struct zsrc *src, const unsigned char *head, size_t n);
	const struct fmt_suffix *suffixes;
	enum fmttab_bg bg;
	bool list_open;	      /* fmttab_list_opens */
	bool salvage;	      /* fmttab_salvages */
	bool open_verifies;   /* fmttab_open_verifies */
	bool index_optional;  /* fmttab_index_optional */
	const char *wide_fix; /* added to the wide-unit warning: ", or recompress ..."; or NULL */
	const char *counter;  /* fmttab_counter */
	int (*saved)(const char *dir, const char *real, struct zsrc *src, struct zerr *err);
	int (*ctx_new)(void **state);
	void (*ctx_free)(void *state);
	int (*info_line)(const struct reader_info *in, char *out, size_t len);
	int (*info_counts)(const struct reader_info *in, char *out, size_t len);
	int (*advice)(enum fmttab_advice what, const char *bs, char *out, size_t len);
};

struct fmt_suffix {
	const char *ext; /* ".xz" */
	const char *add; /* "" or ".tar" */
};

/*
 * The format of source src, by the first sniff in fmttab.c's table that says
 * yes: returns its id and sets *f, or 0 with *f NULL (no format's magic),
 * or -errno from pread (*f NULL).
 */
int fmt_sniff(struct zsrc *src, const struct fmt **f);

/* Table entry id (1-based), or NULL. */
const struct fmt *fmt_get(int id);

/* The format's state in r's context (ctx_new's), or NULL. */
void *fmt_state(const struct reader *r);

#endif

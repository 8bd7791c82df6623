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
 * background indexing, info fields, saved indexes; the fmtnames test,
 * tests/tools/check_fmtnames.py, holds fs/, source/ and tools/ to it),
 * the core and the context keep per-format state in arrays indexed by
 * the format's id (r->fmt, its position in the table, 1-based).
 *
 * Every hook that reads takes a struct zsrc (source/src.h), borrowed: no
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
 *    format in the table whose sniff says yes is the file's.  The table
 *    is the only list of formats: there is no enum of them.  codec/ must
 *    not depend on index/ (the codecs are the ground floor), so each codec
 *    only says whether bytes have its own magic (xzdec_magic, gzdec_magic,
 *    zstddec_sniff) and the format's sniff asks it; adding a format adds
 *    its magic in its own codec and its sniff, nothing in a shared list.
 *  - suffixes (the list may be empty) end with a NULL ext; add is what
 *    the visible name gets instead (".tar" for .txz), or "".
 *  - ctx_new/ctx_free (may be NULL) make and free the format's state in a
 *    context (zmctx_new, zmctx_free): fmt_state(r) while a reader runs.
 *    ctx_new returns 0 or -ENOMEM; ctx_free accepts NULL.
 *  - saved (NULL: the format saves no index) says how its index is saved
 *    in index_dir: struct fmt_saved below.
 *  - bg, list_open, salvage, open_verifies, index_optional, counter,
 *    info_line, info_counts and advice are what fmttab.h's functions of
 *    the same names return, and say there what they mean.
 * Threads: open runs once, before the reader is shared; the rest may run
 * on any thread at once (each decoder on one thread at a time).
 *
 * Checkpoints inside one entry (ckpt.h), for formats that have them (ck
 * not NULL; tests/fmt/fmt_zid.c's zid_ck is the smallest, check_zidck and
 * mount_dummy_fmt drive it through the core's pass, save and load):
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
 *  - run_open (may be NULL) gives a decoder at the start of map entry k,
 *    driven through run_ops, that is ck->build pulled by its reader: each
 *    read returns what dec_read would (the call that returns the last
 *    byte has verified the entry) and feeds b as ck->build does, so that
 *    a reader that reads the entry through has built its set with the one
 *    decode (issue 32).  Errors as dec_open's, and -ENOTSUP where
 *    ck->build would have it (the core then takes dec_open).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdbool.h>

#include "ckpt.h"
#include "fmttab.h"

struct idxfile_id;
struct idxfile_info;
struct reader;
struct reader_info;
struct zerr;

/*
 * A saved index of one kind: what idxfile.c (the envelope: header, key
 * field, CRC-64, identity, trust, stores; doc/index-format.md) asks of the
 * records that follow the key field.  A format that saves its index points
 * fmt.saved at one; the checkpoint sets of every format with checkpoints
 * are the one kind no format owns (idxrec_ckpt_saved, idxrec.h).  idxfile.c
 * finds a file's kind through fmt_saved_kind, so a new format's kind is
 * read, checked, pruned and named by the envelope with no edit there.
 * Records are written little-endian with idxrec.h's helpers; a hook gets
 * off, where the records start, and b/h, the whole image or its header.
 *  - kind is the header's kind field: unique, never 0;
 *    IDXFILE_KIND_GZIP/ZSTD/CKPT are taken.  name is for messages ("a gzip
 *    index, not a zstd one"); ext the file's suffix, IDXFILE_EXT (".zmi":
 *    one per source, shared by all formats, since a file has one format)
 *    or IDXFILE_EXT_CKPT.
 *  - spanned: the header's span is the spacing it was built with, checked
 *    to be in [64 KiB, GZDEC_MAX_SPAN] before anything else of it.
 *  - max: the largest file of the kind for a source of src_size bytes at
 *    span; load refuses a larger one unread.  fits: 0 if a file of flen
 *    bytes fits what header h says it holds, else -EBADMSG (err set).
 *  - check: validates the records of a whole image b of len bytes (CRC-64
 *    and header checked) and fills in->wbytes: 0, -EBADMSG or -ENOMEM.
 *  - size/put: the bytes of a whole file holding recs (what the format's
 *    save gives idxfile_save_recs) with a key field of plen bytes, or
 *    -EINVAL/-EFBIG/-ENOMEM for recs that cannot be saved; put then
 *    writes the kind's header fields (span, counts) and its records.
 *  - get: turns a checked image into out (what the format's load gives
 *    idxfile_load_recs): 0, -EBADMSG or -ENOMEM, err set.
 *  - fresh (NULL for a kind no format owns) is fmttab_saved's contract.
 * No state; any thread.
 */
struct fmt_saved {
	uint16_t kind;
	const char *name;
	const char *ext;
	bool spanned;
	uint64_t (*max)(uint64_t src_size, uint64_t span);
	int (*fits)(const unsigned char *h, uint64_t flen, uint64_t src_size, uint64_t span,
		    struct zerr *err);
	int (*check)(const unsigned char *b, size_t len, size_t off, struct idxfile_info *in,
		     struct zerr *err);
	int (*size)(const struct idxfile_id *id, const void *recs, size_t plen, size_t *n);
	void (*put)(unsigned char *b, size_t off, const void *recs);
	int (*get)(const unsigned char *b, size_t off, const struct idxfile_info *in, void *out,
		   struct zerr *err);
	int (*fresh)(const struct idxstore *store, const char *real, struct zsrc *src,
		     struct zerr *err);
};

struct fmt_ck {
	int (*build)(struct reader *r, struct zsrc *src, size_t k, uint64_t span,
		     struct ckpt_build *b, struct zerr *err);
	int (*open)(struct reader *r, size_t k, const void *blob, size_t len, void **dec,
		    struct zerr *err);
	struct ckpt_inner_ops ops;
	int (*run_open)(struct reader *r, size_t k, uint64_t span, struct ckpt_build *b, void **dec,
			struct zerr *err);
	struct ckpt_inner_ops run_ops;
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
	const struct fmt_saved *saved; /* NULL: saves no index */
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

/*
 * The saved-index kind whose header kind field is kind: a table entry's
 * saved, or the checkpoint sets' (idxrec_ckpt_saved); NULL if none.
 */
const struct fmt_saved *fmt_saved_kind(uint32_t kind);

/* Table entry id (1-based), or NULL. */
const struct fmt *fmt_get(int id);

/* The format's state in r's context (ctx_new's), or NULL. */
void *fmt_state(const struct reader *r);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXFILE_H
#define ZMOUNT_IDXFILE_H

/*
 * Saved indexes: files in an index directory, reused by later mounts and by
 * the tools.  Three kinds share the file format and every rule below: a
 * gzip checkpoint index (idxfile_save / idxfile_load), the measured frame
 * sizes of a zstd file whose frames do not state them (idxfile_save_zstd /
 * idxfile_load_zstd), both in the source's "<h>.zmi", and the checkpoint
 * sets inside the wide xz Blocks or zstd frames of a source
 * (idxfile_save_ckpt / idxfile_load_ckpt, ckpt.h), in its own "<h>.zmc", so
 * that a zstd file can have both.  The byte layout is in
 * doc/index-format.md.
 *
 * A saved index is bound to its source's identity (struct idxfile_id),
 * absolute path and whole-file hash, and named by what a rename keeps of
 * the identity (idxfile_path), so a logrotate rename keeps it.  Loading
 * validates the fixed header first (magic, version, length, a size cap
 * computed from the source's size, and the room its record count can
 * take), so a junk file is refused before it is read;
 * then the CRC-64, read in 256 KiB pieces, so a file that is junk all the
 * same costs no more memory than that; then the whole file (every field
 * and every checkpoint) before anything is allocated from it, so a
 * damaged, foreign or stale index is rejected, never trusted.
 *
 * Ownership (as ssh's StrictModes): load, save and prune trust an index
 * directory only if it is owned by geteuid() or root and is not writable by
 * group or others (a sticky 1777 directory such as /tmp is refused too), and
 * its parent and each directory above that, up to and including the first
 * one owned by root, is owned by geteuid() or root and is not group/other-writable unless it
 * is sticky.  An index file must be a regular file (opened with O_NOFOLLOW,
 * never through a symlink), owned by geteuid() or root and not writable by
 * group or others.  Otherwise they return -EPERM with the reason in err;
 * the caller logs that once and works without saved indexes.  Directories
 * are used through descriptors once checked, so renaming them afterwards
 * changes nothing.
 *
 * Files are written to a unique temporary name in the same directory,
 * fsync'd, and renamed over the final name: readers see the old file or the
 * new one, never a torn one, and of two processes saving the same index the
 * last rename wins.  Index files are mode 0600 and a created directory 0700,
 * because windows hold up to 32 KiB of the source's plain text per
 * checkpoint.
 *
 * Where the files are is a store handle (idxstore.h; borrowed, never
 * NULL), opened once from index_dir by the caller (idxopen.h).  The rules
 * above are those of a local directory (idxlocal.c).  In any other store
 * ("s3://BUCKET/PREFIX") the same files are got, put and deleted through
 * its ops, and checked exactly as local files are (header, caps, CRC-64,
 * identity), but the ownership rules above do not apply: a store is
 * trusted as far as whoever may write to it (doc/index-format.md, "Shared
 * indexes in S3").  A blob larger than an index of its kind can be for the
 * source's size at any span is refused before it is read.  idxfile_prune
 * takes a local store only; a listable store is pruned by
 * idxfile_prune_store.  read_header takes a local file's path.
 *
 * Nothing here logs.  Functions return 0 or a negative errno; load and
 * read_header also fill a struct zerr (may be NULL) with the reason and the
 * offset in the index file, for the caller's one log line.  A failed save
 * leaves no temporary file behind; the caller keeps its index in memory and
 * logs once (e.g. "cannot save index in DIR: Read-only file system").
 *
 * Threads: every function may be called from any thread at once; there is
 * no global state.  idxfile_default_dir reads the environment, so it must
 * not race with setenv().
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "idxstore.h"
#include "src.h"
#include "zerr.h"

/* The codecs' index types (gzdec.h, zstddec.h), borrowed or returned by pointer only: a
 * caller that builds or reads them includes its codec's header. */
struct gzdec_index;
struct zstddec_index;

/* 2: the source's ctime joined the identity; 3: kind; 4: each gzip span's CRC32;
 * 5: files named by content, not path, and the source's whole-file hash;
 * 6: the source's version tag (an object's ETag) after its path */
#define IDXFILE_VERSION 6u
/* gzip: every member's CRC32 and ISIZE were checked when built; zstd: every size was measured;
 * checkpoints: made by the pass that verified each entry's check (ckpt.h) */
#define IDXFILE_F_VERIFIED 1u

/*
 * What an index file holds (its kind field).  The records of each kind are
 * its struct fmt_saved's (fmt.h): these are the kinds of this tree's
 * formats, for the tests and the layout's doc; a new format that saves its
 * index takes an unused number in its own fmt_saved, and nothing here
 * changes.
 */
enum idxfile_kind {
	IDXFILE_KIND_GZIP = 1, /* gzip checkpoints and windows */
	IDXFILE_KIND_ZSTD = 2, /* one record per zstd frame: extent and uncompressed size */
	IDXFILE_KIND_CKPT = 3, /* checkpoint sets inside xz Blocks or zstd frames (ckpt.h) */
	IDXFILE_KIND_TAR = 4,  /* a tar's member table (tarsave.h) */
};

/* A format's index file ("<h>.zmi": one per source, whatever its format), and its
 * checkpoint sets' ("<h>.zmc"). */
#define IDXFILE_EXT	 ".zmi"
#define IDXFILE_EXT_CKPT ".zmc"
#define IDXFILE_EXT_TAR	 ".zmt"

struct fmt_saved;

/*
 * What a saved index is bound to: the fields of srcid.h's "same version"
 * (device, inode, size, mtime ns, ctime ns) and a fingerprint.  Compare two
 * with idxfile_id_same, never by hand.  A load takes an index whose
 * identity and path are the source's as it is; one that differs in path,
 * device, inode or ctime only (a rename, a copy with cp -p) only if the
 * source's whole-file hash, read through src, equals the recorded one.
 */
struct idxfile_id {
	uint64_t dev, ino, size;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint64_t fingerprint; /* hash of the first and last 4 KiB (fewer if the file is smaller) */
	char tag[ZSRC_TAG_MAX]; /* the source's version tag (zsrc_tag), exactly; "" for files */
	/*
	 * idxfile_identify's source (borrowed, no reference taken), read by
	 * load, save and remove for the whole-file hash; keep a reference while
	 * the id is used.  Each read first checks that src is still this
	 * version (zsrc_stat against the fields above): a changed source gives
	 * -ESTALE, never another version's hash.  NULL in an id read from an
	 * index file.
	 */
	struct zsrc *src;
	/*
	 * The whole-file hash, if a pass that read the source took it on the
	 * way (idxtee.h), so that save does not read the source again; used
	 * only while src still has the identity above.  false from
	 * idxfile_identify and in an id read from an index file.
	 */
	bool hashed;
	uint64_t hash;
};

/* A saved index's header, for tools. */
struct idxfile_info {
	char src[PATH_MAX]; /* the source's key (idxfile_keyed), NUL-terminated */
	struct idxfile_id id;
	uint32_t version, flags; /* flags: IDXFILE_F_VERIFIED */
	uint32_t kind;		 /* enum idxfile_kind */
	/* zstd: span 0, members = npoints = frames, wbytes 0; checkpoints: members = sets,
	 * npoints = points of all sets, usize = where the last set's entry ends */
	uint64_t span, usize, members, npoints;
	uint64_t wbytes;    /* compressed window bytes (checkpoints: blob bytes), all points */
	uint64_t file_size; /* bytes of the index file */
	uint64_t src_hash;  /* XXH64 of the source's id.size compressed bytes */
};

/*
 * The default index directory: "$XDG_CACHE_HOME/zmount" if XDG_CACHE_HOME is
 * an absolute path (the XDG spec says to ignore a relative one), else
 * "$HOME/.cache/zmount" if HOME is absolute, else the same under the home
 * directory of getuid() from the password database.  Does not create it.
 * Returns 0, -ENOENT (no home directory found) or -ENAMETOOLONG (len too
 * small; out is then "").
 */
int idxfile_default_dir(char *out, size_t len);

/*
 * Reads src's identity: zsrc_stat, its tag (zsrc_tag), plus a hash of its
 * first and last 4 KiB read with zsrc_pread, and records src (borrowed) in
 * id->src.  Returns 0,
 * -EINVAL (not a regular file), -EIO (the source shrank while being read)
 * or the -errno of stat/pread.  *id is undefined on error.
 */
int idxfile_identify(struct zsrc *src, struct idxfile_id *id);

/*
 * Whether name can key a saved index (the src_abspath of the functions
 * below): an absolute path ("/...") or a URL ("s3://bucket/key", anything
 * holding "://").  Relative paths cannot: they name no one file.
 */
bool idxfile_keyed(const char *name);

/*
 * Whether a and b are the same version of a source: srcid_same (srcid.h)
 * over their stat fields, equal fingerprints and equal tags.  The one comparison of
 * identities: load, prune and the tools all go through it.
 */
bool idxfile_id_same(const struct idxfile_id *a, const struct idxfile_id *b);

/*
 * The largest index file that can be valid for a source of src_size bytes
 * indexed with span bytes (span is clamped to [64 KiB, GZDEC_MAX_SPAN]):
 *   136 + 4175 + 8 + (1 + floor(1032 * src_size / span)) * (32 + 65536),
 * saturating at UINT64_MAX.  Deflate makes at most 1032 bytes per input
 * byte, and checkpoints are at least span apart, so an index has at most
 * 1 + 1032 * src_size / span records, each with a window of at most 64 KiB.
 * Load refuses a larger file before reading past its header.
 */
uint64_t idxfile_max_size(uint64_t src_size, uint64_t span);

/*
 * The largest zstd index file that can be valid for a source of src_size
 * bytes: 136 + 4175 + 8 + min(src_size / 9, ZSTDDEC_MAX_FRAMES) * 32 (the
 * smallest zstd frame is 9 bytes; one 32-byte record per frame).
 */
uint64_t idxfile_max_size_zstd(uint64_t src_size);

/*
 * The largest checkpoint-kind index file that can be valid for a source of
 * src_size bytes saved with span (clamped to [64 KiB, GZDEC_MAX_SPAN]),
 * saturating at UINT64_MAX.  With S = src_size, U = 32768 * S (no xz Block
 * or zstd frame makes more output per compressed byte), E = floor(S / 9)
 * sets (no zstd frame or xz Block is smaller than 9 bytes), each with a
 * first point without a blob, and K = floor(U / span) further points (a set
 * has at most one point per span past its first, see idxfile_save_ckpt):
 *   136 + 4175 + 8 + 52 * E + K * (16 + 4 + 65536) + 4 * floor(U / 65536) + 4 * S
 * that is: records, one CRC32 per 64 KiB piece plus one partial piece per
 * point, 64 KiB of codec state per further point (an LZMA2 model is at most
 * 28 KiB), and window bytes up to 4 * S in all.  Sparse compressed windows
 * stay far below that: they hold only what the next span references, at
 * most the span itself, which for incompressible data is about as much as
 * the source.  Sets that do not fit are not saved (-EFBIG).  Load also
 * refuses a file longer than its header's own counts can take (the same
 * terms with the header's sets, points and usize), before reading it.
 */
uint64_t idxfile_max_size_ckpt(uint64_t src_size, uint64_t span);

/*
 * out = "DIR/<16 hex digits>.zmi", the hex being a 64-bit hash of what a
 * rename or a copy keeps of id: size, mtime and fingerprint (not the path,
 * device, inode or ctime), so that a renamed source finds its index.  Two
 * copies of one file share that file (the last loaded is recorded).
 * Returns 0, -EINVAL (dir empty, id NULL) or -ENAMETOOLONG.  dir is a
 * store's name (idxstore_name): the file is that store's blob of the same
 * last component.
 */
int idxfile_path(const char *dir, const struct idxfile_id *id, char *out, size_t len);

/* The same for the checkpoint-kind file: "DIR/<16 hex digits>.zmc", the same hex. */
int idxfile_path_ckpt(const char *dir, const struct idxfile_id *id, char *out, size_t len);

/*
 * The envelope over any kind k (fmt.h's struct fmt_saved; borrowed): every
 * rule above and below (trust, naming by k->ext, identity, atomic write,
 * checks before trust) is the same for every kind; only the records are
 * k's.  idxfile_save_recs saves recs (what k->size and k->put take) and
 * returns what idxfile_save returns (-EFBIG also for records larger than
 * a load of k would take).  idxfile_load_recs loads into out (what k->get
 * fills) with idxfile_load's returns and checks, -EBADMSG for a file of
 * another kind, -ERANGE if span_wanted is not 0 and the file's span
 * differs.  idxfile_remove_recs is idxfile_remove for k's file.  The
 * per-kind calls below are these with their kind.
 */
int idxfile_save_recs(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct fmt_saved *k, const void *recs,
		      uint64_t *bytes_written);
int idxfile_load_recs(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct fmt_saved *k, uint64_t span_wanted,
		      void *out, struct zerr *err);
int idxfile_remove_recs(const struct idxstore *store, const char *src_abspath,
			const struct idxfile_id *id, const struct fmt_saved *k);

/*
 * Saves idx (borrowed, not modified) as the index of the source at
 * src_abspath with identity id.  Creates dir and its parents as needed (mode
 * 0700).  Sets IDXFILE_F_VERIFIED: gzdec_index_build always verifies.
 * Returns 0 and, if bytes_written is not NULL, the file's size; or
 *   -EINVAL        src_abspath not a key (idxfile_keyed), id->size != idx->csize, or idx
 *                  is not a well-formed index (points out of order, ...);
 *   -EPERM         dir is not trusted (see above; nothing is written);
 *   -ENAMETOOLONG  a path too long;
 *   -ENOMEM        out of memory;
 *   -ESTALE        id->fd is not the version id names any more (hashing it);
 *   or the errno of mkdir, mkstemp, write, fsync, close or rename, e.g.
 *   -EROFS, -ENOSPC, -EDQUOT, -EFBIG, -EACCES, -ENOTDIR, -EIO.
 * On error no temporary file is left and any previous index file is intact.
 */
int idxfile_save(const struct idxstore *store, const char *src_abspath, const struct idxfile_id *id,
		 const struct gzdec_index *idx, uint64_t *bytes_written);

/*
 * Loads the saved index of the source at src_abspath with identity id: the
 * file named by id's content key, made for that path and identity, or for
 * another path, inode or ctime with the same size, mtime and fingerprint
 * whose whole-file hash (read through id->fd, 256 KiB at a time) equals the
 * recorded one; such a file is rebound to this path and identity and saved
 * again (a failed save ignored), so the next load does not hash.  If
 * span_wanted is not 0, an index built with another span is refused with
 * -ERANGE: span bounds how much a random read decodes, so a mount asked for span=64K must not
 * silently use a 64M index. Pass 0 (tools) to take any span; on -ERANGE rebuild and save over it.
 * Returns 0 and *out (caller frees with gzdec_index_free), or *out = NULL and
 *   -ENOENT   no index file under id's key (-ENOTDIR if dir is not a directory);
 *   -EPERM    dir or the index file is not trusted (see above): do not save
 *             there either;
 *   -EBADMSG  not a valid index: wrong magic, unsupported version (an index
 *             from an older zmount), a file of another kind, truncated or padded, larger than
 *             idxfile_max_size allows, checksum mismatch, a field out of
 *             range, a symlink, or not a regular file;
 *   -ESTALE   a valid index, but made for other bytes: another identity
 *             whose whole-file hash differs or cannot be taken (the source
 *             changed; a header recording another source size gives this
 *             before the rest of the file is read);
 *   -ERANGE   valid and current, but built with another span;
 *   -ENOMEM   out of memory;
 *   or the errno of open/pread (-EACCES, -EIO, ...).
 * err (may be NULL) says why, with coff = the offset in the index file.
 */
int idxfile_load(const struct idxstore *store, const char *src_abspath, const struct idxfile_id *id,
		 uint64_t span_wanted, struct gzdec_index **out, struct zerr *err);

/*
 * Saves the frame sizes of z (borrowed), the walked and measured index of
 * the source at src_abspath with identity id, as a zstd-kind index file:
 * one record per zstd frame (its compressed offset and size, its
 * uncompressed size and where that came from).  Same directory rules,
 * naming, and atomic write as idxfile_save; a gzip index saved for the same
 * path is replaced.  Returns what idxfile_save returns; -EINVAL also when z
 * has no frame or a frame of unknown size, or id->size != z->csize.
 */
int idxfile_save_zstd(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct zstddec_index *z,
		      uint64_t *bytes_written);

/*
 * Loads the zstd-kind index of src_abspath for identity id, with the same
 * checks as idxfile_load, and then applies it to z, the index that
 * zstddec_index_read just walked from this very source, only if the two
 * agree: the same number of zstd frames, each record's compressed offset
 * and size equal to the walked frame's, each size the walk already knows
 * (Frame_Content_Size, seek table) equal to the record's, and every other
 * size within what its frame's blocks can hold (zstddec_index_settle_all).
 * A saved size stays untrusted: the decoder still fails with -EIO when a
 * frame decodes to another length.
 * Returns 0 with the unknown sizes of z filled in (usize_src MEASURED), or,
 * with z unchanged, what idxfile_load returns (-ENOENT, -EPERM, -EBADMSG,
 * -ESTALE, -ENOMEM, -errno) and also -EBADMSG for a gzip-kind file or an
 * index that disagrees with z (err says which frame).
 */
int idxfile_load_zstd(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, struct zstddec_index *z, struct zerr *err);

/* One saved checkpoint set: the map entry it belongs to (its start offset in the
 * source's uncompressed output) and the set. */
struct idxfile_ckpt {
	uint64_t entry_start;
	const struct ckpt_set *set;
};

/*
 * Saves n checkpoint sets (borrowed; n >= 1, in ascending entry_start, the
 * entries [entry_start, + set->usize) apart, each set passing
 * ckpt_set_check and holding at most 1 + (set->usize - 1) / span points,
 * as a codec that puts its j-th point at or past j spans makes) for the source at
 * src_abspath with identity id, built with spacing span, as its
 * checkpoint-kind file "<h>.zmc".  Blobs are written end to end (a set's
 * blob bytes no point uses are dropped).  Same directory rules and atomic
 * write as idxfile_save; the "<h>.zmi" of the same source (gzip index or
 * zstd frame sizes) is not touched.  Returns what idxfile_save returns;
 * -EINVAL also for sets out of order or overlapping, a set ckpt_set_check
 * refuses or with more points than one per span, span out of [64 KiB,
 * GZDEC_MAX_SPAN]; -EFBIG for sets larger than idxfile_max_size_ckpt (or
 * the header's own bound) allows, which load would refuse: the caller
 * keeps them in memory only.
 */
int idxfile_save_ckpt(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, uint64_t span, const struct idxfile_ckpt *sets,
		      size_t n, uint64_t *bytes_written);

/*
 * Loads src_abspath's checkpoint-kind file, with the same checks and
 * returns as idxfile_load (-ERANGE for another span if span_wanted is not
 * 0; -EBADMSG for a file of another kind), and every set validated by
 * ckpt_set_check, entries ascending, apart and ending inside the header's
 * usize.  Whether each entry_start and set->usize is a map entry of this
 * source is the caller's check against its map.  A set is only as good as
 * the pass that made it: ckpt_dec still verifies every piece.
 * Returns 0 with *out (n sets, each set malloc'ed: free each with
 * ckpt_set_free, then free(*out)) and *n, or *out NULL, *n 0 and the error.
 */
int idxfile_load_ckpt(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, uint64_t span_wanted, struct idxfile_ckpt **out,
		      size_t *n, struct zerr *err);

/*
 * Removes src_abspath's index file from dir if it is a valid index a load
 * for that path and identity id would take (the same rule, without the
 * rebind): for a caller that has proven a saved index
 * wrong (a zstd frame that does not decode to its saved size), so that the
 * next open rebuilds it instead of failing again.  Same trust checks as
 * load; a file it would not load for (id) is left alone.  A save that
 * replaces the file between the check and the unlink loses its file: one
 * rebuild.  Returns 0, or what idxfile_load returns (-ENOENT, -EPERM,
 * -EBADMSG, -ESTALE, ...), or the errno of unlinkat.
 */
int idxfile_remove(const struct idxstore *store, const char *src_abspath,
		   const struct idxfile_id *id);

/* The same for the checkpoint-kind file: for a caller whose resumed piece did not
 * match a loaded set's CRC32. */
int idxfile_remove_ckpt(const struct idxstore *store, const char *src_abspath,
			const struct idxfile_id *id);

/*
 * Reads and fully validates the index file at path (checksum included, as
 * load does, with the size cap taken from the source size it records; the
 * source is not looked at) and fills *info.  For inspecting a file: it does
 * not check ownership, so success says nothing about whether load trusts it.
 * path is opened with O_NOFOLLOW: a symlink gives -EBADMSG.
 * Returns 0, -EBADMSG, -ENOMEM, or the errno of open/pread; err as for load.
 * *info is undefined on error.
 */
int idxfile_read_header(const char *path, struct idxfile_info *info, struct zerr *err);

/*
 * Removes from store, a local directory (idxlocal_store; any other store
 * gives -ENOTSUP: idxfile_prune_store), without following symlinks
 * (entries are opened with O_NOFOLLOW relative to dir; symlinks are left
 * alone):
 *  - index files "<16 hex>.zmi" and "<16 hex>.zmc" that are invalid (an
 *    older version's too), whose name is not their recorded identity's key
 *    with their kind's suffix, whose source (at the recorded path) is gone
 *    (ENOENT, ENOTDIR, ELOOP) or not a regular file, or whose source there
 *    has other bytes (a load for it would refuse: identity and whole-file
 *    hash), unless an entry of that directory has the recorded device and
 *    inode and the same bytes (renamed by logrotate, not loaded since);
 *  - temporary files ".<16 hex>.zmi.XXXXXX" and ".<16 hex>.zmc.XXXXXX" last
 *    modified over an hour ago (a live save takes seconds).
 * Indexes whose source cannot be checked (EACCES, EIO, ...) are kept, and
 * so are index files not trusted (another owner, group/other-writable).
 * Sources are opened with O_NOFOLLOW|O_NONBLOCK.
 * Returns 0 and, if removed is not NULL, how many files went; or -ENOENT,
 * -ENOTDIR, -EPERM (dir not trusted: nothing is removed), -ENOMEM or the
 * errno of opening dir.
 */
int idxfile_prune(const struct idxstore *store, unsigned *removed);

/*
 * What idxfile_prune_store learns of the source an index records (in: the
 * index's header, its source key and identity; the records not read):
 * 0 and *st and tag, the version the source has now, as its zsrc_stat and
 * zsrc_tag give it; -ENOENT if the source is proven gone; any other -errno
 * if it cannot be told from here (the index is kept).  Answer 0 only where
 * stat and tag are the whole identity (an object: ETag, size,
 * Last-Modified), since the index is then judged by them alone, without
 * reading the source.
 */
typedef int (*idxfile_now_fn)(void *arg, const struct idxfile_info *in, struct stat *st,
			      char tag[ZSRC_TAG_MAX]);

/*
 * Removes from store (idxstore.h; one with the list and peek ops, such
 * as an S3 prefix) the blobs proven useless, read
 * as little as that takes:
 *  - "<16 hex>.zmi" or ".zmc" blobs (directly in the store) that are no
 *    index: shorter than any index (by the listing; not read), or a header
 *    that fails the checks a load applies to it (one peek of its first
 *    136 + PATH_MAX bytes), or, when header and source passed, a body that
 *    fails the CRC-64 or any other check of a load, or is over the cap of a
 *    load (the store's get refuses it unread);
 *  - blobs whose name is not their recorded identity's key and kind (a load
 *    never finds them);
 *  - blobs whose source now (above) says is gone (-ENOENT), or has other
 *    stat fields (srcid_same) or another tag than recorded, decided from the
 *    header alone.
 * Kept: blobs now cannot judge, blobs that cannot be read (or changed
 * since the listing), other names.  A blob saved again between its check
 * and its delete is lost (one rebuild), as with idxfile_remove.
 * Returns 0 and, if removed is not NULL, how many blobs went (failed
 * deletes not counted); or -ENOTSUP (a store without list or peek, such
 * as a local directory: idxfile_prune), -ENOMEM, or the list op's -errno
 * (then nothing was removed).
 */
int idxfile_prune_store(const struct idxstore *store, idxfile_now_fn now, void *arg,
			unsigned *removed);

#endif

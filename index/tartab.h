/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TARTAB_H
#define ZMOUNT_TARTAB_H

/*
 * The member table of one tar archive: plain data, built by tarscan.h from
 * the archive's decoded bytes, saved and loaded by tartab_encode/decode.
 * Offsets are in the archive's decoded (uncompressed) bytes, so a member's
 * byte k is the archive's byte data_off + k (sparse members: see
 * tartab_locate).
 *
 * Memory, stated as the cap counts it (tartab_bytes):
 *   sizeof(struct tar_member) (96 on LP64) per member
 *   + name_len + 1 + link_len + 1 per member (link_len 0 when none)
 *   + the distinct user and group names in a row, each length + 1
 *     (a member with the same uname/gname as the one before shares them)
 *   + 16 per sparse extent (GNU sparse members only).
 * The arrays grow by doubling, so the allocation is up to twice that;
 * the cap applies to the counted bytes.
 *
 * Threads: none inside.  A table being built belongs to its builder; a
 * finished one may be read from any thread at once.
 */

#include <stddef.h>
#include <stdint.h>

#include "zerr.h"

enum tar_type {
	TAR_FILE,
	TAR_DIR,
	TAR_SYMLINK,
	TAR_HARDLINK, /* link: an earlier member's name; size 0 (tartab_link_target) */
	TAR_CHAR,
	TAR_BLOCK,
	TAR_FIFO,
	TAR_TYPES
};

#define TAR_SPARSE 1u /* flags: GNU sparse; size is the expanded size (tartab_locate) */

struct tar_member {
	uint64_t hdr_off;  /* decoded offset of its first header block (pax, long name: theirs) */
	uint64_t data_off; /* decoded offset of its data (sparse 1.0: after the map) */
	uint64_t stored;   /* bytes of data in the archive from data_off */
	uint64_t size;	   /* the member's size as listed (sparse: expanded; hard link: 0) */
	int64_t mtime;	   /* seconds since the epoch */
	uint32_t mtime_ns; /* pax sub-second part, else 0 */
	uint32_t mode;	   /* permission bits and set-id/sticky, no file-type bits */
	uint32_t uid, gid;
	uint8_t type;  /* enum tar_type */
	uint8_t flags; /* TAR_SPARSE */
	uint16_t pad;
	uint32_t name, name_len; /* offset in the string pool, length without the NUL */
	uint32_t link, link_len; /* symlink target or hard link name; link_len 0: none */
	uint32_t uname, gname;	 /* NUL-terminated in the pool ("" when none) */
	uint32_t sp, sp_n;	 /* its extents in the sparse array */
};

struct tar_extent {
	uint64_t off; /* offset in the expanded member */
	uint64_t len; /* bytes of data there, stored one after the other from data_off */
};

struct tartab {
	struct tar_member *m;
	size_t n, m_cap;
	char *str; /* the string pool, NUL-terminated strings */
	size_t str_len, str_cap;
	struct tar_extent *sp;
	size_t sp_n, sp_cap;
	size_t max_bytes;    /* cap on tartab_bytes; 0: none */
	uint32_t last_uname; /* pool offsets of the previous member's, for sharing */
	uint32_t last_gname;
	uint64_t dropped; /* members left out for unsafe names (each reported by the scanner) */
};

/* An empty table whose counted bytes may not exceed max_bytes (0: no cap beyond 4 GiB of
 * strings).  Free with tartab_free. */
void tartab_init(struct tartab *t, size_t max_bytes);
/* Frees the arrays; t may be NULL; t is left empty and reusable. */
void tartab_free(struct tartab *t);

/* The bytes the cap counts (the formula above). */
size_t tartab_bytes(const struct tartab *t);

/*
 * Whether path (len bytes, not NUL-terminated) is a safe member name, and
 * its normal form: "./" and "." segments, repeated and trailing slashes
 * removed.  Returns the normal form's length (written to out, NUL-terminated,
 * out has room for len + 1) or -1 with *why a static sentence: empty (or
 * only "."), absolute, a ".." segment, a NUL inside, longer than PATH_MAX.
 */
int tartab_name_check(const char *path, size_t len, char *out, const char **why);

/*
 * Appends m with its strings (name normal, as tartab_name_check gives it;
 * link, uname, gname of the given lengths, link_len 0: none) and, when m->flags has
 * TAR_SPARSE, sp_n extents; m's string and extent fields are set here.
 * Returns 0, or -E2BIG when the table would pass its cap or 4 GiB of strings,
 * -ENOMEM; the table is unchanged on failure.
 */
int tartab_add(struct tartab *t, const struct tar_member *m, const char *name, const char *link,
	       size_t link_len, const char *uname, const char *gname, const struct tar_extent *sp,
	       size_t sp_n);

/* Takes back the last tartab_add (none: nothing), as if it had not been made. */
void tartab_pop(struct tartab *t);

static inline const char *tartab_name(const struct tartab *t, const struct tar_member *m)
{
	return t->str + m->name;
}

static inline const char *tartab_str(const struct tartab *t, uint32_t off)
{
	return t->str + off;
}

/*
 * Where byte off of member m is: returns 1 with *aoff the archive's decoded
 * offset and *run the bytes stored there in a row, 0 for a hole of *run
 * zero bytes (sparse members), -1 at or past the member's end.
 */
int tartab_locate(const struct tartab *t, const struct tar_member *m, uint64_t off, uint64_t *aoff,
		  uint64_t *run);

/*
 * Whether n extents fit a sparse member of expanded size size with stored bytes in the
 * archive: in order, not overlapping, inside size, adding up to stored.  NULL, or why not.
 */
const char *tartab_extents_check(const struct tar_extent *e, size_t n, uint64_t size,
				 uint64_t stored);

/*
 * The member whose data a hard link m (at index i) shows: the last
 * regular file before it with its link name, or NULL.  Linear in i.
 */
const struct tar_member *tartab_link_target(const struct tartab *t, size_t i);

/*
 * The saved form (doc/tar.md): "ZMTAR" 1, archive size, counts, members as
 * varints with names prefix-coded against the previous one, CRC-64 last.
 * tartab_encode returns 0 and *out (caller frees), *len; or -ENOMEM.
 * tartab_decode rebuilds t (initialised by the caller, empty) from buf,
 * re-checking what the scanner checked: a bad magic, version, length or
 * CRC, a name that fails tartab_name_check, a member beyond asize, members
 * out of order or overlapping, a bad sparse map.  Returns 0, or -EINVAL
 * with why (may be NULL) a sentence naming the member and why->coff its
 * byte in buf, -E2BIG (the cap), -ENOMEM; t is emptied on failure.
 */
int tartab_encode(const struct tartab *t, uint64_t asize, uint8_t **out, size_t *len);
int tartab_decode(struct tartab *t, const uint8_t *buf, size_t len, uint64_t asize,
		  struct zerr *why);

#endif

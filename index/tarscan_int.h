/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TARSCAN_INT_H
#define ZMOUNT_TARSCAN_INT_H

/* The scanner's state, shared by tarscan.c (blocks, headers) and tarscan_pax.c (pax records,
 * sparse maps).  Not for other modules. */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tarscan.h"

#define TAR_BLOCK_SIZE 512u

enum tarscan_state {
	TS_HDR,	 /* collecting a header block */
	TS_EXT,	 /* collecting a pax header's or a long name's data */
	TS_SPX,	 /* collecting an old GNU sparse extension block */
	TS_MAP,	 /* collecting the blocks of a pax 1.0 sparse map */
	TS_SKIP, /* skipping a member's data and padding */
	TS_END,	 /* after the end-of-archive block */
	TS_ERR,
};

/* Attributes of pax records: local ('x', cleared per member) or global ('g'). */
#define PAX_PATH     (1u << 0)
#define PAX_LINKPATH (1u << 1)
#define PAX_SIZE     (1u << 2)
#define PAX_MTIME    (1u << 3)
#define PAX_UID	     (1u << 4)
#define PAX_GID	     (1u << 5)
#define PAX_UNAME    (1u << 6)
#define PAX_GNAME    (1u << 7)
#define PAX_SPARSE   (1u << 8) /* GNU.sparse.* seen: 0.0/0.1, or 1.0 when major == 1 */
#define PAX_SPNAME   (1u << 9)
#define PAX_REALSIZE (1u << 10)

struct pax_str {
	char *p;
	size_t len;
};

struct pax {
	unsigned set; /* PAX_* */
	struct pax_str path, linkpath, uname, gname, spname;
	uint64_t size, uid, gid, realsize;
	int64_t mtime;
	uint32_t mtime_ns;
	int major; /* GNU.sparse.major, -1: none */
};

struct tarscan {
	struct tartab *t;
	uint64_t asize;
	tarscan_drop_fn drop;
	void *drop_arg;
	enum tarscan_state state;
	int err;
	bool capped; /* err is the table's cap (tarscan_capped) */
	struct zerr why;
	uint64_t off;	  /* bytes consumed */
	uint64_t blk_off; /* offset of the block being collected */
	unsigned char blk[TAR_BLOCK_SIZE];
	size_t blk_fill;
	uint64_t skip, skip_pad; /* TS_SKIP: bytes left, of which the last skip_pad are padding */
	/* TS_EXT: the data of an 'L', 'K', 'x' or 'g' header (kind), need bytes, then pad */
	char kind;
	char *ext;
	size_t ext_len, ext_need, ext_cap;
	uint64_t ext_pad;
	uint64_t ext_off;   /* TS_EXT: its header's offset */
	bool skip_member;   /* TS_SKIP: the data is a member's that member_done took */
	uint64_t first_hdr; /* offset of the first header of the member being read */
	bool have_first;
	struct pax_str long_name, long_link; /* GNU 'L', 'K' */
	struct pax local, global;
	/* the member after its main header: completed by TS_SPX, TS_MAP or at once */
	struct tar_member cur;
	uint64_t data_size; /* the member's data in the archive, a 1.0 sparse map included */
	uint64_t realsize;  /* sparse: the expanded size */
	bool sparse;
	char *name, *link; /* as stored, not yet checked */
	size_t name_len, link_len;
	char uname[33], gname[33]; /* ustar fields, when pax gives none */
	struct tar_extent *map;
	size_t map_n, map_cap;
	bool map_bad; /* over TARSCAN_SPARSE_MAX or malformed: the member is dropped */
	const char *map_why;
	char norm[PATH_MAX + 1], lnorm[PATH_MAX + 1]; /* member_done's normal names */
	size_t map_pos;				      /* TS_MAP: bytes of ext parsed */
	uint64_t map_left; /* TS_MAP: numbers still to read; UINT64_MAX before the count */
	uint64_t map_blocks;
};

/* Stops the scan with ret and a sentence about the header at coff; returns ret. */
int tarscan_fail(struct tarscan *s, int ret, uint64_t coff, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Applies the pax records in s->ext (kind 'x': s->local, 'g': s->global); 0 or -EINVAL
 * (tarscan_fail called), -ENOMEM. */
int tarscan_pax(struct tarscan *s, uint64_t hdr_off);
void tarscan_pax_clear(struct pax *p);

/* Appends an extent to s->map (its cap marks the member bad instead of failing). */
int tarscan_map_add(struct tarscan *s, uint64_t off, uint64_t len);

/*
 * TS_MAP: parses the pax 1.0 map's text in s->ext from s->map_pos.  Returns 1 when the map is
 * complete, 0 when more blocks are needed, -1 when it is malformed (s->map_why).
 */
int tarscan_map_text(struct tarscan *s);

/* Checks s->map against the expanded size and the stored bytes; NULL or why not. */
const char *tarscan_map_check(const struct tarscan *s, uint64_t realsize, uint64_t stored);

#endif

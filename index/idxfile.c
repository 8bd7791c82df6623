/* SPDX-License-Identifier: MIT */
/*
 * Saved indexes, the envelope (layout: doc/index-format.md).  All kinds
 * share the header, the source path, the checksum, and all of the trust,
 * identity and writing below; only the records after the path differ, and
 * those are the kind's: its struct fmt_saved (fmt.h), found by the
 * header's kind field through fmt_saved_kind, which check(), load, save
 * and prune call.  Nothing here names a kind: gzip's and zstd's records
 * are their formats' (fmt_gz.c, fmt_zstd.c over idxrec_gz.c,
 * idxrec_zstd.c), the checkpoint sets' idxrec_ckpt.c's.  A format's index
 * lives in "<h>.zmi", checkpoint sets in "<h>.zmc" beside it, so a zstd
 * file keeps both its sizes and its sets.
 *
 * How it works.  Saving serializes the whole index into one buffer,
 * little-endian byte by byte, ending with a CRC-64 of everything before it,
 * then runs the loader's validator over that buffer (so we never write what
 * we would refuse to read), checks the index directory as loading does,
 * writes the buffer to a new O_EXCL temporary file made in it through its
 * descriptor, fsyncs it and renames it over the final name (idxlocal.c), or
 * hands it to the store's put (the handle idxfile.h's callers pass).
 *
 * Loading first checks who may have written the file: the index directory
 * (opened once, then used only through its descriptor, so a rename after
 * the check changes nothing), the directories above it up to the first one
 * root owns, walked through "..", and the file itself (O_NOFOLLOW, fstat;
 * idxtrust.c holds those rules).
 * Then it reads only the 128-byte header and checks magic, version, the
 * recorded length against the real one, and that length against
 * the kind's max for the source and against what the header's own record
 * count can take (the kind's fits).  Then the CRC-64, reading 256 KiB at a
 * time: a junk or forged file costs at most its reading, never its own
 * size in memory.  Only then does it read the whole file (an index is
 * about the size of the in-memory index it becomes) and validate it before
 * it allocates anything from it: the CRC again, then every
 * field and every checkpoint, with all 64-bit sums checked for overflow and
 * every count bounded by the bytes actually present.  Only then is the
 * identity compared (bound_to), and the gzdec_index built, allocated
 * exactly as gzdec.c does (calloc'd struct, one points array, each window
 * malloc'd, NULL when empty) so gzdec_index_free frees it.
 *
 * Names and identity (version 5).  A file is named by its source's content
 * key, a hash of what a rename or cp -p keeps (size, mtime, fingerprint),
 * and records the full identity, the path, and an XXH64 of the source's
 * compressed bytes, taken at save time through the identified descriptor.
 * A load whose identity matches the recorded one reads nothing more of the
 * source; one whose device, inode or ctime differ (logrotate renamed it)
 * hashes the source, 256 KiB at a time, and takes the index only if the
 * hash matches, then writes it back bound to the new path and identity so
 * the next load does not hash.  Hashing compressed bytes runs at memory
 * speed, far below the decode pass the index saves.
 *
 * The hashes (CRC-64, XXH64, FNV-1a) are idxhash.c's; the local directory
 * (temp + rename, the prune walk) is idxlocal.c.
 */
#include "idxfile.h"
#include "fmt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idxhash.h"
#include "idxlocal.h"
#include "idxrec.h"
#include "idxstore.h"
#include "idxtrust.h"
#include "srcid.h"

#define IF_MIN_FILE (IF_HDR + 1u + IF_REC + IF_CRC)
#define IF_PIECE    (256u << 10) /* what the CRC pass reads at a time */
#define IF_PROBE    4096u	 /* bytes hashed at each end of a source */
#define IF_HEXLEN   16u		 /* hex digits in a file name */

static const unsigned char if_magic[8] = { 'Z', 'M', 'I', 'D', 'X', '\r', '\n', 0x1A };

static void id_stat(const struct idxfile_id *id, struct stat *st);

/* Reads len bytes at off from src: 0, -EIO if it ends first, or -errno. */
static int src_read_full(struct zsrc *src, void *buf, size_t len, uint64_t off)
{
	ssize_t n = zsrc_pread(src, buf, len, off);

	return n < 0 ? (int)n : (size_t)n < len ? -EIO : 0;
}

/*
 * Whole-file hashes this process has taken, by the full identity of the
 * version hashed (idxfile_id_same), the newest first.  A renamed source
 * (logrotate) may have several kinds saved (.zmi, .zmt, .zmc), and each
 * load proves its kind by content: without this, each hashed the whole
 * source again (a tar's member table after its gzip index: 47 MB read
 * twice, on the first lookup inside it).  An identity names one version
 * (a write moves ctime), which a load as recorded already trusts, and
 * src_hash checks that the source still is that version before it uses
 * one.  A handful covers the sources being opened at once.
 */
enum { HASHED_N = 8 };
static struct hashed_ids {
	pthread_mutex_t lock;
	size_t n;
	struct idxfile_id id[HASHED_N]; /* src NULL: only the identity */
	uint64_t hash[HASHED_N];
} hashed = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool hashed_find(const struct idxfile_id *id, uint64_t *out)
{
	bool found = false;

	pthread_mutex_lock(&hashed.lock);
	for (size_t i = 0; i < hashed.n && !found; i++)
		if (idxfile_id_same(&hashed.id[i], id)) {
			*out = hashed.hash[i];
			found = true;
		}
	pthread_mutex_unlock(&hashed.lock);
	return found;
}

static void hashed_add(const struct idxfile_id *id, uint64_t h)
{
	pthread_mutex_lock(&hashed.lock);
	if (hashed.n < HASHED_N)
		hashed.n++;
	memmove(&hashed.id[1], &hashed.id[0], (hashed.n - 1) * sizeof(hashed.id[0]));
	memmove(&hashed.hash[1], &hashed.hash[0], (hashed.n - 1) * sizeof(hashed.hash[0]));
	hashed.id[0] = *id;
	hashed.id[0].src = NULL;
	hashed.hash[0] = h;
	pthread_mutex_unlock(&hashed.lock);
}

/*
 * The whole-file hash of the source id names (XXH64 of its id->size
 * compressed bytes), read from id->src in IF_PIECE reads, or the one a
 * pass took as it read them (id->hashed), or one taken before (hashed).  id->src must be
 * that very version before and after (srcid_same with zsrc_stat): a
 * source written meanwhile (or an object whose GETs say -ESTALE) is
 * -ESTALE, never another version's hash.  Returns 0, -ESTALE, -ENOMEM or
 * -errno.
 */
static int src_hash(const struct idxfile_id *id, uint64_t *out)
{
	unsigned char *p = NULL;
	struct stat want, st;
	uint64_t off = 0;
	struct idxhash_xxh x;
	size_t n = 0, done = 0;
	int ret = 0;

	id_stat(id, &want);
	if (!id->src || zsrc_stat(id->src, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !srcid_same(&st, &want))
		return -ESTALE;
	if (id->hashed) {
		*out = id->hash; /* taken by the pass that read it (idxtee.h): still this version */
		return 0;
	}
	if (hashed_find(id, out))
		return 0;
	p = malloc(IF_PIECE);
	if (!p)
		return -ENOMEM;
	idxhash_xxh_init(&x);
	while (ret == 0 && off < id->size) {
		n = id->size - off < IF_PIECE ? (size_t)(id->size - off) : IF_PIECE;
		ret = src_read_full(id->src, p, n, off);
		off += n;
		if (ret == 0)
			done = idxhash_xxh_feed(&x, p, n); /* n % 32 != 0 only for the last piece */
	}
	if (ret == 0)
		*out = idxhash_xxh_end(&x, id->size, p + done, n - done);
	free(p);
	if (ret == 0 && (zsrc_stat(id->src, &st) < 0 || !srcid_same(&st, &want)))
		ret = -ESTALE; /* written while hashed */
	if (ret == 0)
		hashed_add(id, *out);
	return ret == -EIO ? -ESTALE : ret; /* shrank while hashed */
}

int idxfile_default_dir(char *out, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	int n;

	if (len)
		out[0] = '\0';
	if (xdg && xdg[0] == '/') {
		n = snprintf(out, len, "%s/zmount", xdg);
	} else {
		if (!home || home[0] != '/') {
			if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res ||
			    !res->pw_dir || res->pw_dir[0] != '/')
				return -ENOENT;
			home = res->pw_dir;
		}
		n = snprintf(out, len, "%s/.cache/zmount", home);
	}
	if (n < 0 || (size_t)n >= len) {
		if (len)
			out[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

bool idxfile_keyed(const char *name)
{
	return name && (name[0] == '/' || strstr(name, "://"));
}

int idxfile_identify(struct zsrc *src, struct idxfile_id *id)
{
	unsigned char buf[IF_PROBE];
	struct stat st;
	uint64_t h = IDXHASH_FNV64_INIT;
	size_t n;
	int ret;

	ret = zsrc_stat(src, &st);
	if (ret < 0)
		return ret;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	id->size = (uint64_t)st.st_size;
	id->mtime_sec = (int64_t)st.st_mtim.tv_sec;
	id->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	id->ctime_sec = (int64_t)st.st_ctim.tv_sec;
	id->ctime_nsec = (uint32_t)st.st_ctim.tv_nsec;
	n = id->size < IF_PROBE ? (size_t)id->size : IF_PROBE;
	ret = src_read_full(src, buf, n, 0);
	if (ret == 0) {
		h = idxhash_fnv64(h, buf, n);
		ret = src_read_full(src, buf, n, id->size - n);
	}
	if (ret < 0)
		return ret;
	h = idxhash_fnv64(h, buf, n);
	id->fingerprint = idxhash_mix64(h ^ id->size);
	zsrc_tag(src, id->tag);
	id->src = src;
	id->hashed = false;
	return 0;
}

/*
 * An identity as the stat fields srcid_same looks at, so that identities are
 * compared by the one predicate.  Every field is 64 bits on the Linux ABIs we
 * build for (asserted), so the conversion loses nothing.
 */
static void id_stat(const struct idxfile_id *id, struct stat *st)
{
	_Static_assert(sizeof(st->st_dev) >= 8 && sizeof(st->st_ino) >= 8 &&
			       sizeof(st->st_size) >= 8 && sizeof(st->st_mtim.tv_sec) >= 8,
		       "struct stat fields narrower than an idxfile_id");
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG;
	st->st_dev = (dev_t)id->dev;
	st->st_ino = (ino_t)id->ino;
	st->st_size = (off_t)id->size;
	st->st_mtim.tv_sec = (time_t)id->mtime_sec;
	st->st_mtim.tv_nsec = (long)id->mtime_nsec;
	st->st_ctim.tv_sec = (time_t)id->ctime_sec;
	st->st_ctim.tv_nsec = (long)id->ctime_nsec;
}

bool idxfile_id_same(const struct idxfile_id *a, const struct idxfile_id *b)
{
	struct stat sa, sb;

	id_stat(a, &sa);
	id_stat(b, &sb);
	return srcid_same(&sa, &sb) && a->fingerprint == b->fingerprint &&
	       strcmp(a->tag, b->tag) == 0;
}

/*
 * "DIR/<content key of id>" + ext.  The key hashes what a rename or a copy
 * (cp -p) keeps: size, mtime and the fingerprint of the first and last
 * 4 KiB, as 28 little-endian bytes, so a renamed source finds its index.
 */
static int name_path(const char *dir, const struct idxfile_id *id, const char *ext, char *out,
		     size_t len)
{
	unsigned char k[28];
	int n;

	if (!dir || !dir[0] || !id)
		return -EINVAL;
	put64(k, id->size);
	put64(k + 8, (uint64_t)id->mtime_sec);
	put32(k + 16, id->mtime_nsec);
	put64(k + 20, id->fingerprint);
	n = snprintf(out, len, "%s/%016" PRIx64 "%s", dir,
		     idxhash_mix64(idxhash_fnv64(IDXHASH_FNV64_INIT, k, sizeof(k))), ext);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int idxfile_path(const char *dir, const struct idxfile_id *id, char *out, size_t len)
{
	return name_path(dir, id, IDXFILE_EXT, out, len);
}

int idxfile_path_ckpt(const char *dir, const struct idxfile_id *id, char *out, size_t len)
{
	return name_path(dir, id, IDXFILE_EXT_CKPT, out, len);
}

/* The file an index of kind k lives in: "<h>" and the kind's suffix. */
static int kind_path(const struct fmt_saved *k, const char *dir, const struct idxfile_id *id,
		     char *out, size_t len)
{
	return name_path(dir, id, k->ext, out, len);
}

/* The key field's length for src and id: the path, and a NUL and the tag if id has one. */
static size_t key_len(const char *src, const struct idxfile_id *id)
{
	return strlen(src) + (id->tag[0] ? 1 + strlen(id->tag) : 0);
}

/* Where the records start in a checked image whose info is in. */
static size_t body_of(const struct idxfile_info *in)
{
	return IF_HDR + key_len(in->src, &in->id);
}

/* Writes the key field for src and id at k (key_len bytes). */
static void put_key(unsigned char *k, const char *src, const struct idxfile_id *id)
{
	size_t n = strlen(src);

	memcpy(k, src, n);
	if (id->tag[0])
		memcpy(k + n + 1, id->tag, strlen(id->tag)); /* after a NUL */
}

/*
 * The key field (plen bytes at k): the source's path, then for a source
 * with a version tag a NUL and the tag.  Fills in->src and in->id.tag.
 * 0 or -EBADMSG.
 */
static int parse_key(const unsigned char *k, uint32_t plen, struct idxfile_info *in,
		     struct zerr *err)
{
	const unsigned char *nul = memchr(k, 0, plen);
	size_t klen = nul ? (size_t)(nul - k) : plen, tlen = nul ? plen - klen - 1 : 0;

	if (klen == 0 || klen >= PATH_MAX)
		return BAD(IF_HDR, "source path of %zu bytes", klen);
	if (nul && (tlen == 0 || tlen >= ZSRC_TAG_MAX || memchr(nul + 1, 0, tlen)))
		return BAD(IF_HDR + klen, "version tag of %zu bytes, or holding a NUL", tlen);
	memcpy(in->src, k, klen);
	in->src[klen] = '\0';
	if (nul && in->src[0] == '/') /* a local file's version is its stat alone */
		return BAD(IF_HDR + klen, "a NUL in the source path");
	memcpy(in->id.tag, k + klen + !!nul, tlen);
	in->id.tag[tlen] = '\0';
	if (!idxfile_keyed(in->src))
		return BAD(IF_HDR, "source path is neither absolute nor a URL");
	return 0;
}

/*
 * The header fields past the length and the source path of an index file
 * of len bytes (len >= IF_MIN_FILE) whose first IF_HDR + IF_KEYMAX bytes, or
 * all len if fewer, are at b: fills *in (but version and file_size).
 * 0 or -EBADMSG.
 */
static int parse_ident(const unsigned char *b, size_t len, struct idxfile_info *in,
		       struct zerr *err)
{
	uint32_t plen;

	in->flags = get32(b + H_FLAGS);
	if (in->flags & ~IDXFILE_F_VERIFIED)
		return BAD(H_FLAGS, "unknown flags %#" PRIx32, in->flags);
	in->kind = get16(b + H_KIND);
	if (!fmt_saved_kind(in->kind))
		return BAD(H_KIND, "unknown kind %" PRIu32, in->kind);
	in->id.dev = get64(b + H_DEV);
	in->id.ino = get64(b + H_INO);
	in->id.size = get64(b + H_SIZE);
	in->id.mtime_sec = (int64_t)get64(b + H_MTIME);
	in->id.mtime_nsec = get32(b + H_NSEC);
	in->id.ctime_sec = (int64_t)get64(b + H_CTIME);
	in->id.ctime_nsec = get32(b + H_CNSEC);
	in->id.fingerprint = get64(b + H_FPRINT);
	in->id.src = NULL;
	in->src_hash = get64(b + H_HASH);
	if (in->id.mtime_nsec >= 1000000000u)
		return BAD(H_NSEC, "mtime nanoseconds %" PRIu32 " out of range", in->id.mtime_nsec);
	if (in->id.ctime_nsec >= 1000000000u)
		return BAD(H_CNSEC, "ctime nanoseconds %" PRIu32 " out of range",
			   in->id.ctime_nsec);
	in->usize = get64(b + H_USIZE);
	in->members = get64(b + H_MEMBERS);
	in->span = get64(b + H_SPAN);
	in->npoints = get64(b + H_NPOINTS);

	/* len >= IF_MIN_FILE, so these subtractions cannot wrap */
	plen = get32(b + H_PATHLEN);
	if (plen == 0 || plen > IF_KEYMAX || plen > len - IF_HDR - IF_CRC - IF_REC)
		return BAD(H_PATHLEN, "path length %" PRIu32 " out of range", plen);
	return parse_key(b + IF_HDR, plen, in, err);
}

/* Validates a whole index file image and fills *in from it.  0, -EBADMSG, or -ENOMEM (kind 3). */
static int check(const unsigned char *b, size_t len, struct idxfile_info *in, struct zerr *err)
{
	uint32_t plen;
	int ret;

	if (len >= sizeof(if_magic) && memcmp(b + H_MAGIC, if_magic, sizeof(if_magic)))
		return BAD(0, "not a zmount index (bad magic)");
	if (len < IF_MIN_FILE)
		return BAD(len, "truncated: %zu bytes", len);
	in->version = get32(b + H_VERSION);
	if (in->version != IDXFILE_VERSION)
		return BAD(H_VERSION, "unsupported version %" PRIu32, in->version);
	in->file_size = get64(b + H_FSIZE);
	if (in->file_size != len)
		return BAD(len, "file is %zu bytes, header says %" PRIu64 " (truncated or padded)",
			   len, in->file_size);
	if (idxhash_crc64(b, len - IF_CRC) != get64(b + len - IF_CRC))
		return BAD(len - IF_CRC, "checksum mismatch");
	ret = parse_ident(b, len, in, err);
	if (ret < 0)
		return ret;
	plen = get32(b + H_PATHLEN);
	return fmt_saved_kind(in->kind)->check(b, len, IF_HDR + plen, in, err);
}

/* The identity fields of the header at b (all but the path). */
static void put_id(unsigned char *b, const struct idxfile_id *id)
{
	put64(b + H_DEV, id->dev);
	put64(b + H_INO, id->ino);
	put64(b + H_SIZE, id->size);
	put64(b + H_MTIME, (uint64_t)id->mtime_sec);
	put32(b + H_NSEC, id->mtime_nsec);
	put64(b + H_CTIME, (uint64_t)id->ctime_sec);
	put32(b + H_CNSEC, id->ctime_nsec);
	put64(b + H_FPRINT, id->fingerprint);
}

/* A zeroed image of n bytes with the fields common to all kinds, and the key field (plen bytes);
 * NULL: no memory. */
static unsigned char *new_image(size_t n, const char *src, size_t plen, const struct idxfile_id *id)
{
	unsigned char *b = calloc(1, n);

	if (!b)
		return NULL;
	memcpy(b + H_MAGIC, if_magic, sizeof(if_magic));
	put32(b + H_VERSION, IDXFILE_VERSION);
	put32(b + H_FLAGS, IDXFILE_F_VERIFIED);
	put64(b + H_FSIZE, n);
	put_id(b, id);
	put32(b + H_PATHLEN, (uint32_t)plen);
	put_key(b + IF_HDR, src, id);
	return b;
}

/*
 * Checks fd's CRC-64 (its last 8 bytes, over the flen - 8 before them),
 * reading IF_PIECE bytes at a time: a file that passes the header's checks
 * and still is not what we wrote costs its reading, not its size in
 * memory.  0, -EBADMSG, -ENOMEM or -errno.
 */
static int crc_ok(int fd, uint64_t flen, struct zerr *err)
{
	uint64_t c = 0, off = 0, end = flen - IF_CRC; /* flen >= IF_MIN_FILE */
	unsigned char *p = malloc(IF_PIECE);
	int ret = 0;

	if (!p)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	while (ret == 0 && off < end) {
		size_t n = end - off < IF_PIECE ? (size_t)(end - off) : IF_PIECE;

		ret = idxlocal_rw(fd, p, n, off, false);
		if (ret == 0) {
			c = idxhash_crc64_more(c, p, n);
			off += n;
		}
	}
	if (ret == 0)
		ret = idxlocal_rw(fd, p, IF_CRC, end, false);
	if (ret == 0 && c != get64(p))
		ret = BAD(end, "checksum mismatch");
	free(p);
	if (ret == -EIO)
		return BAD(off, "file shrank while read, or read error");
	return ret < 0 && ret != -EBADMSG ? zerr_set(err, ret, off, "read failed") : ret;
}

/*
 * The checks of a header alone (h: the first n bytes of a file of flen
 * bytes, n = min(flen, IF_HDR)): the magic, a supported version, the real
 * length, if want_size is not NULL the source size *want_size; the length
 * within the kind's max for the recorded source size and fitting the
 * header's own counts (the kind's fits).  0, -EBADMSG or -ESTALE.
 */
static int check_head(const unsigned char *h, size_t n, uint64_t flen, const uint64_t *want_size,
		      struct zerr *err)
{
	const struct fmt_saved *k;
	uint64_t src_size, span, cap;
	uint32_t version, kind;

	if (n >= sizeof(if_magic) && memcmp(h + H_MAGIC, if_magic, sizeof(if_magic)))
		return BAD(0, "not a zmount index (bad magic)");
	if (flen < IF_MIN_FILE)
		return BAD(flen, "truncated: %" PRIu64 " bytes", flen);
	version = get32(h + H_VERSION);
	if (version != IDXFILE_VERSION)
		return BAD(H_VERSION, "unsupported version %" PRIu32 " (this zmount writes %u)",
			   version, IDXFILE_VERSION);
	if (get64(h + H_FSIZE) != flen)
		return BAD(flen,
			   "file is %" PRIu64 " bytes, header says %" PRIu64
			   " (truncated or padded)",
			   flen, get64(h + H_FSIZE));
	src_size = get64(h + H_SIZE);
	span = get64(h + H_SPAN);
	kind = get16(h + H_KIND);
	k = fmt_saved_kind(kind);
	if (!k)
		return BAD(H_KIND, "unknown kind %" PRIu32, kind);
	if (k->spanned && (span < IF_MIN_SPAN || span > GZDEC_MAX_SPAN))
		return BAD(H_SPAN, "span %" PRIu64 " out of range", span);
	if (want_size && src_size != *want_size)
		return zerr_set(err, -ESTALE, H_SIZE,
				"the source changed since it was indexed "
				"(%" PRIu64 " bytes, now %" PRIu64 ")",
				src_size, *want_size);
	cap = k->max(src_size, span);
	if (flen > cap || flen != (size_t)flen)
		return BAD(flen,
			   "file is %" PRIu64 " bytes, more than an index of a %" PRIu64
			   "-byte source can be (%" PRIu64 ")",
			   flen, src_size, cap);
	return k->fits(h, flen, src_size, span, err);
}

/*
 * Reads index file fd (st: its fstat): the header first (check_head).
 * Then the CRC-64, in bounded pieces (crc_ok).  Only then the whole file
 * into a new buffer (caller frees), validated by check().  0, -EBADMSG,
 * -ESTALE, -ENOMEM or -errno.
 */
static int read_checked(int fd, const struct stat *st, const uint64_t *want_size,
			unsigned char **buf, size_t *len, struct idxfile_info *in, struct zerr *err)
{
	unsigned char h[IF_HDR], *b;
	uint64_t flen = (uint64_t)st->st_size;
	size_t n = flen < IF_HDR ? (size_t)flen : IF_HDR;
	int ret;

	*buf = NULL;
	ret = idxlocal_rw(fd, h, n, 0, false);
	if (ret < 0)
		return ret == -EIO ? BAD(0, "file shrank while read, or read error")
				   : zerr_set(err, ret, 0, "read failed");
	ret = check_head(h, n, flen, want_size, err);
	if (ret == 0)
		ret = crc_ok(fd, flen, err);
	if (ret < 0)
		return ret;
	*len = (size_t)flen;
	b = malloc(*len);
	if (!b)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	ret = idxlocal_rw(fd, b, *len, 0, false);
	if (ret < 0)
		ret = ret == -EIO ? BAD(0, "file shrank while read, or read error")
				  : zerr_set(err, ret, 0, "read failed");
	else
		ret = check(b, *len, in, err);
	if (ret < 0)
		free(b);
	else
		*buf = b;
	return ret;
}

/* The name store's files are named under (idxfile_path's dir); NULL for no store. */
static const char *dir_of(const struct idxstore *store)
{
	return store ? idxstore_name(store) : NULL;
}

/*
 * read_checked's checks on an image already in memory (b, len bytes, as a
 * remote store's get returns it): the header, the CRC-64, then check().
 */
static int mem_checked(const unsigned char *b, size_t len, const uint64_t *want_size,
		       struct idxfile_info *in, struct zerr *err)
{
	int ret = check_head(b, len < IF_HDR ? len : IF_HDR, len, want_size, err);

	if (ret == 0 && idxhash_crc64(b, len - IF_CRC) != get64(b + len - IF_CRC))
		ret = BAD(len - IF_CRC, "checksum mismatch");
	return ret < 0 ? ret : check(b, len, in, err);
}

/*
 * Gets the index file name of kind from dir's store and checks it as
 * read_checked does (the same header, cap, CRC-64 and check(), whatever
 * store it came from).  A local file is read through its fd, from its
 * header on: read_checked caps it there, by the header's own counts.  A
 * remote store returns the whole blob, so it gets the cap of an index of
 * kind for a source of id->size bytes at any span: a larger blob is
 * refused before its body is read.  0 with *buf (caller frees), *len and
 * *in, or -errno with err.
 */
static int fetch_checked(const struct idxstore *store, const char *name, const struct fmt_saved *k,
			 const struct idxfile_id *id, unsigned char **buf, size_t *len,
			 struct idxfile_info *in, struct zerr *err)
{
	const struct idxstore_ops *ops = idxstore_ops_of(store);
	struct stat st;
	int fd, ret;

	*buf = NULL;
	if (ops == &idxlocal_ops) {
		fd = idxlocal_open(idxstore_ctx(store), name, &st, err);
		if (fd < 0)
			return fd;
		ret = read_checked(fd, &st, &id->size, buf, len, in, err);
		close(fd);
		return ret;
	}
	ret = ops->get(idxstore_ctx(store), name, k->max(id->size, IF_MIN_SPAN), buf, len);
	if (ret == -EFBIG)
		return BAD(0, "larger than an index of a %" PRIu64 "-byte source can be", id->size);
	if (ret == -ENOMEM)
		return zerr_set(err, ret, 0, "out of memory");
	if (ret < 0)
		return zerr_set(err, ret, 0, "%s/%s: %s", idxstore_name(store), name,
				strerror(-ret));
	if (ret == 0 && (ret = mem_checked(*buf, *len, &id->size, in, err)) < 0) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

/*
 * Whether the checked image whose info is in may be used for the source at
 * src with identity id (doc/index-format.md, "Source identity"): 0 as
 * recorded (identity, and so ctime, unchanged; path too, else it is a
 * rebind for the path alone); 1 proven by content: another path, inode or
 * ctime (a rename, a copy), but the same size, mtime and fingerprint, and
 * the whole-file hash of id->fd equal to the recorded one.  Else -ESTALE
 * (err says why), -ENOMEM or -errno.
 */
static int bound_to(const struct idxfile_info *in, const char *src, const struct idxfile_id *id,
		    struct zerr *err)
{
	bool here = !strcmp(in->src, src);
	uint64_t h;
	int ret;

	if (idxfile_id_same(&in->id, id))
		return here ? 0 : 1;
	if (in->id.size != id->size || in->id.mtime_sec != id->mtime_sec ||
	    in->id.mtime_nsec != id->mtime_nsec || in->id.fingerprint != id->fingerprint)
		return here ? zerr_set(err, -ESTALE, H_DEV,
				       "the source changed since it was indexed")
			    : zerr_set(err, -ESTALE, IF_HDR, "made for another file: %s", in->src);
	ret = src_hash(id, &h);
	if (ret == -ENOMEM)
		return zerr_set(err, ret, 0, "out of memory");
	if (ret < 0)
		return zerr_set(err, -ESTALE, H_HASH,
				"cannot hash the source to compare it with "
				"%s (%s)",
				in->src, strerror(-ret));
	if (h != in->src_hash)
		return zerr_set(err, -ESTALE, H_HASH,
				"made for %s: the same size, mtime and first "
				"and last 4 KiB, but other bytes",
				in->src);
	return 1;
}

static int save_image(const struct idxstore *store, const struct idxfile_id *id,
		      const struct fmt_saved *k, const unsigned char *b, size_t len,
		      uint64_t *bytes_written);

/*
 * Rebinds the checked image *buf (len bytes; *in its info) to the source
 * at src with identity id, which bound_to has just accepted: the new path
 * and identity (the records follow the path), a new CRC-64, and the file
 * saved again under its name (the same: the key did not change), so that
 * the next load of this source is as recorded, with no hash.  A failed save
 * is ignored: that load hashes again.  On -ENOMEM or a path that does not
 * fit, *buf and *in stay as they were, still usable.
 */
static void rebind(const struct idxstore *store, const char *src, const struct idxfile_id *id,
		   unsigned char **buf, size_t len, struct idxfile_info *in)
{
	size_t body = body_of(in), plen = key_len(src, id), n = len - (body - IF_HDR) + plen;
	struct idxfile_info *ni = malloc(sizeof(*ni));
	unsigned char *b = strlen(src) < PATH_MAX ? calloc(1, n) : NULL;

	if (!b || !ni)
		goto out;
	memcpy(b, *buf, IF_HDR);
	put_key(b + IF_HDR, src, id);
	memcpy(b + IF_HDR + plen, *buf + body, len - IF_CRC - body);
	put_id(b, id);
	put32(b + H_PATHLEN, (uint32_t)plen);
	put64(b + H_FSIZE, n);
	put64(b + n - IF_CRC, idxhash_crc64(b, n - IF_CRC));
	if (check(b, n, ni, NULL) < 0)
		goto out;
	save_image(store, id, fmt_saved_kind(in->kind), b, n, NULL);
	free(*buf);
	*buf = b;
	*in = *ni;
	b = NULL;
out:
	free(b);
	free(ni);
}

/*
 * The part of a load all kinds share: the trusted, fully validated image
 * of the index file of kind for the source at src_abspath with identity id
 * (*buf, caller frees; *in filled), found under id's content key, of that
 * kind, and bound to that source (bound_to; rebound to it if it was proven
 * by content).  Returns 0, or -errno with err as idxfile_load documents
 * (*buf NULL).
 */
static int load_image(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct fmt_saved *k, unsigned char **buf,
		      struct idxfile_info *in, struct zerr *err)
{
	char path[PATH_MAX];
	unsigned char *b = NULL;
	size_t len = 0;
	int ret;

	*buf = NULL;
	ret = idxfile_keyed(src_abspath) ? kind_path(k, dir_of(store), id, path, sizeof(path))
					 : -EINVAL;
	if (ret < 0)
		return zerr_set(err, ret, 0, "bad source path");
	ret = fetch_checked(store, strrchr(path, '/') + 1, k, id, &b, &len, in, err);
	if (ret == 0 && in->kind != k->kind)
		ret = BAD(H_KIND, "a %s index, not a %s one", fmt_saved_kind(in->kind)->name,
			  k->name);
	if (ret == 0)
		ret = bound_to(in, src_abspath, id, err);
	if (ret == 1) {
		rebind(store, src_abspath, id, &b, len, in);
		ret = 0;
	}
	if (ret < 0)
		free(b);
	else
		*buf = b;
	return ret;
}

int idxfile_load_recs(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct fmt_saved *k, uint64_t span_wanted,
		      void *out, struct zerr *err)
{
	struct idxfile_info *in = malloc(sizeof(*in));
	unsigned char *b = NULL;
	int ret;

	ret = in ? load_image(store, src_abspath, id, k, &b, in, err)
		 : zerr_set(err, -ENOMEM, 0, "out of memory");
	if (ret == 0 && span_wanted && span_wanted != in->span)
		ret = zerr_set(err, -ERANGE, H_SPAN, "built with span %" PRIu64 ", not %" PRIu64,
			       in->span, span_wanted);
	if (ret == 0)
		ret = k->get(b, body_of(in), in, out, err);
	free(b);
	free(in);
	return ret;
}

int idxfile_remove_recs(const struct idxstore *store, const char *src_abspath,
			const struct idxfile_id *id, const struct fmt_saved *k)
{
	char path[PATH_MAX];
	struct idxfile_info *in = malloc(sizeof(*in));
	unsigned char *b = NULL;
	size_t len = 0;
	int ret = in ? kind_path(k, dir_of(store), id, path, sizeof(path)) : -ENOMEM;

	if (ret == 0)
		ret = fetch_checked(store, strrchr(path, '/') + 1, k, id, &b, &len, in, NULL);
	if (ret == 0 && (ret = bound_to(in, src_abspath, id, NULL)) == 1)
		ret = 0;
	if (ret == 0)
		ret = idxstore_ops_of(store)->del(idxstore_ctx(store), strrchr(path, '/') + 1);
	free(b);
	free(in);
	return ret;
}

int idxfile_read_header(const char *path, struct idxfile_info *info, struct zerr *err)
{
	unsigned char *b = NULL;
	struct stat st;
	size_t len = 0;
	int fd = idxtrust_open_file(AT_FDCWD, path, false, &st, err), ret;

	if (fd < 0)
		return fd;
	ret = read_checked(fd, &st, NULL, &b, &len, info, err);
	free(b);
	close(fd);
	return ret;
}

/* Writes image b (len bytes, validated, of kind k; borrowed) as the index of id's source in
 * store. */
static int save_image(const struct idxstore *store, const struct idxfile_id *id,
		      const struct fmt_saved *k, const unsigned char *b, size_t len,
		      uint64_t *bytes_written)
{
	char final[PATH_MAX];
	int ret = kind_path(k, dir_of(store), id, final, sizeof(final));

	if (ret == 0)
		ret = idxstore_ops_of(store)->put(idxstore_ctx(store), strrchr(final, '/') + 1, b,
						  len);
	if (ret == 0 && bytes_written)
		*bytes_written = len;
	return ret;
}

/*
 * Puts the whole-file hash of id's source (src_hash: -ESTALE if id->fd is
 * not that version any more) into image b (len bytes, validated, of kind k;
 * freed here), seals it with its CRC-64, and writes it (save_image).
 */
static int seal_save(const struct idxstore *store, const struct idxfile_id *id,
		     const struct fmt_saved *k, unsigned char *b, size_t len,
		     uint64_t *bytes_written)
{
	uint64_t h;
	int ret = src_hash(id, &h);

	if (ret == 0) {
		put64(b + H_HASH, h);
		put64(b + len - IF_CRC, idxhash_crc64(b, len - IF_CRC));
		ret = save_image(store, id, k, b, len, bytes_written);
	}
	free(b);
	return ret;
}

/*
 * Serializes recs, the records of kind k, for the source at src with
 * identity id into a new buffer (caller frees): the header, the key
 * field, the kind's records and the CRC-64; then checks it as load would
 * (check(), and check_head: the cap and the bound of the header's own
 * counts), so that nothing is written that a load would refuse.  Returns
 * 0, -ENAMETOOLONG, -EINVAL (what the kind's size or check() refuses),
 * -EFBIG (larger than a load takes) or -ENOMEM.
 */
static int serialize(const char *src, const struct idxfile_id *id, const struct fmt_saved *k,
		     const void *recs, unsigned char **buf, size_t *len)
{
	size_t plen = strlen(src), n = 0;
	struct idxfile_info in;
	unsigned char *b;
	int ret;

	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	plen = key_len(src, id);
	ret = k->size(id, recs, plen, &n);
	if (ret < 0)
		return ret;
	b = new_image(n, src, plen, id);
	if (!b)
		return -ENOMEM;
	put16(b + H_KIND, k->kind);
	k->put(b, IF_HDR + plen, recs);
	put64(b + n - IF_CRC, idxhash_crc64(b, n - IF_CRC));
	ret = check(b, n, &in, NULL);
	if (ret == 0 && check_head(b, IF_HDR, n, NULL, NULL) < 0)
		ret = -EFBIG;
	if (ret < 0) {
		free(b);
		return ret == -EBADMSG ? -EINVAL : ret;
	}
	*buf = b;
	*len = n;
	return 0;
}

int idxfile_save_recs(const struct idxstore *store, const char *src_abspath,
		      const struct idxfile_id *id, const struct fmt_saved *k, const void *recs,
		      uint64_t *bytes_written)
{
	unsigned char *b = NULL;
	size_t len = 0;
	int ret = idxfile_keyed(src_abspath) ? 0 : -EINVAL;

	if (ret == 0)
		ret = serialize(src_abspath, id, k, recs, &b, &len);
	return ret < 0 ? ret : seal_save(store, id, k, b, len, bytes_written);
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Whether s starts with one of the suffixes (4 bytes each). */
static int is_ext(const char *s)
{
	return !strncmp(s, IDXFILE_EXT, 4) || !strncmp(s, IDXFILE_EXT_CKPT, 4) ||
	       !strncmp(s, IDXFILE_EXT_TAR, 4);
}

/* Whether s (n bytes) is an index file's name: "<16 hex>" and .zmi, .zmc or .zmt. */
static bool is_index_name(const char *s, size_t n)
{
	return n == IF_HEXLEN + 4 && is_hex(s, IF_HEXLEN) && is_ext(s + IF_HEXLEN);
}

/*
 * Whether in's source, gone from its recorded path, sits in the same
 * directory under another name (a logrotate rename, not loaded since): an
 * entry with the recorded device and inode whose bytes bound_to proves.
 * One readdir of that directory; entries opened as prune opens sources.
 */
static bool renamed_nearby(const struct idxfile_info *in)
{
	char dir[PATH_MAX], path[PATH_MAX];
	size_t n = (size_t)(strrchr(in->src, '/') - in->src);
	struct idxfile_id now;
	struct dirent *de;
	struct zsrc *src;
	bool found = false;
	int dfd, fd;
	DIR *d;

	memcpy(dir, in->src, n);
	strcpy(dir + n, n ? "" : "/");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	while (!found && (de = readdir(d))) {
		if ((uint64_t)de->d_ino != in->id.ino ||
		    snprintf(path, sizeof(path), "%s/%s", n ? dir : "", de->d_name) >=
			    (int)sizeof(path))
			continue;
		fd = openat(dirfd(d), de->d_name, IDXTRUST_OPEN);
		if (fd < 0 || zsrc_local(fd, &src) < 0)
			continue;
		found = idxfile_identify(src, &now) == 0 && now.dev == in->id.dev &&
			bound_to(in, path, &now, NULL) >= 0;
		zsrc_put(src);
	}
	closedir(d);
	return found;
}

/* Whether the index file name in dfd must go: 1 yes, 0 keep. */
static int prune_index(int dfd, const char *dir, const char *name)
{
	char want[PATH_MAX];
	struct idxfile_info *in = malloc(sizeof(*in));
	struct idxfile_id now;
	unsigned char *b = NULL;
	struct zsrc *src;
	struct stat st;
	size_t len = 0;
	int ret, fd, stale = 0;

	if (!in)
		return 0;
	/* not ours (-EPERM): kept, as is anything we cannot read */
	ret = fd = idxtrust_open_file(dfd, name, true, &st, NULL);
	if (fd >= 0) {
		ret = read_checked(fd, &st, NULL, &b, &len, in, NULL);
		close(fd);
	}
	free(b);
	if (ret == -EBADMSG) {
		stale = 1;
	} else if (ret == 0) {
		/* misfiled: load would never find it under this name (or kind) */
		if (kind_path(fmt_saved_kind(in->kind), dir, &in->id, want, sizeof(want)) < 0 ||
		    strcmp(strrchr(want, '/') + 1, name)) {
			stale = 1;
		} else if (in->src[0] == '/') { /* a URL's object is not checked: kept */
			fd = open(in->src, IDXTRUST_OPEN);
			if (fd < 0) {
				stale = errno == ENOENT || errno == ENOTDIR || errno == ELOOP;
			} else if (zsrc_local(fd, &src) == 0) {
				ret = idxfile_identify(src, &now);
				/* kept if proven by content too (a copy over it): no rebind */
				stale = ret == -EINVAL ||
					(ret == 0 && bound_to(in, in->src, &now, NULL) == -ESTALE);
				zsrc_put(src);
			}
			if (stale && renamed_nearby(in))
				stale = 0;
		}
	}
	free(in);
	return stale;
}

/* idxlocal_prune's judge: the directory's path is arg. */
static int judge_index(void *arg, int dfd, const char *name)
{
	return prune_index(dfd, arg, name);
}

int idxfile_prune(const struct idxstore *store, unsigned *removed)
{
	const char *dir;

	if (removed)
		*removed = 0;
	if (!store || idxstore_ops_of(store) != &idxlocal_ops)
		return -ENOTSUP; /* a remote store: idxfile_prune_store */
	dir = idxstore_ctx(store);
	return idxlocal_prune(dir, is_index_name, judge_index, (void *)dir, removed);
}

/* An index blob a store listed (idxfile_prune_store). */
struct blob {
	char name[IF_HEXLEN + 5];
	char tag[128]; /* the listing's version tag, "" if none or too long */
	uint64_t size;
};

struct blobs {
	struct blob *v;
	size_t n, cap;
};

static int add_blob(void *arg, const char *name, uint64_t size, const char *tag)
{
	struct blobs *l = arg;
	size_t n = strlen(name);
	struct blob *v;

	if (!is_index_name(name, n))
		return 0; /* not an index's name: not ours */
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		v = realloc(l->v, l->cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
	}
	memcpy(l->v[l->n].name, name, n + 1);
	if (!tag || strlen(tag) >= sizeof(l->v[l->n].tag))
		tag = "";
	strcpy(l->v[l->n].tag, tag);
	l->v[l->n++].size = size;
	return 0;
}

/* Whether now() proves in's source gone (-ENOENT) or of other stat fields: 1 yes, 0 keep. */
static int source_gone(const struct idxfile_info *in, idxfile_now_fn now, void *arg)
{
	char tag[ZSRC_TAG_MAX] = "";
	struct stat was, st;
	int ret = now(arg, in, &st, tag);

	if (ret == -ENOENT)
		return 1;
	if (ret < 0)
		return 0;
	id_stat(&in->id, &was);
	return !srcid_same(&was, &st) || strcmp(tag, in->id.tag) != 0;
}

/* Whether blob b's body fails what a load checks (in: its header): 1 yes, 0 keep. */
static int body_bad(const struct idxstore_ops *ops, void *ctx, const struct blob *b,
		    const struct idxfile_info *in)
{
	struct idxfile_info *full = malloc(sizeof(*full));
	unsigned char *img = NULL;
	size_t len = 0;
	int ret = full ? 0 : -ENOMEM;

	/* the cap of a load: a blob over it is refused unread, as a load refuses it */
	if (ret == 0)
		ret = ops->get(ctx, b->name,
			       fmt_saved_kind(in->kind)->max(in->id.size, IF_MIN_SPAN), &img, &len);
	if (ret == 0)
		ret = mem_checked(img, len, NULL, full, NULL);
	free(img);
	free(full);
	return ret == -EBADMSG || ret == -EFBIG;
}

/*
 * Whether blob b of store (ops, ctx) at url must go: 1 yes, 0 keep.  The
 * header first (one peek), then the source (now), and the body (one get)
 * only for a blob that passed both.
 */
static int prune_blob(const char *url, const struct idxstore_ops *ops, void *ctx,
		      const struct blob *b, idxfile_now_fn now, void *arg)
{
	size_t n = b->size < IF_HDR + IF_KEYMAX ? (size_t)b->size : IF_HDR + IF_KEYMAX;
	struct idxfile_info *in = malloc(sizeof(*in));
	unsigned char *h = malloc(IF_HDR + IF_KEYMAX);
	char want[PATH_MAX];
	ssize_t got;
	int ret, go = 0;

	if (b->size < IF_MIN_FILE) {
		go = 1; /* no index is that short: not read */
		goto out;
	}
	/* the version listed, whose size b->size is: the header is checked against it */
	got = in && h ? ops->peek(ctx, b->name, b->tag[0] ? b->tag : NULL, h, n) : -ENOMEM;
	if (got != (ssize_t)n)
		goto out; /* unreadable, or replaced since the listing: kept */
	ret = check_head(h, IF_HDR, b->size, NULL, NULL);
	if (ret == 0)
		ret = parse_ident(h, (size_t)b->size, in, NULL);
	if (ret < 0)
		go = 1;
	else if (kind_path(fmt_saved_kind(in->kind), url, &in->id, want, sizeof(want)) < 0 ||
		 strcmp(strrchr(want, '/') + 1, b->name))
		go = 1; /* misfiled: a load never finds it under this name */
	else
		go = source_gone(in, now, arg) || body_bad(ops, ctx, b, in);
out:
	free(h);
	free(in);
	return go;
}

int idxfile_prune_store(const struct idxstore *store, idxfile_now_fn now, void *arg,
			unsigned *removed)
{
	const struct idxstore_ops *ops = store ? idxstore_ops_of(store) : NULL;
	void *ctx = store ? idxstore_ctx(store) : NULL;
	struct blobs l = { 0 };
	unsigned count = 0;
	int ret;

	if (removed)
		*removed = 0;
	if (!ops || !ops->list || !ops->peek)
		return -ENOTSUP;
	ret = ops->list(ctx, add_blob, &l);
	for (size_t i = 0; ret == 0 && i < l.n; i++)
		if (prune_blob(idxstore_name(store), ops, ctx, &l.v[i], now, arg) &&
		    ops->del(ctx, l.v[i].name) == 0)
			count++;
	free(l.v);
	if (removed)
		*removed = count;
	return ret;
}

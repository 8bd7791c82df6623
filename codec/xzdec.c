/* SPDX-License-Identifier: MIT */
/*
 * How it works.
 *
 * Index: liblzma's file info decoder parses every Stream Footer, Index,
 * Stream Header and Stream Padding from the end of the file backwards.  It
 * asks for input at arbitrary offsets (LZMA_SEEK_NEEDED), which we serve
 * with pread.  The combined lzma_index it builds is then flattened into a
 * plain array of struct xzdec_block and freed, so callers never see
 * liblzma types and the index can be shared between threads.
 *
 * Cut short or corrupt: a file whose Index cannot be read is called cut
 * short (zerr_cut) when it starts like .xz but does not end like it: no
 * Stream Footer, no Stream Padding at its end, as while xz still writes it.
 *
 * Blocks: each Block is decoded on its own with lzma_block_decoder.  The
 * Block Header is read and reconciled with the Index entry first, and the
 * decoder is given the Index's Compressed and Uncompressed Sizes, so
 * liblzma itself rejects data that disagrees with them.  Output is bounded
 * by the Index's usize as well: we never hand liblzma more output space
 * than the Block has left, and once the last byte is produced we keep
 * feeding input with a one-byte scratch output until LZMA_STREAM_END, so
 * Block Padding and the Check are verified before that last byte is
 * returned (and a Block that would be longer than the Index says fails).
 *
 * A Block cannot refer to data before its own start, so a dictionary
 * larger than the Block's uncompressed size is never used; we shrink it to
 * that size to keep a lying or generous header from costing memory.
 *
 * Memory: a decoder's struct and its dictionary are the same size Block
 * after Block.  Allocations that large are fresh mappings (see main.c), so
 * each new decoder would fault in every page of them again; freed ones are
 * kept in a small stock (struct xzdec_spares, owned by the caller and
 * shared by its decoders) for the next decoder instead.
 */
#include "xzdec.h"
#include "hugemem.h"
#include "src.h"

#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XZDEC_MEMLIMIT (64u << 20) /* for the Index of the whole file */
#define XZDEC_CHUNK    (64u << 10) /* pread size for compressed input */

struct xzdec_dec {
	struct xzdec_block b;
	lzma_stream strm;
	/* the Block decoder keeps a pointer to these until lzma_end */
	lzma_block block;
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	uint64_t in_off; /* file offset of the next pread */
	uint64_t in_end; /* end of the Block: coff + csize */
	uint64_t pos;	 /* uncompressed bytes returned */
	bool done;	 /* LZMA_STREAM_END seen: Padding and Check are good */
	bool failed;
	lzma_allocator alloc;	     /* xz_alloc and xz_free, opaque = this decoder */
	size_t mem;		     /* bytes liblzma holds for this decoder */
	struct xzdec_spares *spares; /* borrowed; NULL: plain malloc and free */
	uint8_t in[XZDEC_CHUNK];
};

#define SPARE_MIN   (64u << 10) /* smaller ones come from malloc's own free lists */
#define SPARE_SLOTS 8
#define SPARE_BYTES (8u << 20)
/*
 * A dictionary this large (2 MiB at xz -1 and -2, more above) is written
 * whole by any Block longer than it: in huge pages, one fault per 2 MiB.
 * A dashboard over the PCP 7 layout mapped 21 fresh ones, 11,000 faults.
 */
#define SPARE_HUGE (1u << 20)

/* Each allocation records its size, which lzma_allocator.free is not told. */
union spare_hdr {
	size_t n;
	max_align_t align;
};

/* Frees h, from malloc or hugemem_alloc by its size. */
static void spare_release(union spare_hdr *h)
{
	if (h && h->n >= SPARE_HUGE)
		hugemem_free(h, sizeof(*h) + h->n);
	else
		free(h);
}

/*
 * A stock of freed buffers for the next decoder (xzdec.h).  Owned by the
 * caller, so two users in one process (two mounts, a tool and a test) never
 * share a lock or a bound.
 */
struct xzdec_spares {
	pthread_mutex_t lock;
	/* Protected by lock. */
	union spare_hdr *slot[SPARE_SLOTS];
	size_t bytes;
};

int xzdec_spares_new(struct xzdec_spares **out)
{
	struct xzdec_spares *sp = calloc(1, sizeof(*sp));

	*out = sp;
	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	return 0;
}

void xzdec_spares_free(struct xzdec_spares *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < SPARE_SLOTS; i++)
		spare_release(sp->slot[i]);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

size_t xzdec_spares_bytes(struct xzdec_spares *sp)
{
	size_t n;

	pthread_mutex_lock(&sp->lock);
	n = sp->bytes;
	pthread_mutex_unlock(&sp->lock);
	return n;
}

/* n bytes, from sp's stock if it holds a buffer of exactly that size (sp may be NULL). */
static void *spare_alloc(struct xzdec_spares *sp, size_t n)
{
	union spare_hdr *h = NULL;

	if (sp && n >= SPARE_MIN) {
		pthread_mutex_lock(&sp->lock);
		for (size_t i = 0; i < SPARE_SLOTS; i++) {
			if (sp->slot[i] && sp->slot[i]->n == n) {
				h = sp->slot[i];
				sp->slot[i] = NULL;
				sp->bytes -= n;
				break;
			}
		}
		pthread_mutex_unlock(&sp->lock);
	}
	if (!h && n <= SIZE_MAX - sizeof(*h))
		h = n >= SPARE_HUGE ? hugemem_alloc(sizeof(*h) + n) : malloc(sizeof(*h) + n);
	if (!h)
		return NULL;
	h->n = n;
	return h + 1;
}

void *xzdec_spares_get(struct xzdec_spares *sp, size_t n)
{
	return spare_alloc(sp, n);
}

/* Frees p (from spare_alloc), or keeps it in sp's stock while that has room. */
static void spare_free(struct xzdec_spares *sp, void *p)
{
	union spare_hdr *h = p ? (union spare_hdr *)p - 1 : NULL;

	if (sp && h && h->n >= SPARE_MIN) {
		pthread_mutex_lock(&sp->lock);
		for (size_t i = 0; i < SPARE_SLOTS && sp->bytes + h->n <= SPARE_BYTES; i++) {
			if (!sp->slot[i]) {
				sp->slot[i] = h;
				sp->bytes += h->n;
				h = NULL;
				break;
			}
		}
		pthread_mutex_unlock(&sp->lock);
	}
	spare_release(h);
}

void xzdec_spares_put(struct xzdec_spares *sp, void *p)
{
	spare_free(sp, p);
}

/* opaque is the decoder: its `mem` counts what liblzma holds, its `spares` lend buffers. */
static void *xz_alloc(void *opaque, size_t nmemb, size_t size)
{
	struct xzdec_dec *d = opaque;
	void *p = nmemb && size > SIZE_MAX / nmemb ? NULL : spare_alloc(d->spares, nmemb * size);

	if (p)
		d->mem += nmemb * size;
	return p;
}

static void xz_free(void *opaque, void *ptr)
{
	struct xzdec_dec *d = opaque;

	if (ptr)
		d->mem -= ((union spare_hdr *)ptr - 1)->n;
	spare_free(d->spares, ptr);
}

static const char *xzdec_ret_name(lzma_ret ret)
{
	switch (ret) {
	case LZMA_MEM_ERROR:
		return "out of memory";
	case LZMA_MEMLIMIT_ERROR:
		return "Index needs more than 64 MiB of memory";
	case LZMA_FORMAT_ERROR:
		return "not an .xz file";
	case LZMA_OPTIONS_ERROR:
		return "unsupported options";
	case LZMA_DATA_ERROR:
		return "compressed data is corrupt";
	case LZMA_BUF_ERROR:
		return "unexpected end of input";
	default:
		return "internal liblzma error";
	}
}

/* Fills idx from the decoded lzma_index li, validating what we rely on. */
static int xzdec_index_fill(struct xzdec_index *idx, const lzma_index *li, uint64_t size,
			    struct zerr *err)
{
	lzma_index_iter it;
	lzma_vli nstreams = lzma_index_stream_count(li);
	lzma_vli nblocks = lzma_index_block_count(li);
	size_t i = 0;

	if (nstreams > UINT32_MAX)
		return zerr_set(err, -EINVAL, size, "too many Streams (%llu)",
				(unsigned long long)nstreams);
	if (nblocks > SIZE_MAX / sizeof(*idx->blocks))
		return zerr_set(err, -ENOMEM, size, "too many Blocks");
	idx->nstreams = (uint32_t)nstreams;
	idx->usize = lzma_index_uncompressed_size(li);
	/*
	 * liblzma caps sizes at LZMA_VLI_MAX, the same number; checked again
	 * because st_size is an off_t and must never come out negative.
	 */
	if (idx->usize > XZDEC_MAX_USIZE)
		return zerr_set(err, -EINVAL, size,
				"uncompressed size %llu is larger than a file can be",
				(unsigned long long)idx->usize);
	idx->csize = size;
	idx->checks = lzma_index_checks(li);

	lzma_index_iter_init(&it, li);
	while (!lzma_index_iter_next(&it, LZMA_INDEX_ITER_STREAM))
		idx->padding += it.stream.padding;

	idx->blocks = calloc(nblocks ? nblocks : 1, sizeof(*idx->blocks));
	if (!idx->blocks)
		return zerr_set(err, -ENOMEM, 0, "out of memory for %llu Blocks",
				(unsigned long long)nblocks);
	lzma_index_iter_rewind(&it);
	while (i < nblocks && !lzma_index_iter_next(&it, LZMA_INDEX_ITER_BLOCK)) {
		struct xzdec_block *b = &idx->blocks[i++];
		uint64_t end;

		b->coff = it.block.compressed_file_offset;
		b->csize = it.block.total_size;
		b->unpadded = it.block.unpadded_size;
		b->uoff = it.block.uncompressed_file_offset;
		b->usize = it.block.uncompressed_size;
		b->stream = (uint32_t)(it.stream.number - 1);
		if (!it.stream.flags)
			return zerr_set(err, -EINVAL, b->coff, "Stream %u has no Stream Flags",
					b->stream);
		b->check = it.stream.flags->check;
		if (__builtin_add_overflow(b->coff, b->csize, &end) || end > size)
			return zerr_set(err, -EINVAL, b->coff, "Block %zu extends past end of file",
					i - 1);
		if (__builtin_add_overflow(b->uoff, b->usize, &end) || end > idx->usize)
			return zerr_set(err, -EINVAL, b->coff,
					"Block %zu uncompressed size overflows", i - 1);
	}
	idx->nblocks = i;
	if (i != nblocks)
		return zerr_set(err, -EINVAL, size, "Index has fewer Blocks than it says");
	return 0;
}

/*
 * The largest Index index_quick reads in one pread (nor more than the
 * memlimit: the raw Index is no larger than liblzma's copy of a valid one);
 * a larger one takes the long way.
 */
#define QUICK_INDEX_MAX (64u << 20)

/*
 * The Index of a file that is one Stream with no Stream Padding (what xz
 * writes), from three exact preads: the Stream Header, the Stream Footer
 * and the Index the Footer points at.  A remote source fetches about 1 KiB
 * for them, where lzma_file_info_decoder's walk (a 64 KiB first read, the
 * last KiB read backwards looking for padding) fetches tens.  NULL for
 * anything else (more Streams, padding, damage, a read error, no memory,
 * over memlimit): the caller then takes the file info decoder, which finds
 * and names the problem.  The caller ends the returned index.
 */
static lzma_index *index_quick(struct zsrc *src, uint64_t size, uint64_t memlimit)
{
	uint8_t head[LZMA_STREAM_HEADER_SIZE], foot[LZMA_STREAM_HEADER_SIZE];
	lzma_stream_flags hf, ff;
	lzma_index *li = NULL;
	uint64_t istart;
	size_t pos = 0;
	uint8_t *buf;

	if (size < 2 * LZMA_STREAM_HEADER_SIZE ||
	    zsrc_pread(src, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    zsrc_pread(src, foot, sizeof(foot), size - sizeof(foot)) != (ssize_t)sizeof(foot) ||
	    lzma_stream_header_decode(&hf, head) != LZMA_OK ||
	    lzma_stream_footer_decode(&ff, foot) != LZMA_OK ||
	    lzma_stream_flags_compare(&hf, &ff) != LZMA_OK || ff.backward_size > QUICK_INDEX_MAX ||
	    (memlimit && ff.backward_size > memlimit) ||
	    ff.backward_size > size - 2 * LZMA_STREAM_HEADER_SIZE)
		return NULL;
	istart = size - sizeof(foot) - ff.backward_size;
	/* Exactly the Index: a remote source sizes its fetch by the hint. */
	zsrc_hint(src, istart, ff.backward_size);
	buf = malloc(ff.backward_size);
	if (buf && zsrc_pread(src, buf, ff.backward_size, istart) == (ssize_t)ff.backward_size &&
	    lzma_index_buffer_decode(&li, &memlimit, NULL, buf, &pos, ff.backward_size) ==
		    LZMA_OK &&
	    (lzma_index_stream_flags(li, &ff) != LZMA_OK || lzma_index_stream_size(li) != size)) {
		lzma_index_end(li, NULL);
		li = NULL;
	}
	free(buf);
	return li;
}

/*
 * Whether a file whose Indexes could not be read is cut short rather than
 * corrupt: it starts with a Stream Header but ends neither with a Stream
 * Footer (whose last bytes are the magic "YZ") nor with Stream Padding.
 * That is a file xz is still writing, or one truncated; a file that ends
 * right, whose Index or Footer fails, is corrupt.  Two small preads, on a
 * failure only: no decoding (a salvage scan says where it ends exactly).
 */
static bool index_cut(struct zsrc *src, uint64_t size)
{
	uint8_t head[LZMA_STREAM_HEADER_SIZE], tail[2];
	lzma_stream_flags flags;

	if (size < LZMA_STREAM_HEADER_SIZE ||
	    zsrc_pread(src, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    lzma_stream_header_decode(&flags, head) != LZMA_OK)
		return false;
	if (size < 2 * LZMA_STREAM_HEADER_SIZE)
		return true;
	if (zsrc_pread(src, tail, sizeof(tail), size - sizeof(tail)) != (ssize_t)sizeof(tail))
		return false;
	return !(tail[0] == 'Y' && tail[1] == 'Z') && !(tail[0] == 0 && tail[1] == 0);
}

/*
 * Runs strm, a file info decoder of memlimit bytes, over src (size bytes)
 * to LZMA_STREAM_END, reading XZDEC_CHUNK bytes at a time into buf and
 * going where it asks to seek.  Returns 0, -E2BIG (the memlimit that
 * max_blocks set was hit), -ENOMEM, -EINVAL (corrupt) or -EIO, err set
 * with where the decoder stopped.
 */
static int index_decode(struct zsrc *src, uint64_t size, lzma_stream *strm, uint8_t *buf,
			uint64_t memlimit, size_t max_blocks, struct zerr *err)
{
	uint64_t off = 0; /* file offset of the next pread */
	lzma_ret lret;
	int ret;

	for (;;) {
		if (strm->avail_in == 0 && off < size) {
			size_t want = size - off < XZDEC_CHUNK ? size - off : XZDEC_CHUNK;
			ssize_t n = zsrc_pread(src, buf, want, off);

			if (n <= 0)
				return zerr_set(err, -EIO, off, "%s",
						n ? strerror((int)-n)
						  : "file is shorter than expected");
			strm->next_in = buf;
			strm->avail_in = (size_t)n;
			off += (uint64_t)n;
		}
		lret = lzma_code(strm, LZMA_RUN);
		if (lret == LZMA_STREAM_END)
			return 0;
		if (lret == LZMA_SEEK_NEEDED) {
			off = strm->seek_pos;
			strm->avail_in = 0;
			continue;
		}
		if (lret == LZMA_OK)
			continue;
		if (lret == LZMA_MEMLIMIT_ERROR && memlimit < XZDEC_MEMLIMIT)
			return zerr_set(err, -E2BIG, off - strm->avail_in,
					"its Index holds more than %zu Blocks", max_blocks);
		ret = lret == LZMA_MEM_ERROR || lret == LZMA_MEMLIMIT_ERROR ? -ENOMEM : -EINVAL;
		/* where the decoder stopped, for the log line */
		return zerr_set(err, ret, off - strm->avail_in, "%s",
				lret == LZMA_DATA_ERROR ? "Stream or Index is corrupt"
							: xzdec_ret_name(lret));
	}
}

int xzdec_index_read(struct zsrc *src, uint64_t size, struct xzdec_index **out, struct zerr *err)
{
	return xzdec_index_read_max(src, size, 0, out, err);
}

int xzdec_index_read_max(struct zsrc *src, uint64_t size, size_t max_blocks,
			 struct xzdec_index **out, struct zerr *err)
{
	uint64_t memlimit = XZDEC_MEMLIMIT;
	lzma_stream strm = LZMA_STREAM_INIT;
	lzma_index *li = NULL;
	struct xzdec_index *idx = NULL;
	uint8_t *buf = NULL;
	lzma_ret lret;
	int ret;

	*out = NULL;
	buf = malloc(XZDEC_CHUNK);
	if (!buf)
		return zerr_set(err, -ENOMEM, 0, "out of memory");
	/* liblzma's own Index of max_blocks records, in one Stream, is what we allow it. */
	if (max_blocks && lzma_index_memusage(1, max_blocks) < memlimit)
		memlimit = lzma_index_memusage(1, max_blocks);
	li = index_quick(src, size, memlimit);
	lret = li ? LZMA_STREAM_END : lzma_file_info_decoder(&strm, &li, memlimit, size);
	if (lret != LZMA_OK && lret != LZMA_STREAM_END) {
		ret = zerr_set(err, lret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL, 0, "%s",
			       xzdec_ret_name(lret));
		goto out;
	}
	if (lret != LZMA_STREAM_END) {
		ret = index_decode(src, size, &strm, buf, memlimit, max_blocks, err);
		if (ret)
			goto out;
	}

	if (max_blocks && lzma_index_block_count(li) > max_blocks) {
		ret = zerr_set(err, -E2BIG, 0, "its Index holds %llu Blocks, more than %zu",
			       (unsigned long long)lzma_index_block_count(li), max_blocks);
		goto out;
	}
	idx = calloc(1, sizeof(*idx));
	if (!idx) {
		ret = zerr_set(err, -ENOMEM, 0, "out of memory");
		goto out;
	}
	ret = xzdec_index_fill(idx, li, size, err);
	if (ret == 0) {
		*out = idx;
		idx = NULL;
	}
out:
	if (ret == -EINVAL && !idx && index_cut(src, size))
		ret = zerr_cut(err, -EINVAL, size, "before its Stream Footer");
	xzdec_index_free(idx);
	lzma_index_end(li, NULL);
	lzma_end(&strm);
	free(buf);
	return ret;
}

void xzdec_index_free(struct xzdec_index *idx)
{
	if (!idx)
		return;
	free(idx->blocks);
	free(idx);
}

/* Reads the Block Header from src and sets up d->block and d->filters from it. */
static int xzdec_header_read(struct xzdec_dec *d, struct zsrc *src, struct zerr *err)
{
	const struct xzdec_block *b = &d->b;
	uint8_t hdr[LZMA_BLOCK_HEADER_SIZE_MAX];
	lzma_ret lret;
	ssize_t n;

	n = zsrc_pread(src, hdr, 1, b->coff);
	if (n <= 0)
		return zerr_set(err, -EIO, b->coff, "reading Block Header: %s",
				n ? strerror((int)-n) : "unexpected end of file");
	if (hdr[0] == 0)
		return zerr_set(err, -EIO, b->coff, "Index found where a Block Header should be");
	d->block.version = 1;
	d->block.check = (lzma_check)b->check;
	d->block.header_size = lzma_block_header_size_decode(hdr[0]);
	d->block.filters = d->filters;
	if (d->block.header_size >= b->csize)
		return zerr_set(err, -EIO, b->coff, "Block Header disagrees with Index");
	n = zsrc_pread(src, hdr, d->block.header_size, b->coff);
	if (n < (ssize_t)d->block.header_size)
		return zerr_set(err, -EIO, b->coff, "reading Block Header: %s",
				n < 0 ? strerror((int)-n) : "unexpected end of file");

	lret = lzma_block_header_decode(&d->block, NULL, hdr);
	if (lret == LZMA_OPTIONS_ERROR)
		return zerr_set(err, -ENOTSUP, b->coff, "unsupported filter or Block option");
	if (lret == LZMA_MEM_ERROR)
		return zerr_set(err, -ENOMEM, b->coff, "out of memory");
	if (lret != LZMA_OK)
		return zerr_set(err, -EIO, b->coff, "Block Header is corrupt");
	/* from here on d->filters holds options that xzdec_dec_close frees */

	/* A cut Block's end is not in the file: only its header's own sizes bind it. */
	if (b->cut)
		return 0;
	if (lzma_block_compressed_size(&d->block, b->unpadded) != LZMA_OK)
		return zerr_set(err, -EIO, b->coff, "Block Header disagrees with Index");
	if (d->block.uncompressed_size != LZMA_VLI_UNKNOWN &&
	    d->block.uncompressed_size != b->usize)
		return zerr_set(err, -EIO, b->coff, "Block Header disagrees with Index");
	d->block.uncompressed_size = b->usize;
	return 0;
}

/*
 * A Block never looks back past its own start: cap the dictionary.
 * Returns the largest dictionary left, which the caller holds to
 * XZDEC_DICT_MAX.
 */
static uint32_t xzdec_dict_cap(lzma_filter *filters, uint64_t usize)
{
	uint32_t cap = UINT32_MAX, most = 0;

	if (usize < LZMA_DICT_SIZE_MIN)
		cap = LZMA_DICT_SIZE_MIN;
	else if (usize < UINT32_MAX)
		cap = (uint32_t)usize;

	for (size_t i = 0; filters[i].id != LZMA_VLI_UNKNOWN; i++) {
		lzma_options_lzma *opt = filters[i].options;

		if ((filters[i].id == LZMA_FILTER_LZMA2 || filters[i].id == LZMA_FILTER_LZMA1 ||
		     filters[i].id == LZMA_FILTER_LZMA1EXT) &&
		    opt) {
			if (opt->dict_size > cap)
				opt->dict_size = cap;
			if (opt->dict_size > most)
				most = opt->dict_size;
		}
	}
	return most;
}

/* The message both callers give for a dictionary over XZDEC_DICT_MAX. */
static int dict_refused(struct zerr *err, int code, uint64_t coff, uint32_t dict)
{
	return zerr_set(err, code, coff,
			"Block needs a %u MiB dictionary, more than the %u MiB zmount decodes "
			"(recompress with a smaller one: xz -9 uses 64 MiB)",
			(unsigned)(((uint64_t)dict + (1u << 20) - 1) >> 20), XZDEC_DICT_MAX >> 20);
}

int xzdec_dec_open(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		   struct xzdec_dec **out, struct zerr *err)
{
	struct xzdec_dec *d;
	uint32_t dict;
	lzma_ret lret;
	int ret;

	*out = NULL;
	d = spare_alloc(sp, sizeof(*d));
	if (!d)
		return zerr_set(err, -ENOMEM, b->coff, "out of memory");
	memset(d, 0, offsetof(struct xzdec_dec, in));
	d->spares = sp;
	d->b = *b;
	d->strm = (lzma_stream)LZMA_STREAM_INIT;
	d->alloc = (lzma_allocator){ xz_alloc, xz_free, d };
	d->strm.allocator = &d->alloc;
	d->filters[0].id = LZMA_VLI_UNKNOWN;
	if (__builtin_add_overflow(b->coff, b->csize, &d->in_end)) {
		ret = zerr_set(err, -EIO, b->coff, "Block size overflows");
		goto fail;
	}
	if (b->usize / XZDEC_MAX_RATIO > b->csize) {
		ret = zerr_set(err, -EIO, b->coff,
			       "Index claims %llu bytes from %llu compressed bytes",
			       (unsigned long long)b->usize, (unsigned long long)b->csize);
		goto fail;
	}
	ret = xzdec_header_read(d, src, err);
	if (ret)
		goto fail;
	d->in_off = b->coff + d->block.header_size;

	dict = xzdec_dict_cap(d->filters, b->usize);
	if (dict > XZDEC_DICT_MAX) {
		ret = dict_refused(err, -ENOTSUP, b->coff, dict);
		goto fail;
	}
	/*
	 * An unsupported Check ID is accepted here and its Check field is
	 * skipped unverified, as xz does with a warning.
	 */
	lret = lzma_block_decoder(&d->strm, &d->block);
	lzma_filters_free(d->filters, NULL);
	if (lret != LZMA_OK) {
		ret = -EIO;
		if (lret == LZMA_MEM_ERROR)
			ret = -ENOMEM;
		else if (lret == LZMA_OPTIONS_ERROR)
			ret = -ENOTSUP;
		ret = zerr_set(err, ret, b->coff, "starting Block decoder: %s",
			       xzdec_ret_name(lret));
		goto fail;
	}
	*out = d;
	return 0;
fail:
	xzdec_dec_close(d);
	return ret;
}

/* File offset of the first compressed byte liblzma has not consumed. */
static uint64_t xzdec_coff(const struct xzdec_dec *d)
{
	return d->in_off - d->strm.avail_in;
}

/* One lzma_code call, refilling input from src first; 0 or negative errno. */
static int xzdec_step(struct xzdec_dec *d, struct zsrc *src, struct zerr *err)
{
	lzma_ret lret;

	if (d->strm.avail_in == 0 && d->in_off < d->in_end) {
		uint64_t left = d->in_end - d->in_off;
		ssize_t n =
			zsrc_pread(src, d->in, left < XZDEC_CHUNK ? left : XZDEC_CHUNK, d->in_off);

		if (n <= 0)
			return zerr_set(err, -EIO, d->in_off, "reading Block data: %s",
					n ? strerror((int)-n) : "unexpected end of file");
		d->strm.next_in = d->in;
		d->strm.avail_in = (size_t)n;
		d->in_off += (uint64_t)n;
	}
	lret = lzma_code(&d->strm, LZMA_RUN);
	if (lret == LZMA_OK)
		return 0;
	if (lret == LZMA_STREAM_END) {
		d->done = true;
		return 0;
	}
	if (lret == LZMA_MEM_ERROR)
		return zerr_set(err, -ENOMEM, xzdec_coff(d), "out of memory");
	/*
	 * Sizes and Padding are verified before the Check is read, so an
	 * error once the whole Check has been consumed is about the Check.
	 */
	if (lret == LZMA_DATA_ERROR && lzma_check_is_supported(d->block.check) &&
	    lzma_check_size(d->block.check) > 0 && xzdec_coff(d) == d->in_end)
		return zerr_set(err, -EIO, xzdec_coff(d), "Check mismatch (%s)",
				xzdec_check_name(d->b.check));
	if (lret == LZMA_BUF_ERROR)
		return zerr_set(err, -EIO, xzdec_coff(d), "Block data is truncated");
	return zerr_set(err, -EIO, xzdec_coff(d), "%s", xzdec_ret_name(lret));
}

ssize_t xzdec_dec_read(struct xzdec_dec *d, struct zsrc *src, void *buf, size_t len,
		       struct zerr *err)
{
	uint64_t left = d->b.usize - d->pos;
	size_t want = len < left ? len : (size_t)left;
	uint8_t scratch;
	int ret = 0;

	if (d->failed)
		return zerr_set(err, -EIO, xzdec_coff(d), "decoder has already failed");
	if (want > SSIZE_MAX)
		want = SSIZE_MAX;
	if (want == 0 && (left > 0 || d->done))
		return 0;

	d->strm.next_out = buf;
	d->strm.avail_out = want;
	while (d->strm.avail_out > 0) {
		ret = xzdec_step(d, src, err);
		if (ret)
			goto fail;
		if (d->done && d->strm.avail_out > 0) {
			ret = zerr_set(err, -EIO, xzdec_coff(d),
				       "Block is smaller than the Index says");
			goto fail;
		}
	}
	/*
	 * The last byte is returned only after Padding and Check pass; a cut
	 * Block has neither in the file, and ends at the bytes decoded.
	 */
	while (want == left && !d->done && !d->b.cut) {
		d->strm.next_out = &scratch;
		d->strm.avail_out = 1;
		ret = xzdec_step(d, src, err);
		if (ret)
			goto fail;
		if (d->strm.avail_out == 0) {
			ret = zerr_set(err, -EIO, xzdec_coff(d),
				       "Block is larger than the Index says");
			goto fail;
		}
	}
	d->pos += want;
	return (ssize_t)want;
fail:
	d->failed = true;
	return ret;
}

int xzdec_block_verify(struct zsrc *src, const struct xzdec_block *b, struct xzdec_spares *sp,
		       struct zerr *err)
{
	struct xzdec_dec *d;
	uint8_t buf[4096];
	ssize_t n;
	int ret = xzdec_dec_open(src, b, sp, &d, err);

	if (ret < 0)
		return ret;
	/* The call that returns the last byte (for an empty Block: the first) checks the end. */
	do
		n = xzdec_dec_read(d, src, buf, sizeof(buf), err);
	while (n > 0 && d->pos < d->b.usize);
	xzdec_dec_close(d);
	return n < 0 ? (int)n : 0;
}

uint64_t xzdec_dec_tell(const struct xzdec_dec *d)
{
	return d->pos;
}

void xzdec_dec_close(struct xzdec_dec *d)
{
	if (!d)
		return;
	lzma_end(&d->strm);
	lzma_filters_free(d->filters, NULL);
	spare_free(d->spares, d);
}

const char *xzdec_check_name(uint32_t check)
{
	/* Check IDs are 4 bits: a fixed table keeps this thread-safe */
	static const char *const names[16] = {
		"None",	      "CRC32",	    "Unknown-2",  "Unknown-3",	"CRC64",   "Unknown-5",
		"Unknown-6",  "Unknown-7",  "Unknown-8",  "Unknown-9",	"SHA-256", "Unknown-11",
		"Unknown-12", "Unknown-13", "Unknown-14", "Unknown-15",
	};

	return check < 16 ? names[check] : "Unknown";
}

size_t xzdec_dec_memusage(const struct xzdec_dec *d)
{
	return sizeof(*d) + d->mem;
}

/*
 * Salvage: a forward scan from the first Stream Header, for files whose
 * Index or Stream Footer cannot be read (a truncated file) or whose Blocks
 * may be damaged.  Every Block is decoded once, into a scratch buffer,
 * with sizes taken from the data itself; its Check is verified by
 * liblzma's Block decoder.  Each Stream's Index is checked against the
 * Blocks seen with lzma_index_hash, which needs a fixed amount of memory
 * whatever the Index says.  The first thing that fails ends the scan.
 *
 * A file that ends inside a Block (xz still writing it, or a truncation)
 * keeps that Block's start as a last, cut Block: its usize is what the
 * decoder gave from the bytes there, so decoding it again from its header
 * (xzdec_dec_read stops at usize, skipping the end checks) gives the same
 * bytes, which are what xz -dc prints before it says "Unexpected end of
 * input".  liblzma's output for a given input does not depend on how the
 * input is split into calls, so the two decodes agree.
 */

/* What a scan step returns besides 0 and -errno. */
#define SCAN_DAMAGE 1 /* found damage: err says what and where */
#define SCAN_END    2 /* a Stream ended, and so did the file */

struct xz_scan {
	struct zsrc *src;
	uint64_t size;
	struct zerr *err;
	struct xzdec_index *idx;
	size_t cap;   /* blocks allocated in idx */
	uint8_t *in;  /* XZDEC_CHUNK bytes of input */
	uint8_t *out; /* XZDEC_CHUNK bytes of scratch output */
};

/*
 * Reads exactly len bytes at off: 0, SCAN_DAMAGE (err set) when the file
 * ends first, or -EIO.
 */
static int scan_read(struct xz_scan *s, void *buf, size_t len, uint64_t off, const char *what)
{
	size_t got = 0;

	if (off > s->size || len > s->size - off)
		return zerr_cut(s->err, SCAN_DAMAGE, s->size, "inside %s", what);
	while (got < len) {
		ssize_t n = zsrc_pread(s->src, (uint8_t *)buf + got, len - got, off + got);

		if (n < 0)
			return zerr_set(s->err, -EIO, off + got, "reading %s: %s", what,
					strerror((int)-n));
		if (n == 0) /* shorter than the size we were given: it shrank */
			return zerr_cut(s->err, SCAN_DAMAGE, off + got, "inside %s", what);
		got += (size_t)n;
	}
	return 0;
}

static int scan_add(struct xz_scan *s, const struct xzdec_block *b)
{
	struct xzdec_index *idx = s->idx;

	if (idx->nblocks >= XZDEC_SCAN_MAX_BLOCKS)
		return zerr_set(s->err, SCAN_DAMAGE, b->coff,
				"more than %zu Blocks; the rest is not scanned",
				(size_t)XZDEC_SCAN_MAX_BLOCKS);
	if (idx->nblocks == s->cap) {
		size_t cap = s->cap ? s->cap : 64, bytes;
		void *p;

		if (__builtin_mul_overflow(cap, 2, &cap) ||
		    __builtin_mul_overflow(cap, sizeof(*b), &bytes))
			return zerr_set(s->err, -ENOMEM, b->coff, "too many Blocks");
		p = realloc(idx->blocks, bytes);
		if (!p)
			return zerr_set(s->err, -ENOMEM, b->coff, "out of memory");
		idx->blocks = p;
		s->cap = cap;
	}
	idx->blocks[idx->nblocks++] = *b;
	idx->usize += b->usize;
	return 0;
}

/*
 * Reads and decodes the Block Header at b->coff into *block (filters:
 * LZMA_FILTERS_MAX + 1 slots for its filter chain) and starts strm on
 * the Block, with a dictionary no larger than the Block's output can
 * use.  Returns 0, SCAN_DAMAGE (err set), -ENOMEM or -EIO; the filters'
 * options are freed here either way.
 */
static int scan_block_start(struct xz_scan *s, struct xzdec_block *b, lzma_block *block,
			    lzma_filter *filters, lzma_stream *strm)
{
	uint8_t hdr[LZMA_BLOCK_HEADER_SIZE_MAX];
	uint64_t in_off, bound;
	uint32_t dict;
	lzma_ret lret;
	int ret;

	filters[0].id = LZMA_VLI_UNKNOWN;
	ret = scan_read(s, hdr, 1, b->coff, "a Block Header");
	if (ret)
		return ret;
	block->version = 1;
	block->check = (lzma_check)b->check;
	block->header_size = lzma_block_header_size_decode(hdr[0]);
	block->filters = filters;
	ret = scan_read(s, hdr, block->header_size, b->coff, "a Block Header");
	if (ret)
		return ret;
	lret = lzma_block_header_decode(block, NULL, hdr);
	if (lret == LZMA_MEM_ERROR)
		return zerr_set(s->err, -ENOMEM, b->coff, "out of memory");
	if (lret == LZMA_OPTIONS_ERROR)
		return zerr_set(s->err, SCAN_DAMAGE, b->coff, "unsupported filter or Block option");
	if (lret != LZMA_OK)
		return zerr_set(s->err, SCAN_DAMAGE, b->coff, "Block Header is corrupt");
	/* from here on filters holds options to free */

	/*
	 * The dictionary never needs to exceed the Block's output, and that is
	 * at most XZDEC_MAX_RATIO times its compressed bytes (which the rest
	 * of the file bounds when the header does not say).
	 */
	in_off = b->coff + block->header_size;
	bound = block->compressed_size != LZMA_VLI_UNKNOWN ? block->compressed_size
							   : s->size - in_off;
	bound = bound > UINT64_MAX / XZDEC_MAX_RATIO ? UINT64_MAX : bound * XZDEC_MAX_RATIO;
	if (block->uncompressed_size != LZMA_VLI_UNKNOWN && block->uncompressed_size < bound)
		bound = block->uncompressed_size;
	dict = xzdec_dict_cap(filters, bound);
	if (lzma_raw_decoder_memusage(filters) == UINT64_MAX)
		ret = zerr_set(s->err, SCAN_DAMAGE, b->coff, "unsupported filter chain");
	else if (dict > XZDEC_DICT_MAX)
		ret = dict_refused(s->err, SCAN_DAMAGE, b->coff, dict);
	else if ((lret = lzma_block_decoder(strm, block)) != LZMA_OK)
		ret = zerr_set(s->err, lret == LZMA_MEM_ERROR ? -ENOMEM : SCAN_DAMAGE, b->coff,
			       "starting Block decoder: %s", xzdec_ret_name(lret));
	lzma_filters_free(filters, NULL);
	return ret;
}

/*
 * Refills strm's input from *in_off when it is used up and the file has
 * not ended (*eof): a read of 0 bytes sets *eof, since at the end the
 * decoder may still have output to give.  Returns 0 or -EIO (err set).
 */
static int scan_feed(struct xz_scan *s, lzma_stream *strm, uint64_t *in_off, bool *eof)
{
	uint64_t left = s->size - *in_off;
	ssize_t n;

	if (strm->avail_in || *eof)
		return 0;
	n = left ? zsrc_pread(s->src, s->in, left < XZDEC_CHUNK ? left : XZDEC_CHUNK, *in_off) : 0;
	if (n < 0)
		return zerr_set(s->err, -EIO, *in_off, "reading Block data: %s", strerror((int)-n));
	*eof = n == 0;
	strm->next_in = s->in;
	strm->avail_in = (size_t)n;
	*in_off += (uint64_t)n;
	return 0;
}

/*
 * What lret, neither LZMA_OK nor LZMA_STREAM_END, says of the Block being
 * decoded, whose input ends at in_pos: SCAN_DAMAGE or -ENOMEM, err set.
 */
static int scan_block_error(struct xz_scan *s, lzma_ret lret, uint64_t in_pos)
{
	const char *why = xzdec_ret_name(lret);

	if (lret == LZMA_MEM_ERROR)
		return zerr_set(s->err, -ENOMEM, in_pos, "out of memory");
	if (lret == LZMA_BUF_ERROR)
		why = "file ends inside it";
	else if (lret == LZMA_DATA_ERROR)
		why = "corrupt data, Padding or Check";
	return zerr_set(s->err, SCAN_DAMAGE, in_pos, "Block %zu: %s", s->idx->nblocks, why);
}

/*
 * Runs strm, started on Block b, to the Block's end, reading from *in_off
 * on (moved past what was read) and counting its output in *usize.  A
 * file that ends inside the Block after all the output its bytes give
 * makes b the last, cut Block: what xz -dc prints of it.  Returns 0 (the
 * decoder reached LZMA_STREAM_END), SCAN_DAMAGE (err set), -ENOMEM or -EIO.
 */
static int scan_block_run(struct xz_scan *s, struct xzdec_block *b, lzma_stream *strm,
			  uint64_t *in_off, uint64_t *usize)
{
	/* room left for this Block's output in the whole file's */
	uint64_t room = XZDEC_MAX_USIZE - s->idx->usize;
	bool eof = false;
	lzma_ret lret;
	int ret;

	for (;;) {
		size_t made;

		ret = scan_feed(s, strm, in_off, &eof);
		if (ret)
			return ret;
		strm->next_out = s->out;
		strm->avail_out = XZDEC_CHUNK;
		lret = lzma_code(strm, LZMA_RUN);
		made = XZDEC_CHUNK - strm->avail_out;
		*usize += made;
		if (*usize > room)
			return zerr_set(s->err, SCAN_DAMAGE, *in_off - strm->avail_in,
					"uncompressed size is larger than a file can be");
		if (lret == LZMA_STREAM_END)
			return 0;
		if ((lret == LZMA_OK || lret == LZMA_BUF_ERROR) && eof && strm->avail_in == 0 &&
		    made == 0) {
			b->usize = *usize;
			b->csize = s->size - b->coff;
			b->unpadded = 0;
			b->cut = 1;
			return zerr_cut(s->err, SCAN_DAMAGE, s->size, "inside Block %zu",
					s->idx->nblocks);
		}
		if (lret != LZMA_OK)
			return scan_block_error(s, lret, *in_off - strm->avail_in);
	}
}

/*
 * Decodes the Block whose header starts at b->coff to its end, verifying
 * its Check, and fills in the rest of *b.  Returns 0, SCAN_DAMAGE (err
 * set), -ENOMEM or -EIO.
 */
static int scan_block(struct xz_scan *s, struct xzdec_block *b)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block block = { 0 };
	lzma_stream strm = LZMA_STREAM_INIT;
	uint64_t in_off, usize = 0;
	int ret = scan_block_start(s, b, &block, filters, &strm);

	in_off = b->coff + block.header_size;
	if (ret == 0)
		ret = scan_block_run(s, b, &strm, &in_off, &usize);
	if (ret)
		goto out;
	b->unpadded = lzma_block_unpadded_size(&block);
	b->csize = lzma_block_total_size(&block);
	b->usize = usize;
	/* the decoder stops exactly at the Block's end */
	if (b->csize == 0 || b->coff + b->csize != in_off - strm.avail_in ||
	    block.uncompressed_size != usize)
		ret = zerr_set(s->err, SCAN_DAMAGE, b->coff, "Block %zu: inconsistent sizes",
			       s->idx->nblocks);
out:
	lzma_end(&strm);
	return ret;
}

/*
 * Reads the Index at off and checks it against the Blocks given to hash.
 * Returns 0 with *len its size, SCAN_DAMAGE (err set), or -EIO.
 */
static int scan_index(struct xz_scan *s, lzma_index_hash *hash, uint64_t off, uint64_t *len)
{
	uint64_t pos = off;

	for (;;) {
		size_t in_pos = 0, want = XZDEC_CHUNK;
		ssize_t n;
		lzma_ret lret;

		if (pos >= s->size)
			return zerr_cut(s->err, SCAN_DAMAGE, pos, "inside an Index");
		if (want > s->size - pos)
			want = (size_t)(s->size - pos);
		n = zsrc_pread(s->src, s->in, want, pos);
		if (n < 0)
			return zerr_set(s->err, -EIO, pos, "reading the Index: %s",
					strerror((int)-n));
		if (n == 0)
			return zerr_cut(s->err, SCAN_DAMAGE, pos, "inside an Index");
		lret = lzma_index_hash_decode(hash, s->in, &in_pos, (size_t)n);
		pos += in_pos;
		if (lret == LZMA_STREAM_END)
			break;
		if (lret != LZMA_OK)
			return zerr_set(s->err, SCAN_DAMAGE, pos,
					"Index is corrupt or disagrees with the Blocks");
	}
	*len = lzma_index_hash_size(hash);
	if (*len != pos - off)
		return zerr_set(s->err, SCAN_DAMAGE, off, "Index size is inconsistent");
	return 0;
}

/*
 * Counts the zero bytes at off.  Returns 0 with *pad the count and *end
 * whether they reach the end of the file, or -EIO.
 */
static int scan_padding(struct xz_scan *s, uint64_t off, uint64_t *pad, bool *end)
{
	*pad = 0;
	for (;;) {
		uint64_t pos = off + *pad;
		size_t want = XZDEC_CHUNK;
		ssize_t n;

		if (pos >= s->size) {
			*end = true;
			return 0;
		}
		if (want > s->size - pos)
			want = (size_t)(s->size - pos);
		n = zsrc_pread(s->src, s->in, want, pos);
		if (n < 0)
			return zerr_set(s->err, -EIO, pos, "reading Stream Padding: %s",
					strerror((int)-n));
		if (n == 0) {
			*end = true;
			return 0;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (s->in[i]) {
				*end = false;
				return 0;
			}
			(*pad)++;
		}
	}
}

/*
 * Scans the Blocks of Stream number idx->nstreams - 1 (check: its Check
 * type) from *off, each appended to hash and added to the index, and
 * moves *off to its Index Indicator.  Returns 0, SCAN_DAMAGE (err set),
 * -ENOMEM or -EIO.
 */
static int scan_blocks(struct xz_scan *s, lzma_index_hash *hash, lzma_check check, uint64_t *off)
{
	struct xzdec_index *idx = s->idx;
	uint32_t stream = idx->nstreams - 1;
	int ret;

	for (;;) {
		struct xzdec_block b = {
			.coff = *off, .uoff = idx->usize, .stream = stream, .check = check
		};
		uint8_t first;

		ret = scan_read(s, &first, 1, *off, "a Stream, before its Index");
		if (ret)
			return ret;
		if (first == 0) /* the Index Indicator */
			return 0;
		ret = scan_block(s, &b);
		/* a cut Block with bytes: xz -dc prints them, so they are kept */
		if (ret == SCAN_DAMAGE && b.cut && b.usize > 0) {
			struct zerr cut = *s->err;

			ret = scan_add(s, &b);
			if (ret)
				return ret;
			*s->err = cut;
			return SCAN_DAMAGE;
		}
		if (ret)
			return ret;
		if (lzma_index_hash_append(hash, b.unpadded, b.usize) != LZMA_OK)
			return zerr_set(s->err, SCAN_DAMAGE, b.coff,
					"too many Blocks in one Stream");
		ret = scan_add(s, &b);
		if (ret)
			return ret;
		*off += b.csize;
	}
}

/*
 * Scans the Stream whose header is at *off and moves *off past it and its
 * Stream Padding.  Returns 0 (another Stream follows), SCAN_END (the file
 * ends there), SCAN_DAMAGE (err set), -ENOMEM or -EIO.
 */
static int scan_stream(struct xz_scan *s, lzma_index_hash **hash, uint64_t *off)
{
	struct xzdec_index *idx = s->idx;
	uint8_t buf[LZMA_STREAM_HEADER_SIZE];
	lzma_stream_flags hflags, fflags;
	uint32_t stream = idx->nstreams;
	uint64_t ilen = 0, pad = 0;
	bool end = false;
	lzma_ret lret;
	int ret;

	ret = scan_read(s, buf, sizeof(buf), *off, "a Stream Header");
	if (ret)
		return ret;
	lret = lzma_stream_header_decode(&hflags, buf);
	if (lret == LZMA_FORMAT_ERROR)
		return zerr_set(s->err, SCAN_DAMAGE, *off, "%s",
				stream ? "garbage after Stream Padding" : "not an .xz file");
	if (lret == LZMA_OPTIONS_ERROR)
		return zerr_set(s->err, SCAN_DAMAGE, *off,
				"reserved Stream Flags (a newer format?)");
	if (lret != LZMA_OK)
		return zerr_set(s->err, SCAN_DAMAGE, *off, "Stream Header is corrupt");
	idx->nstreams++;
	idx->checks |= 1u << hflags.check;
	*off += sizeof(buf);

	*hash = lzma_index_hash_init(*hash, NULL);
	if (!*hash)
		return zerr_set(s->err, -ENOMEM, *off, "out of memory");
	ret = scan_blocks(s, *hash, hflags.check, off);
	if (ret)
		return ret;
	ret = scan_index(s, *hash, *off, &ilen);
	if (ret)
		return ret;
	*off += ilen;
	ret = scan_read(s, buf, sizeof(buf), *off, "a Stream Footer");
	if (ret)
		return ret;
	if (lzma_stream_footer_decode(&fflags, buf) != LZMA_OK)
		return zerr_set(s->err, SCAN_DAMAGE, *off, "Stream Footer is corrupt");
	if (lzma_stream_flags_compare(&hflags, &fflags) != LZMA_OK)
		return zerr_set(s->err, SCAN_DAMAGE, *off,
				"Stream Footer disagrees with the Stream Header");
	if (fflags.backward_size != ilen)
		return zerr_set(s->err, SCAN_DAMAGE, *off,
				"Backward Size disagrees with the Index");
	*off += sizeof(buf);
	ret = scan_padding(s, *off, &pad, &end);
	if (ret)
		return ret;
	if (pad % 4)
		return zerr_set(s->err, SCAN_DAMAGE, *off + pad,
				"Stream Padding is not a multiple of four bytes");
	idx->padding += pad;
	*off += pad;
	return end ? SCAN_END : 0;
}

int xzdec_index_scan(struct zsrc *src, uint64_t size, struct xzdec_index **out, struct zerr *err)
{
	struct zerr own = { 0 };
	struct xz_scan s = { .src = src, .size = size, .err = err ? err : &own };
	lzma_index_hash *hash = NULL;
	uint64_t off = 0;
	int ret;

	*out = NULL;
	if (size > (uint64_t)INT64_MAX)
		return zerr_set(s.err, -EINVAL, 0, "file too large");
	s.idx = calloc(1, sizeof(*s.idx));
	s.in = malloc(XZDEC_CHUNK);
	s.out = malloc(XZDEC_CHUNK);
	if (!s.idx || !s.in || !s.out) {
		ret = zerr_set(s.err, -ENOMEM, 0, "out of memory");
		goto out;
	}
	s.idx->csize = size;
	do
		ret = scan_stream(&s, &hash, &off);
	while (ret == 0);
	if (ret == SCAN_DAMAGE && s.idx->nstreams == 0)
		ret = -EINVAL; /* no Stream Header: not .xz, nothing to salvage */
	if (ret == SCAN_DAMAGE) {
		s.idx->salvaged = 1;
		s.idx->damage_coff = s.err->coff;
		ret = 0;
	}
	if (ret == SCAN_END)
		ret = 0;
	if (ret == 0) {
		if (s.idx->nblocks == 0) {
			/* callers index blocks[] without looking at nblocks first */
			free(s.idx->blocks);
			s.idx->blocks = calloc(1, sizeof(*s.idx->blocks));
			if (!s.idx->blocks) {
				ret = zerr_set(s.err, -ENOMEM, 0, "out of memory");
				goto out;
			}
		}
		*out = s.idx;
		s.idx = NULL;
	}
out:
	lzma_index_hash_end(hash, NULL);
	xzdec_index_free(s.idx);
	free(s.in);
	free(s.out);
	return ret;
}

bool xzdec_magic(const void *head, size_t n)
{
	static const unsigned char magic[6] = { 0xFD, '7', 'z', 'X', 'Z', 0x00 };

	return n >= sizeof(magic) && memcmp(head, magic, sizeof(magic)) == 0;
}

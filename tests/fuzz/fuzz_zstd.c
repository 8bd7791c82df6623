/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for codec/zstddec: the input is a whole .zst file.
 *
 * How it works.  The input goes into a memfd (zstddec only preads from
 * fds).  zstddec_index_read walks it with an 8 MiB window limit; the index's
 * promises are checked (frames in file order, inside the file, not
 * overlapping, uoff tiling the output while sizes are known, no usize above
 * what the frame's blocks can hold, counts that match the frames).  Then
 * every frame is decoded on its own with zstddec_dec_open/zstddec_dec_read
 * in odd-sized chunks (1 to 65521 bytes, the order derived from the input),
 * each read landing at the very end of a heap buffer, so one byte written
 * past the requested length is an ASan report.  Frames without a size are
 * measured (zstddec_measure) and settled when their blocks cannot produce
 * more than the output budget.
 *
 * zstddec_sniff must call a file that starts with a zstd frame zstd.
 *
 * Then the first frames are decoded again under entries that lie the way a
 * seek table or a stale index can: a different usize or csize.  A frame
 * that decoded whole under its own entry must not decode whole under any
 * other.
 *
 * Besides sanitizer reports, the harness aborts when a result breaks
 * zstddec.h: error codes outside the listed ones, *out not NULL on error,
 * no reason given, a flagged frame that opens, a read returning other than
 * min(len, remaining) for a known size (or 0 < n <= len before the end for
 * an unknown one), a frame that ends short of its size without an error.
 *
 * Bounded work per input: at most MAX_FRAMES frames, MAX_OUT decoded bytes
 * and MAX_CALLS reads, whatever the headers claim.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "zstddec.h"

#define MAX_FRAMES 64
#define MAX_OUT	   (4u << 20)
#define MAX_CALLS  4096
#define BUF_CAP	   65536u
#define FORGED	   4 /* frames decoded again under forged entries */
#define WINDOW_MAX (8u << 20)

static const size_t chunks[] = { 1, 3, 7, 31, 127, 509, 4093, 65521 };

static void check_index(const struct zstddec_index *idx, uint64_t size)
{
	uint64_t coff = 0, uoff = 0;
	size_t unknown = 0, dict = 0, big = 0, ck = 0;

	FUZZ_CHECK(idx->csize == size, "csize %llu != file size %llu",
		   (unsigned long long)idx->csize, (unsigned long long)size);
	FUZZ_CHECK(idx->nframes == 0 || idx->frames, "frames missing");
	FUZZ_CHECK(idx->seek <= ZSTDDEC_SEEK_IGNORED, "seek state %d", (int)idx->seek);
	FUZZ_CHECK((idx->seek == ZSTDDEC_SEEK_IGNORED) == (idx->seek_reason[0] != '\0'),
		   "seek reason given iff ignored");
	for (size_t i = 0; i < idx->nframes; i++) {
		const struct zstddec_frame *f = &idx->frames[i];

		FUZZ_CHECK(f->coff >= coff, "frame %zu starts before the previous one ends", i);
		FUZZ_CHECK(f->csize <= size && f->coff <= size - f->csize,
			   "frame %zu extends past end of file", i);
		FUZZ_CHECK(f->csize >= (uint64_t)f->hsize + 3 * f->nblocks,
			   "frame %zu smaller than its headers", i);
		FUZZ_CHECK(f->hsize >= 6 && f->hsize <= 18, "frame %zu: hsize %u", i, f->hsize);
		FUZZ_CHECK(f->nblocks >= 1, "frame %zu has no block", i);
		FUZZ_CHECK(f->uoff == uoff, "frame %zu: uoff %llu, expected %llu", i,
			   (unsigned long long)f->uoff, (unsigned long long)uoff);
		if (f->usize == ZSTDDEC_UNKNOWN) {
			FUZZ_CHECK(f->usize_src == ZSTDDEC_SRC_NONE, "unknown size with a source");
			unknown++;
			uoff = ZSTDDEC_UNKNOWN;
		} else {
			FUZZ_CHECK(f->usize_src != ZSTDDEC_SRC_NONE, "known size without a source");
			FUZZ_CHECK(f->usize / ZSTDDEC_BLOCK_MAX <= f->nblocks,
				   "frame %zu: usize %llu from %u blocks", i,
				   (unsigned long long)f->usize, f->nblocks);
			if (uoff != ZSTDDEC_UNKNOWN)
				uoff += f->usize;
		}
		FUZZ_CHECK(!(f->flags & ZSTDDEC_F_DICT) == !f->dict_id, "dict flag vs dict_id");
		FUZZ_CHECK(!(f->flags & ZSTDDEC_F_BIGWIN) == (f->window <= idx->window_max),
			   "bigwin flag vs window");
		dict += !!(f->flags & ZSTDDEC_F_DICT);
		big += !!(f->flags & ZSTDDEC_F_BIGWIN);
		ck += f->checksum;
		coff = f->coff + f->csize;
	}
	FUZZ_CHECK(uoff == idx->usize, "frames sum to %llu, usize says %llu",
		   (unsigned long long)uoff, (unsigned long long)idx->usize);
	FUZZ_CHECK(unknown == idx->nunknown && dict == idx->ndict && big == idx->nbigwin &&
			   ck == idx->nchecksum,
		   "counts disagree with the frames");
}

/*
 * Decodes frame f (its entry possibly forged) to its end, its first error or
 * the end of the budget.  Returns 0 if it decoded whole, 1 if the budget ran
 * out or the frame is flagged, or the negative errno it failed with.
 */
static int decode_frame(struct zsrc *src, const struct zstddec_frame *f, unsigned char *buf,
			uint64_t *state, uint64_t *budget, unsigned *calls)
{
	struct zstddec_dec *d = (struct zstddec_dec *)&d; /* must be overwritten */
	struct zerr err = { 0 };
	uint64_t got = 0;
	size_t k = (size_t)fuzz_mix(state);
	bool known = f->usize != ZSTDDEC_UNKNOWN;
	ssize_t n;
	int ret;

	ret = zstddec_dec_open(f, &d, &err);
	if (ret < 0) {
		FUZZ_CHECK(d == NULL, "dec_open failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -ENOTSUP || ret == -ENOMEM, "dec_open returned %d", ret);
		FUZZ_CHECK(ret != -ENOTSUP || f->flags, "dec_open refused an unflagged frame");
		FUZZ_CHECK(err.msg[0], "dec_open failed (%d) without a reason", ret);
		return ret == -ENOTSUP ? 1 : ret;
	}
	FUZZ_CHECK(!f->flags, "a flagged frame opened");
	FUZZ_CHECK(zstddec_dec_tell(d) == 0, "a fresh decoder is not at 0");
	for (;;) {
		size_t want = chunks[k++ % (sizeof(chunks) / sizeof(chunks[0]))];
		uint64_t left = known ? f->usize - got : UINT64_MAX;

		if (*budget == 0 || *calls >= MAX_CALLS) {
			ret = 1;
			break;
		}
		(*calls)++;
		if (want > *budget)
			want = (size_t)*budget;
		err.msg[0] = '\0';
		n = zstddec_dec_read(d, src, buf + BUF_CAP - want, want, &err);
		if (n < 0) {
			FUZZ_CHECK(n == -EIO || n == -ENOMEM, "dec_read returned %zd", n);
			FUZZ_CHECK(err.msg[0], "dec_read failed (%zd) without a reason", n);
			n = zstddec_dec_read(d, src, buf, 1, &err);
			FUZZ_CHECK(n < 0, "a failed decoder returned %zd", n);
			ret = -EIO;
			break;
		}
		if (n == 0) {
			FUZZ_CHECK(!known || got == f->usize,
				   "dec_read returned 0 after %llu of %llu bytes",
				   (unsigned long long)got, (unsigned long long)f->usize);
			n = zstddec_dec_read(d, src, buf, 1, &err);
			FUZZ_CHECK(n == 0, "dec_read after the end returned %zd", n);
			ret = 0;
			break;
		}
		if (known)
			FUZZ_CHECK((uint64_t)n == (want < left ? want : left),
				   "dec_read returned %zd for min(%zu, %llu)", n, want,
				   (unsigned long long)left);
		else
			FUZZ_CHECK((size_t)n <= want, "dec_read returned %zd for %zu", n, want);
		got += (uint64_t)n;
		*budget -= (uint64_t)n;
		FUZZ_CHECK(zstddec_dec_tell(d) == got, "dec_tell %llu != %llu",
			   (unsigned long long)zstddec_dec_tell(d), (unsigned long long)got);
	}
	zstddec_dec_close(d);
	return ret;
}

static void run(const uint8_t *data, size_t size)
{
	struct zstddec_index *idx = (struct zstddec_index *)&idx; /* must be overwritten */
	struct zerr err = { 0 };
	uint64_t state = fuzz_seed(data, size), budget = MAX_OUT;
	unsigned calls = 0;
	int whole[FORGED] = { 0 };
	unsigned char *buf;
	struct zsrc *src = fuzz_src(data, size);
	int ret;

	ret = zstddec_index_read(src, size, WINDOW_MAX, &idx, &err);
	{
		/* the scan (a listing's probe) keeps nothing but gives the same verdict */
		struct zstddec_scan sc;
		struct zerr serr = { 0 };
		int sret = zstddec_scan(src, size, WINDOW_MAX, ZSTDDEC_MAX_FRAMES, &sc, &serr);

		FUZZ_CHECK(sret == ret || ret == -ENOMEM, "scan says %d, index_read %d", sret, ret);
		FUZZ_CHECK(ret < 0 ||
				   (sc.nframes == idx->nframes && sc.ndict == idx->ndict &&
				    sc.nbigwin == idx->nbigwin && sc.nskippable == idx->nskippable),
			   "scan counts differ from index_read's");
	}
	if (ret < 0) {
		FUZZ_CHECK(idx == NULL, "index_read failed (%d) but *out is set", ret);
		FUZZ_CHECK(ret == -EINVAL || ret == -E2BIG || ret == -ENOMEM || ret == -EIO,
			   "index_read returned %d, not listed in zstddec.h", ret);
		FUZZ_CHECK(err.msg[0], "index_read failed (%d) without a reason", ret);
		FUZZ_CHECK(err.coff <= size, "error offset %llu past the end",
			   (unsigned long long)err.coff);
		zsrc_put(src);
		return;
	}
	FUZZ_CHECK(ret == 0 && idx, "index_read returned %d", ret);
	check_index(idx, size);
	FUZZ_CHECK(idx->nframes == 0 || idx->frames[0].coff != 0 || zstddec_sniff(src),
		   "a file starting with a zstd frame does not sniff as zstd");

	/* frames without a size: measured when their blocks fit the budget */
	for (size_t i = 0; i < idx->nframes && i < MAX_FRAMES; i++) {
		const struct zstddec_frame *f = &idx->frames[i];
		uint64_t u = ZSTDDEC_UNKNOWN;

		if (f->usize != ZSTDDEC_UNKNOWN || f->flags ||
		    (uint64_t)f->nblocks * ZSTDDEC_BLOCK_MAX > MAX_OUT)
			continue;
		err.msg[0] = '\0';
		ret = zstddec_measure(src, f, &u, &err);
		if (ret < 0) {
			FUZZ_CHECK(ret == -EIO || ret == -ENOMEM, "measure returned %d", ret);
			FUZZ_CHECK(u == ZSTDDEC_UNKNOWN, "measure failed but set usize");
			FUZZ_CHECK(err.msg[0], "measure failed without a reason");
			continue;
		}
		FUZZ_CHECK(zstddec_index_settle(idx, i, u) == 0, "a measured size was refused");
		FUZZ_CHECK(idx->frames[i].usize_src == ZSTDDEC_SRC_MEASURED, "settle: source");
		check_index(idx, size);
	}

	buf = malloc(BUF_CAP);
	FUZZ_CHECK(buf, "out of memory");
	for (size_t i = 0; i < idx->nframes && i < MAX_FRAMES; i++) {
		ret = decode_frame(src, &idx->frames[i], buf, &state, &budget, &calls);
		if (i < FORGED)
			whole[i] = ret == 0 && idx->frames[i].usize != ZSTDDEC_UNKNOWN;
	}

	for (size_t i = 0; i < idx->nframes && i < FORGED; i++) {
		struct zstddec_frame f = idx->frames[i];
		uint64_t r = fuzz_mix(&state);

		if (f.usize == ZSTDDEC_UNKNOWN)
			continue;
		switch (r % 3) {
		case 0:
			f.usize += 1 + (r >> 8) % 4096;
			break;
		case 1:
			if (f.usize == 0)
				continue;
			f.usize -= 1 + (r >> 8) % f.usize;
			break;
		default:
			if ((r >> 8) % 2 && f.coff + f.csize < size)
				f.csize++;
			else if (f.csize > 1)
				f.csize--;
			else
				continue;
			break;
		}
		budget = MAX_OUT;
		ret = decode_frame(src, &f, buf, &state, &budget, &calls);
		FUZZ_CHECK(ret != 0 || !whole[i],
			   "frame %zu decoded whole under a forged entry (usize %llu, csize %llu;"
			   " the walk says %llu, %llu)",
			   i, (unsigned long long)f.usize, (unsigned long long)f.csize,
			   (unsigned long long)idx->frames[i].usize,
			   (unsigned long long)idx->frames[i].csize);
	}
	free(buf);
	zstddec_index_free(idx);
	zsrc_put(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size);
	return 0;
}

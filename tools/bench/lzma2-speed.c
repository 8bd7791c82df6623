/* lzma2-speed: codec/lzma2dec against liblzma's raw LZMA2 decoder, same input.
 *   lzma2-speed FILE DICT [RUNS]
 * FILE is raw LZMA2 data (xz --format=raw --lzma2=preset=6,dict=DICT), DICT
 * its dictionary size in bytes.  Decodes it RUNS times (default 5) with each
 * decoder, alternating, into a 1 MiB buffer; checks that both give the same
 * bytes; prints every run and the medians in MB/s of output (per CPU second:
 * the times are the thread's CPU time) and the ratio of the times.
 * Build: cc -O2 -Icodec tools/bench/lzma2-speed.c codec/lzma2dec*.c codec/zerr.c -llzma */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "lzma2dec.h"

#define OUT (1u << 20)

struct mem {
	const uint8_t *p;
	size_t n;
};

static ssize_t pull(void *opaque, uint64_t coff, void *buf, size_t len)
{
	const struct mem *m = opaque;

	if (coff >= m->n)
		return 0;
	if (len > m->n - coff)
		len = m->n - coff;
	memcpy(buf, m->p + coff, len);
	return (ssize_t)len;
}

/* CPU time, not wall time: the ratio must hold on a shared, busy machine too. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* FNV-1a over the output, so the two decoders can be compared without keeping it. */
static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001B3ull;
	return h;
}

static double run_ours(struct mem *m, uint32_t dict, uint8_t *out, uint64_t *total, uint64_t *h)
{
	struct lzma2dec *d;
	struct zerr err = { 0 };
	double t = now();
	ssize_t n;

	if (lzma2dec_new(dict, UINT64_MAX, pull, m, &d) < 0)
		exit(1);
	*total = 0;
	while ((n = lzma2dec_read(d, out, OUT, &err)) > 0) {
		*total += (uint64_t)n;
		if (h)
			*h = fnv(*h, out, (size_t)n);
	}
	if (n < 0) {
		fprintf(stderr, "lzma2dec: %s\n", err.msg);
		exit(1);
	}
	lzma2dec_free(d);
	return now() - t;
}

static double run_lzma(struct mem *m, uint32_t dict, uint8_t *out, uint64_t *total, uint64_t *h)
{
	lzma_options_lzma opt = { .dict_size = dict };
	lzma_filter f[2] = { { LZMA_FILTER_LZMA2, &opt }, { LZMA_VLI_UNKNOWN, NULL } };
	lzma_stream s = LZMA_STREAM_INIT;
	double t = now();
	lzma_ret r;

	if (lzma_raw_decoder(&s, f) != LZMA_OK)
		exit(1);
	s.next_in = m->p;
	s.avail_in = m->n;
	*total = 0;
	do {
		s.next_out = out;
		s.avail_out = OUT;
		r = lzma_code(&s, LZMA_RUN);
		*total += OUT - s.avail_out;
		if (h)
			*h = fnv(*h, out, OUT - s.avail_out);
	} while (r == LZMA_OK);
	if (r != LZMA_STREAM_END) {
		fprintf(stderr, "liblzma: error %d\n", r);
		exit(1);
	}
	lzma_end(&s);
	return now() - t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct mem m;
	struct stat st;
	uint8_t *out = malloc(OUT);
	uint64_t t1, t2, h1 = 0xCBF29CE484222325ull, h2 = h1;
	double a[64], b[64];
	int runs, fd;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE DICT [RUNS]\n", argv[0]);
		return 2;
	}
	runs = argc > 3 ? atoi(argv[3]) : 5;
	if (runs < 1 || runs > 64)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return perror(argv[1]), 1;
	m.n = (size_t)st.st_size;
	m.p = mmap(NULL, m.n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (m.p == MAP_FAILED)
		return perror("mmap"), 1;
	/* one checked pass each, then the timed ones */
	run_ours(&m, (uint32_t)strtoul(argv[2], NULL, 0), out, &t1, &h1);
	run_lzma(&m, (uint32_t)strtoul(argv[2], NULL, 0), out, &t2, &h2);
	if (t1 != t2 || h1 != h2) {
		fprintf(stderr, "outputs differ: %llu vs %llu bytes\n", (unsigned long long)t1,
			(unsigned long long)t2);
		return 1;
	}
	for (int i = 0; i < runs; i++) {
		a[i] = run_ours(&m, (uint32_t)strtoul(argv[2], NULL, 0), out, &t1, NULL);
		b[i] = run_lzma(&m, (uint32_t)strtoul(argv[2], NULL, 0), out, &t2, NULL);
		printf("run %d: lzma2dec %.1f MB/s, liblzma %.1f MB/s\n", i, t1 / a[i] / 1e6,
		       t2 / b[i] / 1e6);
	}
	qsort(a, runs, sizeof(a[0]), cmp);
	qsort(b, runs, sizeof(b[0]), cmp);
	printf("median of %d: lzma2dec %.3f s (%.1f MB/s), liblzma %.3f s (%.1f MB/s), "
	       "time ratio %.3f\n",
	       runs, a[runs / 2], t1 / a[runs / 2] / 1e6, b[runs / 2], t2 / b[runs / 2] / 1e6,
	       a[runs / 2] / b[runs / 2]);
	return 0;
}

/* xzckpt-bench: checkpoints inside one xz Block (codec/xzckpt), measured.
 *   xzckpt-bench FILE.xz SPAN [SPAN...]
 * For the file's largest Block and each SPAN (bytes; K/M suffixes), runs
 * xzckpt_build once (output discarded, blobs kept in memory) and prints its
 * wall and CPU time, the checkpoints' total size as a share of the file,
 * the dense and kept window bytes, and the build's memory; then opens every
 * checkpoint, reads 4 KiB, and prints the median and worst open+read time
 * (warm page cache; wall and thread CPU time).  Compare the build time with `time xz -dc FILE
 * >/dev/null`.  Built with the tree (tools/CMakeLists.txt), so it keeps up
 * with the codec API: build/tools/xzckpt-bench. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xzckpt.h"

struct blob {
	uint64_t uoff;
	size_t len;
	void *p;
};

struct keep {
	struct blob *b;
	size_t n, cap;
};

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tcpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int on_out(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

static int on_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	struct keep *k = arg;

	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 64;
		k->b = realloc(k->b, k->cap * sizeof(*k->b));
		if (!k->b)
			return -1;
	}
	k->b[k->n].uoff = uoff;
	k->b[k->n].len = len;
	k->b[k->n].p = malloc(len);
	if (!k->b[k->n].p)
		return -1;
	memcpy(k->b[k->n++].p, blob, len);
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint64_t size_arg(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	return *end == 'K' ? v << 10 : *end == 'M' ? v << 20 : v;
}

static int bench(struct zsrc *fd, const struct xzdec_block *b, uint64_t fsize, uint64_t span)
{
	struct keep k = { 0 };
	struct xzckpt_sink s = { on_out, on_point, &k };
	struct xzckpt_stats st;
	struct zerr err = { 0 };
	double w0 = wall(), c0 = cpu(), *t, *tc;
	static char buf[4096];
	int ret = xzckpt_build(fd, b, span, &s, &st, &err);

	if (ret) {
		fprintf(stderr, "build: %d %s\n", ret, err.msg);
		return 1;
	}
	printf("span %llu KiB: build %.2f s wall %.2f s cpu; %llu points, blobs %llu bytes = "
	       "%.2f%% of the .xz (%.1f KiB each); window dense %llu MiB, kept %llu KiB "
	       "(%.2f%%), raw payload %llu KiB, runs %llu; build memory %.1f MiB\n",
	       (unsigned long long)(span >> 10), wall() - w0, cpu() - c0,
	       (unsigned long long)st.points, (unsigned long long)st.blob_bytes,
	       100.0 * st.blob_bytes / fsize, st.points ? st.blob_bytes / 1024.0 / st.points : 0,
	       (unsigned long long)(st.window_bytes_dense >> 20),
	       (unsigned long long)(st.window_bytes_kept >> 10),
	       st.window_bytes_dense ? 100.0 * st.window_bytes_kept / st.window_bytes_dense : 0,
	       (unsigned long long)(st.raw_bytes >> 10), (unsigned long long)st.runs,
	       st.build_mem / 1048576.0);
	t = calloc(k.n + 1, sizeof(*t));
	tc = calloc(k.n + 1, sizeof(*tc));
	for (size_t i = 0; i < k.n; i++) {
		struct xzckpt_dec *d;
		double t0 = wall(), tc0 = tcpu();
		ssize_t n;

		if (xzckpt_dec_open(fd, b, NULL, k.b[i].p, k.b[i].len, &d, &err) < 0) {
			fprintf(stderr, "open %zu: %s\n", i, err.msg);
			return 1;
		}
		n = xzckpt_dec_read(d, fd, buf, sizeof(buf), &err);
		t[i] = wall() - t0;
		tc[i] = tcpu() - tc0;
		if (n <= 0) {
			fprintf(stderr, "read %zu: %zd %s\n", i, n, err.msg);
			return 1;
		}
		xzckpt_dec_close(d);
		free(k.b[i].p);
	}
	qsort(t, k.n, sizeof(*t), cmp_d);
	qsort(tc, k.n, sizeof(*tc), cmp_d);
	if (k.n)
		printf("  open + 4 KiB read: median %.2f ms wall, %.2f ms cpu; worst %.2f ms wall, "
		       "%.2f ms cpu (%zu points)\n",
		       t[k.n / 2] * 1e3, tc[k.n / 2] * 1e3, t[k.n - 1] * 1e3, tc[k.n - 1] * 1e3,
		       k.n);
	free(t);
	free(tc);
	free(k.b);
	return 0;
}

int main(int argc, char **argv)
{
	struct xzdec_index *idx;
	struct zerr err = { 0 };
	const struct xzdec_block *b;
	struct stat sb;
	struct zsrc *src = NULL;
	int fd, rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: xzckpt-bench FILE.xz SPAN [SPAN...]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || zsrc_local(fd, &src) < 0 ||
	    xzdec_index_read(src, sb.st_size, &idx, &err) < 0) {
		fprintf(stderr, "%s: cannot read its index %s\n", argv[1], err.msg);
		return 1;
	}
	b = &idx->blocks[0];
	for (size_t i = 1; i < idx->nblocks; i++)
		if (idx->blocks[i].usize > b->usize)
			b = &idx->blocks[i];
	printf("%s: %zu Block(s), the largest %llu bytes out of %llu\n", argv[1], idx->nblocks,
	       (unsigned long long)b->usize, (unsigned long long)b->csize);
	for (int i = 2; i < argc && rc == 0; i++)
		rc = bench(src, b, (uint64_t)sb.st_size, size_arg(argv[i]));
	xzdec_index_free(idx);
	zsrc_put(src);
	return rc;
}

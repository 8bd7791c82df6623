/* zstdckpt-bench: what checkpoint blobs cost on one .zst file (issue 19, item 3).
 *   zstdckpt-bench FILE.zst SPAN [SPAN...]     (SPAN in bytes, or with a K/M/G suffix)
 * For the first frame of FILE, per SPAN: zstdckpt_build_blobs (output thrown
 * away, blobs kept in memory) against `zstd -dc FILE >/dev/null` and against
 * zstdckpt_build (the same pass without blobs), 3 runs each, medians of
 * wall and CPU time (the CPU ratio is the steadier figure
 * on a shared machine); the blobs' total as % of the file, their window
 * bytes kept against dense; then, from every blob, zstdckpt_blob_open plus
 * the first 4 KiB ("open"), and open plus a 4 KiB read at a random offset
 * in the span after it ("random"), medians.  Not run by CI.
 * Built with the tree (tools/CMakeLists.txt), so it keeps up with the codec
 * API: build/tools/zstdckpt-bench. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zstdckpt.h"
#include "zstddec.h"
#include "src.h"

#define RUNS 3

extern char **environ;

struct blob {
	uint64_t uoff;
	size_t len;
	uint8_t *p;
};

struct keep {
	struct blob *b;
	size_t n, cap;
	uint64_t out; /* the frame's bytes, which its header need not give */
};

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n ? v[n / 2] : 0;
}

static int ckpt_none(void *arg, const struct zstdckpt *ck, const uint8_t *w1, size_t n1,
		     const uint8_t *w2, size_t n2)
{
	(void)arg, (void)ck, (void)w1, (void)n1, (void)w2, (void)n2;
	return 0;
}

static int sink_out(void *arg, const void *buf, size_t len)
{
	(void)buf;
	((struct keep *)arg)->out += len;
	return 0;
}

static int sink_point(void *arg, uint64_t uoff, const void *blob, size_t len)
{
	struct keep *k = arg;

	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 64;
		k->b = realloc(k->b, k->cap * sizeof(*k->b));
	}
	k->b[k->n].p = malloc(len);
	if (!k->b || !k->b[k->n].p)
		return -ENOMEM;
	memcpy(k->b[k->n].p, blob, len);
	k->b[k->n].len = len;
	k->b[k->n].uoff = uoff;
	k->n++;
	return 0;
}

static void keep_free(struct keep *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->b[i].p);
	free(k->b);
	memset(k, 0, sizeof(*k));
}

/* `zstd -dc path >/dev/null`: wall and CPU (user + sys) seconds. */
static int zstd_dc(const char *path, double *wall, double *cpu)
{
	char *argv[] = { "zstd", "-q", "-dc", "--", (char *)path, NULL };
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	int st;
	pid_t pid;
	double t0 = now(CLOCK_MONOTONIC);

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "zstd", &fa, NULL, argv, environ))
		return -1;
	posix_spawn_file_actions_destroy(&fa);
	if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	*wall = now(CLOCK_MONOTONIC) - t0;
	*cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
	return 0;
}

/* Opens blob b (NULL: the frame's start), decodes to `at` and reads 4 KiB: seconds. */
static double resume(const struct zstddec_frame *f, struct zsrc *fd, const struct blob *b,
		     uint64_t at)
{
	static uint8_t buf[1u << 16];
	struct zstdckpt_dec *d;
	struct zerr e = { 0 };
	double t0 = now(CLOCK_MONOTONIC);
	uint64_t pos = b->uoff;

	if (zstdckpt_blob_open(f, b->p, b->len, &d, &e)) {
		fprintf(stderr, "open at %llu: %s\n", (unsigned long long)b->uoff, e.msg);
		exit(1);
	}
	while (pos < at) {
		size_t want = at - pos < sizeof(buf) ? (size_t)(at - pos) : sizeof(buf);
		ssize_t n = zstdckpt_dec_read(d, fd, buf, want, &e);

		if (n <= 0)
			break;
		pos += (uint64_t)n;
	}
	if (pos < at || zstdckpt_dec_read(d, fd, buf, 4096, &e) <= 0) {
		fprintf(stderr, "resumed at %llu, read %llu of %llu: %s\n",
			(unsigned long long)b->uoff, (unsigned long long)(pos - b->uoff),
			(unsigned long long)(at - b->uoff), e.msg[0] ? e.msg : "end of frame");
		exit(1);
	}
	zstdckpt_dec_close(d);
	return now(CLOCK_MONOTONIC) - t0;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'G':
		v <<= 10; /* fall through */
	case 'M':
		v <<= 10; /* fall through */
	case 'K':
		v <<= 10;
	}
	return v;
}

static int bench_span(const char *path, struct zsrc *fd, const struct zstddec_index *idx,
		      uint64_t span, double zwall, double zcpu)
{
	const struct zstddec_frame *f = &idx->frames[0];
	double wall[RUNS], cpu[RUNS], pwall[RUNS], pcpu[RUNS], *open_t, *rand_t;
	struct zstdckpt_blob_stats st = { 0 };
	struct keep k = { 0 };
	struct zstdckpt_sink sink = { sink_out, sink_point, &k };
	struct zerr e = { 0 };
	uint32_t x = 2463534242u;
	size_t nt = 0;

	for (int r = 0; r < RUNS; r++) {
		double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);

		keep_free(&k);
		if (zstdckpt_build_blobs(fd, f, span, &sink, &st, &e)) {
			fprintf(stderr, "%s: build: %s\n", path, e.msg);
			return 1;
		}
		wall[r] = now(CLOCK_MONOTONIC) - w0;
		cpu[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
		/* the same pass without blobs: what marking and writing them add */
		w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		if (zstdckpt_build(fd, f, span, ckpt_none, NULL, NULL, &e)) {
			fprintf(stderr, "%s: build without blobs: %s\n", path, e.msg);
			return 1;
		}
		pwall[r] = now(CLOCK_MONOTONIC) - w0;
		pcpu[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	}
	open_t = calloc(k.n + 1, sizeof(double));
	rand_t = calloc(k.n + 1, sizeof(double));
	for (size_t i = 0; i < k.n; i++) {
		uint64_t room = (i + 1 < k.n ? k.b[i + 1].uoff : k.out) - k.b[i].uoff;

		if (room < 4096) /* a point at the frame's end: nothing to read after it */
			continue;
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		open_t[nt] = resume(f, fd, &k.b[i], k.b[i].uoff);
		rand_t[nt++] = resume(f, fd, &k.b[i], k.b[i].uoff + x % (room - 4096 + 1));
	}
	printf("%s span %llu MiB: %llu blobs, %.2f%% of the .zst (%.0f B avg); window kept %.1f%% "
	       "of dense (%.0f of %.0f KiB avg, %.0f runs avg); %llu seqs marked; pending peak "
	       "%.1f MiB; skip_cost %llu\n",
	       path, (unsigned long long)(span >> 20), (unsigned long long)st.points,
	       100.0 * (double)st.blob_bytes / (double)idx->csize,
	       st.points ? (double)st.blob_bytes / (double)st.points : 0,
	       st.window_bytes_dense
		       ? 100.0 * (double)st.window_bytes_kept / (double)st.window_bytes_dense
		       : 0,
	       st.points ? (double)st.window_bytes_kept / (double)st.points / 1024 : 0,
	       st.points ? (double)st.window_bytes_dense / (double)st.points / 1024 : 0,
	       st.points ? (double)st.runs / (double)st.points : 0,
	       (unsigned long long)st.seq_marked, (double)st.pend_peak / 1048576,
	       (unsigned long long)st.skip_cost);
	printf("  build %.2f s wall, %.2f s CPU; zstd -dc %.2f s wall, %.2f s CPU: %.2fx wall, "
	       "%.2fx CPU\n",
	       median(wall, RUNS), median(cpu, RUNS), zwall, zcpu, median(wall, RUNS) / zwall,
	       median(cpu, RUNS) / zcpu);
	printf("  zstdckpt_build (no blobs) %.2f s wall, %.2f s CPU\n", median(pwall, RUNS),
	       median(pcpu, RUNS));
	printf("  open + 4 KiB: median %.2f ms; open + random offset in the span + 4 KiB: median "
	       "%.1f ms\n",
	       median(open_t, nt) * 1e3, median(rand_t, nt) * 1e3);
	free(open_t);
	free(rand_t);
	keep_free(&k);
	return 0;
}

int main(int argc, char **argv)
{
	struct zstddec_index *idx;
	struct zerr e = { 0 };
	struct stat st;
	double zw[RUNS], zc[RUNS];
	struct zsrc *src = NULL;
	int fd, ret = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE.zst SPAN [SPAN...]\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || zsrc_local(fd, &src) < 0 ||
	    zstddec_index_read(src, (uint64_t)st.st_size, ZSTDDEC_WINDOW_LIBMAX, &idx, &e)) {
		fprintf(stderr, "%s: cannot walk: %s\n", argv[1], e.msg);
		return 1;
	}
	for (int r = 0; r < RUNS; r++)
		if (zstd_dc(argv[1], &zw[r], &zc[r])) {
			fprintf(stderr, "zstd -dc %s failed\n", argv[1]);
			return 1;
		}
	printf("%s: %.1f MiB (-1: not in the header) in %.1f MiB, %u frame(s), window %llu KiB, "
	       "%u blocks\n",
	       argv[1], idx->usize == ZSTDDEC_UNKNOWN ? -1.0 : (double)idx->usize / 1048576,
	       (double)idx->csize / 1048576, (unsigned)idx->nframes,
	       (unsigned long long)(idx->frames[0].window >> 10), idx->frames[0].nblocks);
	for (int i = 2; i < argc && !ret; i++)
		ret = bench_span(argv[1], src, idx, parse_size(argv[i]), median(zw, RUNS),
				 median(zc, RUNS));
	zstddec_index_free(idx);
	zsrc_put(src);
	close(fd);
	return ret;
}

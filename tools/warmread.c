/* SPDX-License-Identifier: MIT */
/*
 * warmread: time random 4 KiB pread()s of files already in the page cache.
 *
 *   warmread [-n READS] [-r ROUNDS] [-s SEED] FILE...
 *
 * Opens each FILE once (plain O_RDONLY: the page cache answers, not the
 * daemon, once the file has been read whole), then runs ROUNDS rounds; in
 * each, every FILE in turn reads the same READS random 4 KiB-aligned
 * offsets, timed as one block (no timer per read, so the figure is the
 * kernel's read path plus a syscall).  Files take turns within a round so
 * that a busy machine loads them alike.  Prints ns per read for each round
 * and file, the median per file, and the median over rounds of each file's
 * time divided by the first file's.
 *
 * Not built by CMake on purpose: a measuring aid for doc/design.md
 * ("Warm page cache and folios"), `cc -O2 -o warmread tools/warmread.c`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXF 8
#define MAXR 101

static uint64_t rng;
static uint64_t next_rand(void) /* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAXR];

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static double ns[MAXF][MAXR], ratio[MAXF][MAXR];
	long reads = 20000, rounds = 5;
	int fds[MAXF], nf, opt;
	off_t pages = -1;
	char buf[4096];
	off_t *offs;

	rng = 1;
	while ((opt = getopt(argc, argv, "n:r:s:")) != -1) {
		if (opt == 'n')
			reads = atol(optarg);
		else if (opt == 'r')
			rounds = atol(optarg);
		else if (opt == 's')
			rng = strtoull(optarg, NULL, 0);
		else
			goto usage;
	}
	nf = argc - optind;
	if (nf < 1 || nf > MAXF || reads < 1 || rounds < 1 || rounds > MAXR)
		goto usage;
	for (int f = 0; f < nf; f++) {
		struct stat st;

		fds[f] = open(argv[optind + f], O_RDONLY | O_CLOEXEC);
		if (fds[f] < 0 || fstat(fds[f], &st) < 0) {
			fprintf(stderr, "warmread: %s: %s\n", argv[optind + f], strerror(errno));
			return 1;
		}
		/* Offsets must exist in every file: the smallest decides. */
		if (pages < 0 || st.st_size / 4096 < pages)
			pages = st.st_size / 4096;
	}
	if (pages < 1) {
		fprintf(stderr, "warmread: files smaller than 4 KiB\n");
		return 1;
	}
	offs = malloc(reads * sizeof(*offs));
	if (!offs)
		return 1;
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < reads; i++)
			offs[i] = (off_t)(next_rand() % (uint64_t)pages) * 4096;
		for (int f = 0; f < nf; f++) {
			double t0 = now_ns();

			for (long i = 0; i < reads; i++) {
				if (pread(fds[f], buf, sizeof(buf), offs[i]) != sizeof(buf)) {
					fprintf(stderr, "warmread: short read\n");
					return 1;
				}
			}
			ns[f][r] = (now_ns() - t0) / reads;
			ratio[f][r] = ns[f][r] / ns[0][r];
		}
		printf("round %ld:", r);
		for (int f = 0; f < nf; f++)
			printf(" %.0f", ns[f][r]);
		printf(" ns/read\n");
	}
	for (int f = 0; f < nf; f++)
		printf("%s: median %.0f ns/read, %.2fx the first file's time (median of rounds)\n",
		       argv[optind + f], median(ns[f], rounds), median(ratio[f], rounds));
	free(offs);
	return 0;
usage:
	fprintf(stderr, "usage: warmread [-n READS] [-r ROUNDS(<=%d)] [-s SEED] FILE...\n", MAXR);
	return 2;
}

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_FUZZ_COMMON_H
#define ZMOUNT_FUZZ_COMMON_H

/*
 * Helpers shared by the libFuzzer targets.  Each target is one .c file with
 * LLVMFuzzerTestOneInput; nothing here keeps state between inputs except
 * what a target sets up once in LLVMFuzzerInitialize.
 *
 * A harness aborts (which libFuzzer reports as a crash, with the input
 * saved) when the library breaks a promise of its header: an out-parameter
 * not cleared on error, a return code the header does not list, a byte
 * count that disagrees with what was asked.  Sanitizer reports need no help.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src.h"

/* Aborts with the file, line and reason: the harness's own assertion. */
#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: broken promise: ", __FILE__, __LINE__);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A memfd holding exactly data[0..size): the codecs only pread from fds. */
static inline int fuzz_memfd(const void *data, size_t size)
{
	const unsigned char *p = data;
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);

	FUZZ_CHECK(fd >= 0, "memfd_create: errno %d", errno);
	while (size) {
		ssize_t n = write(fd, p, size);

		FUZZ_CHECK(n > 0, "write to memfd: errno %d", errno);
		p += n;
		size -= (size_t)n;
	}
	return fd;
}

/*
 * data[0..size) as a local file source (zsrc_local over fuzz_memfd, the
 * daemon's own kind of source); the caller drops it with zsrc_put.
 */
static inline struct zsrc *fuzz_src(const void *data, size_t size)
{
	struct zsrc *src;

	FUZZ_CHECK(zsrc_local(fuzz_memfd(data, size), &src) == 0, "zsrc_local: out of memory");
	return src;
}

/* splitmix64: derives offsets and lengths from the input, deterministically. */
static inline uint64_t fuzz_mix(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* FNV-1a of the input: the seed of fuzz_mix, so a saved crash replays exactly. */
static inline uint64_t fuzz_seed(const uint8_t *data, size_t size)
{
	uint64_t h = 0xCBF29CE484222325ull;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001B3ull;
	return h;
}

#endif

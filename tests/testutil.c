/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int testutil_sh(const char *dir, const char *fmt, ...)
{
	char cmd[4096];
	int n, st;
	va_list ap;

	n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", dir);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	va_start(ap, fmt);
	n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	if ((size_t)n >= sizeof(cmd))
		return -1;
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

void testutil_join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "path too long: %s/%s\n", dir, name);
		abort();
	}
}

int testutil_text(const char *path, size_t size, unsigned seed)
{
	static const char *words[] = { "block",	 "stream", "index", "padding", "check",
				       "the",	 "of",	   "a",	    "lzma",    "dictionary",
				       "zmount", "fuse",   "\n",    "offset",  "42" };
	uint32_t x = seed;
	size_t n = 0;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	while (n < size) {
		const char *w;
		size_t len;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w = words[x % (sizeof(words) / sizeof(words[0]))];
		len = strlen(w);
		if (len > size - n)
			len = size - n;
		fwrite(w, 1, len, f);
		n += len;
		if (n < size && w[0] != '\n') {
			fputc(' ', f);
			n++;
		}
	}
	return fclose(f);
}

uint64_t testutil_crc64(const unsigned char *p, size_t n)
{
	uint64_t c = ~0ull;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xC96C5795D7870F42ull : c >> 1;
	}
	return ~c;
}

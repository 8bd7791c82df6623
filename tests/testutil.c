/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* SPDX-License-Identifier: MIT */
#include "zerr.h"

#include <stdarg.h>
#include <stdio.h>

int zerr_set(struct zerr *err, int ret, uint64_t coff, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return ret;
	err->coff = coff;
	err->cut = 0;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return ret;
}

int zerr_cut(struct zerr *err, int ret, uint64_t coff, const char *fmt, ...)
{
	char where[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return ret;
	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	zerr_set(err, ret, coff,
		 "cut short at compressed offset %llu: the file ends %s (still being written, "
		 "or truncated)",
		 (unsigned long long)coff, where);
	err->cut = 1;
	return ret;
}

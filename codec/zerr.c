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
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return ret;
}

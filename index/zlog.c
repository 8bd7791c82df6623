/* SPDX-License-Identifier: MIT */
#include "zlog.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

static enum zlog_level max_level = ZLOG_INFO;
static bool use_syslog;

void zlog_to_syslog(void)
{
	openlog("zmount", LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void zlog_set_level(enum zlog_level level)
{
	max_level = level;
}

void zlog(enum zlog_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[1024];
	va_list ap;

	if (level > max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (use_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

		syslog(prio[level], "%s: %s", names[level], line);
		return;
	}
	/* One fprintf per line: stdio locks the stream, so lines never interleave. */
	fprintf(stderr, "zmount: %s: %s\n", names[level], line);
}

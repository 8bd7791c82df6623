/* SPDX-License-Identifier: MIT */
#include "zlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum zlog_level max_level = ZLOG_INFO;
static const char *prog = "zmount";
static bool use_syslog;
static int log_fd = -1;

void zlog_set_name(const char *name)
{
	prog = name;
}

int zlog_to_file(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		      0640);

	if (fd < 0)
		return -errno;
	/* A FIFO or a device could block or vanish; a log is a plain file. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	return 0;
}

int zlog_to_syslog(void)
{
	struct stat st;

	if (log_fd >= 0)
		return 0;
	openlog(prog, LOG_PID, LOG_DAEMON);
	use_syslog = true;
	if (stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode))
		return 0;
	fprintf(stderr,
		"%s: warning: /dev/log is missing, so no syslog daemon will record this "
		"mount's messages; use -o log_file=PATH, or -f to keep them on stderr\n",
		prog);
	return -ENOENT;
}

void zlog_set_level(enum zlog_level level)
{
	max_level = level;
}

int zlog_wants(enum zlog_level level)
{
	return level <= max_level;
}

char *zlog_escape(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (len == 0)
		return dst;
	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		bool esc = *p < 0x20 || *p == 0x7f || *p == '\\';

		if (o + (esc ? 4 : 1) >= len)
			break;
		if (esc) {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[*p >> 4];
			dst[o++] = hex[*p & 15];
		} else {
			dst[o++] = (char)*p;
		}
	}
	dst[o] = '\0';
	return dst;
}

char *zlog_size(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int u = -1;
	uint64_t div = 1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu byte%s", (unsigned long long)bytes, bytes == 1 ? "" : "s");
		return buf;
	}
	while (u < 5 && bytes / div >= 1024) {
		div <<= 10;
		u++;
	}
	if (bytes % div == 0)
		snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / div), units[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)div, units[u]);
	return buf;
}

/* "2026-11-30T22:12:12.123Z" */
static void stamp(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void zlog(enum zlog_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char raw[1024], line[4 * sizeof(raw)];
	va_list ap;

	if (level > max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	zlog_escape(line, sizeof(line), raw);
	if (log_fd >= 0) {
		char ts[40], out[sizeof(line) + 128];
		int n;

		stamp(ts, sizeof(ts));
		n = snprintf(out, sizeof(out), "%s %s[%ld]: %s: %s\n", ts, prog, (long)getpid(),
			     names[level], line);
		if (n >= (int)sizeof(out)) {
			n = (int)sizeof(out) - 1;
			out[n - 1] = '\n';
		}
		/*
		 * One write with O_APPEND: concurrent lines never interleave.  A
		 * failed write has nowhere left to be reported.
		 */
		if (n > 0) {
			ssize_t w = write(log_fd, out, (size_t)n);

			(void)w;
		}
		return;
	}
	if (use_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

		syslog(prio[level], "%s: %s", names[level], line);
		return;
	}
	/* One fprintf per line: stdio locks the stream, so lines never interleave. */
	fprintf(stderr, "%s: %s: %s\n", prog, names[level], line);
}

/* SPDX-License-Identifier: MIT */
#include "zlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum zlog_level max_level = ZLOG_INFO;
static const char *prog = "zmount";
static bool use_syslog;
static int log_fd = -1;
/* The log file's absolute path (for zlog_where and rotation); set before threads. */
static char log_path[PATH_MAX];
/* The fallback file is kept to ZLOG_ROTATE_BYTES; a log_file of the user's is not (logrotate). */
static bool log_rotates;
static pthread_mutex_t rotate_lock = PTHREAD_MUTEX_INITIALIZER;

void zlog_set_name(const char *name)
{
	prog = name;
}

static int open_log(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		    0640);
}

int zlog_to_file(const char *path)
{
	struct stat st;
	int fd = open_log(path);

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
	log_rotates = false;
	/* Absolute, for people: the daemon's working directory becomes / when it detaches. */
	if (!realpath(path, log_path))
		snprintf(log_path, sizeof(log_path), "%s", path);
	return 0;
}

int zlog_fallback_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;

	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/zmount/zmount.log", xdg);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/log/zmount.log");
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.local/state/zmount/zmount.log", home);
	else
		return -ENOENT;
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* Makes the directories above the file path (mode 0700 for those it makes); 0 or -errno. */
static int make_parents(const char *path)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Opens the fallback file; 0 or -errno (nothing changes then). */
static int to_fallback(char *path, size_t len)
{
	int ret = zlog_fallback_path(path, len);

	if (ret == 0)
		ret = make_parents(path);
	if (ret == 0)
		ret = zlog_to_file(path);
	if (ret == 0)
		log_rotates = true;
	return ret;
}

int zlog_to_syslog(void)
{
	char path[PATH_MAX];
	struct stat st;
	int ret;

	if (log_fd >= 0)
		return 0;
	if (stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode)) {
		openlog(prog, LOG_PID, LOG_DAEMON);
		use_syslog = true;
		return 0;
	}
	ret = to_fallback(path, sizeof(path));
	if (ret == 0) {
		fprintf(stderr,
			"%s: warning: /dev/log is missing (no syslog daemon), so this mount's "
			"messages go to %s (kept under %u MiB, then %s.1); -o log_file=PATH "
			"chooses another file\n",
			prog, log_path, ZLOG_ROTATE_BYTES >> 20, log_path);
		return 0;
	}
	openlog(prog, LOG_PID, LOG_DAEMON);
	use_syslog = true;
	fprintf(stderr,
		"%s: warning: /dev/log is missing, so no syslog daemon will record this "
		"mount's messages, and the fallback file %s cannot be opened (%s); use "
		"-o log_file=PATH, or -f to keep them on stderr\n",
		prog, ret == -ENOENT ? "(no XDG_STATE_HOME or HOME)" : path, strerror(-ret));
	return -ENOENT;
}

const char *zlog_where(void)
{
	return log_fd >= 0 ? log_path : use_syslog ? "syslog" : "stderr";
}

/*
 * The fallback file reached its bound: it becomes PATH.1 and a new PATH
 * takes its place, under the same descriptor number (dup3), so a thread
 * writing meanwhile writes to one file or the other, whole lines.  Another
 * daemon sharing the file may have rotated it first: then this one only
 * reopens PATH.
 */
static void rotate(void)
{
	char old[PATH_MAX + 2];
	struct stat mine, named;
	int fd;

	pthread_mutex_lock(&rotate_lock);
	if (fstat(log_fd, &mine) == 0 && mine.st_size >= (off_t)ZLOG_ROTATE_BYTES) {
		if (stat(log_path, &named) == 0 && named.st_ino == mine.st_ino &&
		    named.st_dev == mine.st_dev) {
			snprintf(old, sizeof(old), "%s.1", log_path);
			if (rename(log_path, old) < 0) {
				pthread_mutex_unlock(&rotate_lock);
				return; /* keep appending: better too long than lost */
			}
		}
		fd = open_log(log_path);
		if (fd >= 0) {
			dup3(fd, log_fd, O_CLOEXEC);
			close(fd);
		}
	}
	pthread_mutex_unlock(&rotate_lock);
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
			struct stat st;

			(void)w;
			if (log_rotates && fstat(log_fd, &st) == 0 &&
			    st.st_size >= (off_t)ZLOG_ROTATE_BYTES)
				rotate();
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

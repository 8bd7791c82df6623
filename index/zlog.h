/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZLOG_H
#define ZMOUNT_ZLOG_H

#include <stddef.h>
#include <stdint.h>

/*
 * One place that writes log lines, so every layer reports the same way.
 * Lines go to stderr as "NAME: LEVEL: message" (NAME is "zmount" unless
 * zlog_set_name changed it), to a file once zlog_to_file has been called,
 * or, once zlog_to_syslog has been called and no file was given, to syslog
 * (facility daemon) or, without a syslog socket, to a fallback file: a
 * line is never dropped silently.  Any thread may call zlog.
 *
 * Every line is escaped: control bytes (0x00-0x1f, 0x7f) and the backslash
 * become \xHH, so one zlog call is always exactly one line whatever file
 * names it carries, and a name such as "a\nzmount: info: forged" cannot
 * forge a line.  Bytes 0x80 and above (UTF-8) pass unchanged.
 */

enum zlog_level { ZLOG_ERROR = 0, ZLOG_WARN, ZLOG_INFO, ZLOG_DEBUG };

/* Messages above level are dropped.  Default: ZLOG_INFO.  Call before threads start. */
void zlog_set_level(enum zlog_level level);

/* The program name that starts each stderr line (borrowed: a string literal). Before threads. */
void zlog_set_name(const char *name);

/*
 * Sends later lines to path, appended, each with a UTC time stamp:
 * "2026-11-30T22:12:12.123Z zmount[PID]: LEVEL: message".  The file is
 * opened O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW, mode 0640, and
 * must be a regular file.  Call before threads start (and before
 * daemonizing, so a relative path and the error still reach the user).
 * Returns 0, -ELOOP for a symlink, -EINVAL if it is not a regular file, or
 * the -errno of open.  On error nothing changes.
 */
int zlog_to_file(const char *path);

/*
 * For a daemon whose stderr is about to go: call it BEFORE daemonizing.
 * With a log file, lines keep going there and this returns 0.  Otherwise
 * lines go to syslog from now on, if /dev/log is a socket.  If it is not
 * (a container, a minimal host), nothing would record them, so they go to
 * the fallback file instead (zlog_fallback_path: $XDG_STATE_HOME/zmount/
 * zmount.log, else /var/log/zmount.log for root, else
 * ~/.local/state/zmount/zmount.log; its directories are made, mode 0700),
 * kept to ZLOG_ROTATE_BYTES by renaming it to PATH.1 once full; one line
 * on stderr (still the terminal) names it, and this returns 0.  If that
 * file cannot be opened either, the stderr line says so and this returns
 * -ENOENT (lines go to syslog, which drops them).  Call before threads start.
 */
int zlog_to_syslog(void);

/* The fallback file's size bound: at this size it becomes PATH.1 (one old file kept). */
#define ZLOG_ROTATE_BYTES (4u << 20)

/*
 * The file zlog_to_syslog falls back to, from the environment (see there),
 * into buf (len bytes).  Returns 0, or -ENOENT if no absolute place is
 * known (no XDG_STATE_HOME, not root, no absolute HOME).
 */
int zlog_fallback_path(char *buf, size_t len);

/*
 * Where lines go now, for people and the stats: "stderr", "syslog", or the
 * log file's absolute path.  Valid until the next zlog_to_* call.
 */
const char *zlog_where(void);

/* True if a line at level would be written (not dropped by zlog_set_level). Any thread. */
int zlog_wants(enum zlog_level level);

void zlog(enum zlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Escapes src into dst (len bytes, always NUL-terminated when len > 0) the
 * way zlog escapes its lines.  Returns dst.  Truncates at a whole escape.
 */
char *zlog_escape(char *dst, size_t len, const char *src);

/*
 * Writes bytes for people into buf (len bytes): "512 bytes", "1 MiB",
 * "23.4 GiB" (powers of 1024, one decimal unless exact).  Returns buf.
 */
char *zlog_size(char *buf, size_t len, uint64_t bytes);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_ZLOG_H
#define ZMOUNT_ZLOG_H

/*
 * One place that writes log lines, so every layer reports the same way.
 * Lines go to stderr as "zmount: LEVEL: message", or to syslog (facility
 * daemon) once zlog_to_syslog has been called.  Any thread may call zlog.
 */

enum zlog_level { ZLOG_ERROR = 0, ZLOG_WARN, ZLOG_INFO, ZLOG_DEBUG };

/* Messages above level are dropped.  Default: ZLOG_INFO.  Call before threads start. */
void zlog_set_level(enum zlog_level level);

/* Sends later lines to syslog, for a daemon whose stderr is gone.  Call before threads start. */
void zlog_to_syslog(void);

void zlog(enum zlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

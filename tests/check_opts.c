/* SPDX-License-Identifier: MIT */
/*
 * Tests for fs/opts.c: size parsing and zmount's own mount options.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"
#include "zlog.h"
#include "zmtest.h"

static void assert_size(const char *s, uint64_t want)
{
	uint64_t v = 12345;
	int ret = opts_size(s, &v);

	ck_assert_msg(ret == 0, "opts_size(\"%s\") returned %d, want %llu", s, ret,
		      (unsigned long long)want);
	ck_assert_msg(v == want, "opts_size(\"%s\") gave %llu, want %llu", s, (unsigned long long)v,
		      (unsigned long long)want);
}

static void assert_bad_size(const char *s)
{
	uint64_t v = 12345;
	int ret = opts_size(s, &v);

	ck_assert_msg(ret == -EINVAL, "opts_size(\"%s\") returned %d (value %llu), want -EINVAL", s,
		      ret, (unsigned long long)v);
	ck_assert_msg(v == 12345, "opts_size(\"%s\") failed but wrote %llu", s,
		      (unsigned long long)v);
}

START_TEST(size_plain_digits)
{
	assert_size("0", 0);
	assert_size("1", 1);
	assert_size("512", 512);
	assert_size("007", 7);
	assert_size("1048576", 1048576);
}
END_TEST

START_TEST(size_suffixes_are_powers_of_1024)
{
	assert_size("512K", 512ull << 10);
	assert_size("256M", 256ull << 20);
	assert_size("1G", 1ull << 30);
	assert_size("2T", 2ull << 40);
	assert_size("0K", 0);
	assert_size("3k", 3ull << 10);
	assert_size("3m", 3ull << 20);
	assert_size("3g", 3ull << 30);
	assert_size("3t", 3ull << 40);
}
END_TEST

START_TEST(size_suffix_with_ib_or_b)
{
	assert_size("1MiB", 1ull << 20);
	assert_size("1KiB", 1ull << 10);
	assert_size("4GiB", 4ull << 30);
	assert_size("1TiB", 1ull << 40);
	assert_size("1MB", 1ull << 20);
	assert_size("1mb", 1ull << 20); /* either case */
	assert_size("1mib", 1ull << 20);
	assert_size("64kB", 64ull << 10);
}
END_TEST

START_TEST(size_limits_of_64_bits)
{
	assert_size("18446744073709551615", UINT64_MAX);
	assert_size("16777215T", 16777215ull << 40);
	assert_size("17179869183G", 17179869183ull << 30);
	assert_bad_size("18446744073709551616");
	assert_bad_size("99999999999999999999");
	assert_bad_size("16777216T"); /* 2^64 */
	assert_bad_size("17179869184G");
	assert_bad_size("18014398509481984K");
}
END_TEST

START_TEST(size_rejects_other_forms)
{
	static const char *const bad[] = { "",	  "M",	 "K",	 "iB",	 "-1",	  "+1",	 " 1",
					   "1 ",  "1 M", "1.5M", "1,5M", "0x10",  "1P",	 "1E",
					   "1B",  "1b",	 "1Mi",	 "1MBB", "1MiBB", "1iB", "1KM",
					   "1e3", "ten", "1M ",	 "1\n" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_bad_size(bad[i]);
}
END_TEST

/* ------------------------------------------------------------------ */

/* Applies opt to fresh defaults; returns the result, with the message in msg. */
static int apply(struct opts *o, const char *opt, char *msg, size_t msglen)
{
	opts_default(o);
	msg[0] = '\0';
	return opts_apply(o, opt, msg, msglen);
}

static void assert_rejected(const char *opt)
{
	struct opts o, def;
	char msg[256];
	int ret = apply(&o, opt, msg, sizeof(msg));

	opts_default(&def);
	ck_assert_msg(ret == -EINVAL, "opts_apply(\"%s\") returned %d, want -EINVAL", opt, ret);
	ck_assert_msg(msg[0] != '\0', "opts_apply(\"%s\") gave no reason", opt);
	ck_assert_msg(strchr(msg, '\n') == NULL, "reason for \"%s\" is not one line: %s", opt, msg);
	/* nothing was changed */
	ck_assert_uint_eq(o.cache_size, def.cache_size);
	ck_assert_uint_eq(o.span, def.span);
	ck_assert_int_eq(o.log_level, def.log_level);
	ck_assert(o.timeout == def.timeout);
	ck_assert_uint_eq(o.threads, def.threads);
}

START_TEST(defaults)
{
	struct opts o;

	memset(&o, 0xAB, sizeof(o));
	opts_default(&o);
	ck_assert_uint_eq(o.cache_size, OPTS_DEFAULT_CACHE);
	ck_assert_uint_eq(o.span, OPTS_DEFAULT_SPAN);
	ck_assert_int_eq(o.log_level, ZLOG_INFO);
	ck_assert(o.timeout == 1.0);
	{
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		ck_assert_uint_eq(o.threads, n < 1 ? 1 : n > 256 ? 256 : (unsigned)n);
	}
}
END_TEST

START_TEST(threads_range)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "threads=1", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.threads, 1);
	ck_assert_int_eq(apply(&o, "threads=256", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.threads, 256);
	ck_assert_int_eq(apply(&o, "threads=8", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.threads, 8);
	assert_rejected("threads=0");
	assert_rejected("threads=257");
	assert_rejected("threads=1K"); /* a count, not a size */
	assert_rejected("threads=4M");
	assert_rejected("threads=");
	assert_rejected("threads=-1");
	assert_rejected("threads=two");
	assert_rejected("threads=4294967297"); /* 2^32 + 1: must not wrap to 1 */
}
END_TEST

START_TEST(cache_size_applied)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "cache_size=512M", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.cache_size, 512ull << 20);
	ck_assert_int_eq(apply(&o, "cache_size=1M", msg, sizeof(msg)), 1); /* the minimum */
	ck_assert_uint_eq(o.cache_size, 1ull << 20);
	ck_assert_int_eq(apply(&o, "cache_size=1048576", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.cache_size, 1ull << 20);
	ck_assert_int_eq(apply(&o, "cache_size=2GiB", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.cache_size, 2ull << 30);
}
END_TEST

START_TEST(cache_size_rejected)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "cache_size=banana", msg, sizeof(msg)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "cache_size"));
	ck_assert_ptr_nonnull(strstr(msg, "banana"));
	assert_rejected("cache_size=banana");
	assert_rejected("cache_size=512K"); /* below 1M */
	assert_rejected("cache_size=1048575");
	assert_rejected("cache_size=0");
	assert_rejected("cache_size=");
	assert_rejected("cache_size");
	assert_rejected("cache_size=-1M");
	assert_rejected("cache_size=99999999999999999999");
	assert_rejected("cache_size=18446744073709551615"); /* more than half the address space */
}
END_TEST

START_TEST(span_range)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "span=1M", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.span, 1ull << 20);
	ck_assert_int_eq(apply(&o, "span=64K", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.span, 64ull << 10);
	/* span= names one spacing for all three formats: xz Blocks and zstd frames too */
	ck_assert_uint_eq(o.ck_span, 64ull << 10);
	ck_assert_int_eq(apply(&o, "span=64M", msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.span, 64ull << 20);
	assert_rejected("span=32K");
	assert_rejected("span=65535");
	assert_rejected("span=65M");
	assert_rejected("span=64M1");
	assert_rejected("span=1G");
	assert_rejected("span=");
}
END_TEST

START_TEST(timeout_range)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "timeout=2.5", msg, sizeof(msg)), 1);
	ck_assert(o.timeout == 2.5);
	ck_assert_int_eq(apply(&o, "timeout=0", msg, sizeof(msg)), 1);
	ck_assert(o.timeout == 0.0);
	ck_assert_int_eq(apply(&o, "timeout=3600", msg, sizeof(msg)), 1);
	ck_assert(o.timeout == 3600.0);
	ck_assert_int_eq(apply(&o, "timeout=10", msg, sizeof(msg)), 1);
	ck_assert(o.timeout == 10.0);
	assert_rejected("timeout=-1");
	assert_rejected("timeout=3600.5");
	assert_rejected("timeout=1e9");
	assert_rejected("timeout=");
	assert_rejected("timeout=abc");
	assert_rejected("timeout=1s");
	assert_rejected("timeout=nan");
	assert_rejected("timeout=inf");
}
END_TEST

START_TEST(log_level_names)
{
	static const struct {
		const char *opt;
		int level;
	} t[] = {
		{ "log_level=error", ZLOG_ERROR },
		{ "log_level=warning", ZLOG_WARN },
		{ "log_level=info", ZLOG_INFO },
		{ "log_level=debug", ZLOG_DEBUG },
	};
	struct opts o;
	char msg[256];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ck_assert_int_eq(apply(&o, t[i].opt, msg, sizeof(msg)), 1);
		ck_assert_int_eq(o.log_level, t[i].level);
	}
	assert_rejected("log_level=verbose");
	assert_rejected("log_level=");
	assert_rejected("log_level=DEBUG");
	assert_rejected("log_level=3");
	assert_rejected("log_level=debugx");
}
END_TEST

START_TEST(other_options_are_not_ours)
{
	static const char *const fuse[] = { "allow_other",
					    "ro",
					    "default_permissions",
					    "max_read=131072",
					    "fsname=zmount",
					    "cache",
					    "cache_sizes=1M",
					    "spa=1M",
					    "timeout_x=1",
					    "log=debug",
					    "thread=2",
					    "" };
	struct opts o, def;
	char msg[256];

	opts_default(&def);
	for (size_t i = 0; i < sizeof(fuse) / sizeof(fuse[0]); i++) {
		ck_assert_msg(apply(&o, fuse[i], msg, sizeof(msg)) == 0,
			      "opts_apply(\"%s\") claimed a FUSE option", fuse[i]);
		ck_assert_uint_eq(o.cache_size, def.cache_size);
		ck_assert_uint_eq(o.span, def.span);
	}
}
END_TEST

START_TEST(max_read_is_noted_and_passed_on)
{
	struct opts o;
	char msg[256];

	ck_assert_int_eq(apply(&o, "max_read=131072", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(o.max_read, 131072);
	ck_assert_int_eq(apply(&o, "max_read=64K", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(o.max_read, 65536);
	ck_assert_int_eq(apply(&o, "max_read=100", msg, sizeof(msg)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "max_read"));
	ck_assert_int_eq(apply(&o, "max_read=8G", msg, sizeof(msg)), -EINVAL);
	ck_assert_int_eq(apply(&o, "max_read=x", msg, sizeof(msg)), -EINVAL);
	ck_assert_int_eq(apply(&o, "allow_other", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(o.max_read, 0);
}
END_TEST

START_TEST(options_accumulate)
{
	struct opts o;
	char msg[256];

	opts_default(&o);
	ck_assert_int_eq(opts_apply(&o, "cache_size=64M", msg, sizeof(msg)), 1);
	ck_assert_int_eq(opts_apply(&o, "span=128K", msg, sizeof(msg)), 1);
	ck_assert_int_eq(opts_apply(&o, "timeout=0.25", msg, sizeof(msg)), 1);
	ck_assert_int_eq(opts_apply(&o, "log_level=error", msg, sizeof(msg)), 1);
	/* a bad one later leaves the good ones */
	ck_assert_int_eq(opts_apply(&o, "span=1K", msg, sizeof(msg)), -EINVAL);
	ck_assert_uint_eq(o.cache_size, 64ull << 20);
	ck_assert_uint_eq(o.span, 128ull << 10);
	ck_assert(o.timeout == 0.25);
	ck_assert_int_eq(o.log_level, ZLOG_ERROR);
}
END_TEST

START_TEST(message_fits_any_buffer)
{
	struct opts o;
	char msg[8];

	memset(msg, 'Z', sizeof(msg));
	opts_default(&o);
	ck_assert_int_eq(opts_apply(&o, "cache_size=banana", msg, 5), -EINVAL);
	ck_assert_int_eq(msg[4], '\0'); /* truncated and terminated */
	ck_assert_int_eq(msg[5], 'Z');	/* not past msglen */
}
END_TEST

START_TEST(cache_size_above_memory_refused_in_human_units)
{
	uint64_t mem = opts_phys_mem();
	struct opts o;
	char msg[256], have[32];

	ck_assert_msg(mem >= (64ull << 20), "sysconf says this machine has %llu bytes",
		      (unsigned long long)mem);
	assert_rejected("cache_size=99999T");
	ck_assert_int_eq(apply(&o, "cache_size=99999T", msg, sizeof(msg)), -EINVAL);
	zlog_size(have, sizeof(have), mem);
	ck_assert_msg(strstr(msg, "cache_size=99999T (97.7 PiB) is larger than this machine's") &&
			      strstr(msg, have) && strstr(msg, "of memory"),
		      "message: %s", msg);
	/* Exactly the memory is allowed (if a machine ever wants that); a byte more is not. */
	snprintf(have, sizeof(have), "cache_size=%llu", (unsigned long long)mem);
	ck_assert_int_eq(apply(&o, have, msg, sizeof(msg)), 1);
	ck_assert_uint_eq(o.cache_size, mem);
	snprintf(have, sizeof(have), "cache_size=%llu", (unsigned long long)mem + 1);
	assert_rejected(have);
}
END_TEST

START_TEST(range_messages_use_units)
{
	struct opts o;
	char msg[256], have[32];

	ck_assert_int_eq(apply(&o, "span=1K", msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "from 64 KiB to 64 MiB"), "message: %s", msg);
	ck_assert_int_eq(apply(&o, "cache_size=99999999999999999999", msg, sizeof(msg)), -EINVAL);
	/* The cap is the memory: the message names it, not the 8 EiB of the arithmetic. */
	zlog_size(have, sizeof(have), opts_phys_mem());
	ck_assert_msg(strstr(msg, "from 1 MiB to this machine's") && strstr(msg, have) &&
			      !strstr(msg, "EiB") && !strstr(msg, "9223372036854775807"),
		      "message: %s", msg);
	ck_assert_int_eq(apply(&o, "cache_size=512K", msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "from 1 MiB to this machine's") && !strstr(msg, "EiB"),
		      "message: %s", msg);
}
END_TEST

START_TEST(log_file_applied)
{
	struct opts o;
	char msg[256];

	opts_default(&o);
	ck_assert_str_eq(o.log_file, "");
	ck_assert_int_eq(apply(&o, "log_file=/var/log/zmount.log", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.log_file, "/var/log/zmount.log");
	ck_assert_int_eq(apply(&o, "log_file=rel.log", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.log_file, "rel.log");
	assert_rejected("log_file=");
	assert_rejected("log_file");
}
END_TEST

/* index_dir: an absolute path, none, or a shared s3:// prefix (kept without trailing '/'). */
START_TEST(index_dir_values)
{
	struct opts o;
	char msg[256];

	opts_default(&o);
	ck_assert_int_eq(o.index_dir_given, 0); /* the default: main.c may create it */
	ck_assert_int_eq(apply(&o, "index_dir=/var/cache/zm", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.index_dir, "/var/cache/zm");
	ck_assert_int_eq(o.index_dir_given, 1); /* given: main.c checks its parent */
	ck_assert_int_eq(apply(&o, "index_dir=none", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.index_dir, "");
	ck_assert_int_eq(apply(&o, "index_dir=s3://bucket/fleet/idx", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.index_dir, "s3://bucket/fleet/idx");
	ck_assert_int_eq(apply(&o, "index_dir=s3://bucket/idx//", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.index_dir, "s3://bucket/idx");
	ck_assert_int_eq(apply(&o, "index_dir=s3://bucket", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.index_dir, "s3://bucket");
	assert_rejected("index_dir=relative/dir");
	assert_rejected("index_dir=");
	assert_rejected("index_dir=s3://");
	assert_rejected("index_dir=s3://Bad_Bucket/idx");
	assert_rejected("index_dir=s3:/bucket/idx");
	assert_rejected("index_dir=http://host/idx");
	ck_assert_int_eq(apply(&o, "index_dir=idx", msg, sizeof(msg)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "s3://BUCKET"));
}
END_TEST

/* The s3:// options: values checked, none of them a secret. */
START_TEST(s3_options)
{
	struct opts o;
	char msg[256];

	opts_default(&o);
	ck_assert_str_eq(o.endpoint, "");
	ck_assert_int_eq(o.retries, -1);
	ck_assert_int_eq(o.request_timeout, 0);
	ck_assert_int_eq(apply(&o, "endpoint=http://127.0.0.1:7480", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.endpoint, "http://127.0.0.1:7480");
	ck_assert_int_eq(apply(&o, "endpoint=https://s3.eu-west-1.amazonaws.com", msg, sizeof(msg)),
			 1);
	ck_assert_int_eq(apply(&o, "region=eu-west-1", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.region, "eu-west-1");
	ck_assert_int_eq(apply(&o, "profile=ci", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.profile, "ci");
	ck_assert_int_eq(apply(&o, "credentials=/etc/zmount/keys", msg, sizeof(msg)), 1);
	ck_assert_str_eq(o.credentials, "/etc/zmount/keys");
	ck_assert_int_eq(apply(&o, "credentials=keys", msg, sizeof(msg)), 1);
	ck_assert_msg(o.credentials[0] == '/' && strstr(o.credentials, "/keys"), "%s",
		      o.credentials);
	ck_assert_int_eq(apply(&o, "retries=0", msg, sizeof(msg)), 1);
	ck_assert_int_eq(o.retries, 0);
	ck_assert_int_eq(apply(&o, "retries=20", msg, sizeof(msg)), 1);
	ck_assert_int_eq(o.retries, 20);
	ck_assert_int_eq(apply(&o, "request_timeout=1", msg, sizeof(msg)), 1);
	ck_assert_int_eq(o.request_timeout, 1);
	ck_assert_int_eq(apply(&o, "request_timeout=600", msg, sizeof(msg)), 1);
	ck_assert_int_eq(o.request_timeout, 600);
	/* timeout= keeps its meaning (the kernel cache and the listing's life). */
	ck_assert_int_eq(apply(&o, "timeout=5", msg, sizeof(msg)), 1);
	ck_assert(o.timeout == 5.0);
	ck_assert_int_eq(o.request_timeout, 0);
	assert_rejected("endpoint=");
	assert_rejected("endpoint=ftp://host");
	assert_rejected("endpoint=127.0.0.1:7480");
	assert_rejected("endpoint=http://a b");
	assert_rejected("region=");
	assert_rejected("region=us east");
	assert_rejected("profile=");
	assert_rejected("credentials=");
	assert_rejected("retries=21");
	assert_rejected("retries=-1");
	assert_rejected("retries=x");
	assert_rejected("retries=");
	assert_rejected("request_timeout=0");
	assert_rejected("request_timeout=601");
	assert_rejected("request_timeout=1.5");
	ck_assert_int_eq(apply(&o, "retries=21", msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "0 to 20"), "%s", msg);
	ck_assert_int_eq(apply(&o, "request_timeout=0", msg, sizeof(msg)), -EINVAL);
	ck_assert_msg(strstr(msg, "1 to 600"), "%s", msg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* zlog: the escaping that keeps one call one line, and sizes for people. */

static void assert_escaped(const char *in, const char *want)
{
	char out[256];

	zlog_escape(out, sizeof(out), in);
	ck_assert_msg(strcmp(out, want) == 0, "escape gave '%s', want '%s'", out, want);
}

START_TEST(zlog_escapes_control_bytes_and_backslash)
{
	assert_escaped("plain name.xz", "plain name.xz");
	assert_escaped("a\nzmount: info: FORGED LINE\nb.xz",
		       "a\\x0azmount: info: FORGED LINE\\x0ab.xz");
	assert_escaped("cr\rtab\tesc\033del\177", "cr\\x0dtab\\x09esc\\x1bdel\\x7f");
	/* A literal "\x0a" in a name must not read like an escaped newline. */
	assert_escaped("back\\x0a", "back\\x5cx0a");
	assert_escaped("caf\xc3\xa9.gz", "caf\xc3\xa9.gz"); /* UTF-8 passes */
	assert_escaped("", "");
}
END_TEST

START_TEST(zlog_escape_truncates_whole)
{
	char out[8];

	zlog_escape(out, sizeof(out), "ab\ncdef");
	ck_assert_str_eq(out, "ab\\x0ac"); /* 7 bytes + NUL */
	zlog_escape(out, 6, "abc\nd");
	ck_assert_str_eq(out, "abc"); /* the escape does not fit: not cut in half */
	out[0] = 'x';
	zlog_escape(out, 0, "abc"); /* no room at all: untouched */
	ck_assert_int_eq(out[0], 'x');
}
END_TEST

START_TEST(zlog_sizes_for_people)
{
	char b[32];

	ck_assert_str_eq(zlog_size(b, sizeof(b), 0), "0 bytes");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 1), "1 byte");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 1023), "1023 bytes");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 1024), "1 KiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 1536), "1.5 KiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 1ull << 20), "1 MiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 256ull << 20), "256 MiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 25125130240ull), "23.4 GiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), 99999ull << 40), "97.7 PiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), UINT64_MAX / 2), "8.0 EiB");
	ck_assert_str_eq(zlog_size(b, sizeof(b), UINT64_MAX), "16.0 EiB");
}
END_TEST

START_TEST(zlog_file_one_line_per_call)
{
	char dir[] = "/tmp/check_zlog.XXXXXX", path[128], link[128], *text;
	unsigned lines = 0;
	size_t len;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/log", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_eq(zlog_to_file(link), -ELOOP);	      /* O_NOFOLLOW */
	ck_assert_int_eq(zlog_to_file("/dev/null"), -EINVAL); /* not a regular file */
	ck_assert_int_eq(zlog_to_file(dir), -EISDIR);
	ck_assert_int_eq(zlog_to_file(path), 0);
	zlog_set_level(ZLOG_INFO);
	zlog(ZLOG_ERROR, "%s: corrupt", "a\nzmount: info: FORGED LINE\nb.xz");
	zlog(ZLOG_DEBUG, "dropped: above the level");
	zlog(ZLOG_INFO, "second");
	text = (char *)zmtest_slurp(path, &len);
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	ck_assert_msg(lines == 2, "want 2 lines, got %u: %s", lines, text);
	/* "2026-11-30T22:12:12.123Z zmount[PID]: error: a\x0azmount: ..." */
	ck_assert_msg(strlen(text) > 25 && text[4] == '-' && text[10] == 'T' && text[19] == '.' &&
			      text[23] == 'Z' && strncmp(text + 24, " zmount[", 8) == 0,
		      "no time stamp: %s", text);
	ck_assert_msg(strstr(text, "]: error: a\\x0azmount: info: FORGED LINE\\x0ab.xz: corrupt\n"),
		      "line: %s", text);
	ck_assert_msg(strstr(text, "]: info: second\n"), "line: %s", text);
	ck_assert_ptr_null(strstr(text, "\nzmount: info: FORGED"));
	/* Appends: a second open keeps what is there. */
	ck_assert_int_eq(zlog_to_file(path), 0);
	zlog(ZLOG_WARN, "third");
	free(text);
	text = (char *)zmtest_slurp(path, &len);
	ck_assert_msg(strstr(text, "second\n") && strstr(text, "]: warning: third\n"), "%s", text);
	free(text);
	unlink(link);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *opts_suite(void)
{
	Suite *s = suite_create("opts");
	TCase *tz = tcase_create("size");
	TCase *ta = tcase_create("apply");
	TCase *tl = tcase_create("zlog");

	tcase_add_test(tz, size_plain_digits);
	tcase_add_test(tz, size_suffixes_are_powers_of_1024);
	tcase_add_test(tz, size_suffix_with_ib_or_b);
	tcase_add_test(tz, size_limits_of_64_bits);
	tcase_add_test(tz, size_rejects_other_forms);
	suite_add_tcase(s, tz);

	tcase_add_test(ta, defaults);
	tcase_add_test(ta, cache_size_applied);
	tcase_add_test(ta, cache_size_rejected);
	tcase_add_test(ta, span_range);
	tcase_add_test(ta, timeout_range);
	tcase_add_test(ta, threads_range);
	tcase_add_test(ta, log_level_names);
	tcase_add_test(ta, other_options_are_not_ours);
	tcase_add_test(ta, max_read_is_noted_and_passed_on);
	tcase_add_test(ta, options_accumulate);
	tcase_add_test(ta, message_fits_any_buffer);
	tcase_add_test(ta, cache_size_above_memory_refused_in_human_units);
	tcase_add_test(ta, range_messages_use_units);
	tcase_add_test(ta, log_file_applied);
	tcase_add_test(ta, index_dir_values);
	tcase_add_test(ta, s3_options);
	suite_add_tcase(s, ta);

	tcase_add_test(tl, zlog_escapes_control_bytes_and_backslash);
	tcase_add_test(tl, zlog_escape_truncates_whole);
	tcase_add_test(tl, zlog_sizes_for_people);
	tcase_add_test(tl, zlog_file_one_line_per_call);
	suite_add_tcase(s, tl);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(opts_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

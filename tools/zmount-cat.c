/* SPDX-License-Identifier: MIT */
/*
 * zmount-cat FILE [OFFSET [LENGTH]]: writes uncompressed bytes of an .xz,
 * .gz or .zst file or s3://BUCKET/KEY object to stdout through the same reader the daemon uses.
 * zmount-cat FILE MEMBER (not a number): one member of the tar it holds (tooltar.h).
 * Exit status: 0 done, 1 bad usage, not an archive or no such member, 2 a read failed or the
 * tar is damaged (logged on stderr).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmttab.h"
#include "reader.h"
#include "tooltar.h"
#include "toolsrc.h"
#include "zlog.h"
#include "zmctx.h"

#define CACHE_SIZE (64u << 20)
#define BUF	   (1u << 20)

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return (errno || end == s || *end || s[0] == '-') ? -1 : 0;
}

static int write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int help(void)
{
	printf("usage: zmount-cat [S3 FLAGS] [--] FILE|s3://BUCKET/KEY [OFFSET [LENGTH]]\n"
	       "       zmount-cat [S3 FLAGS] [--] FILE|s3://BUCKET/KEY MEMBER\n"
	       "Writes the uncompressed bytes of an .xz, .gz or .zst file or object to\n"
	       "stdout, from OFFSET (default 0) for LENGTH bytes (default: to the end);\n"
	       "or the bytes of the member MEMBER of the tar it holds (or of a plain tar),\n"
	       "as tar -xOf would write the last member of that name.  A second argument\n"
	       "that is not a number is a MEMBER; write a member named like a number ./NAME.\n"
	       "  -h, --help     this text\n"
	       "  -V, --version  the version\n" TOOLSRC_HELP
	       "Exit status: 0 done, 1 usage, not an archive or no such member, 2 a read\n"
	       "failed or the tar is damaged.\n");
	return 0;
}

/* Writes [off, off + len) of file.  Returns the exit status. */
static int cat_range(const char *file, struct zmctx *zm, const struct reader_opts *ro, uint64_t off,
		     uint64_t len, char *buf)
{
	struct reader *r = NULL;
	char name[4 * PATH_MAX];
	int ret;

	/* Messages are one line each, whatever the file is called. */
	zlog_escape(name, sizeof(name), file);
	ret = toolsrc_reader(file, zm, ro, &r, NULL);
	if (ret == -ENOTSUP)
		fprintf(stderr, "zmount-cat: %s: not an %s file\n", name, fmttab_names());
	if (ret < 0)
		return ret == -ENOTSUP ? 1 : 2;
	while (len > 0) {
		ssize_t n = reader_pread(r, buf, len < BUF ? (size_t)len : BUF, off);

		if (n < 0) {
			struct zerr why;

			/* The reader's own reason, not "Input/output error" (its log line said it
			 * too). */
			fprintf(stderr, "zmount-cat: %s: offset %" PRIu64 ": %s\n", name, off,
				reader_last_error(r, &why) < 0 && why.msg[0] ? why.msg
									     : strerror((int)-n));
			ret = 2;
			break;
		}
		if (n == 0)
			break;
		if (write_all(buf, (size_t)n) < 0) {
			fprintf(stderr, "zmount-cat: write: %s\n", strerror(errno));
			ret = 2;
			break;
		}
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	reader_close(r);
	return ret;
}

/*
 * Writes the member member of the tar in file.  A damaged tar still gives a member found
 * before the damage, as tar -x does, with status 2.  Returns the exit status.
 */
static int cat_member(const char *file, struct zmctx *zm, const struct reader_opts *ro,
		      const char *member)
{
	const struct tar_member *m = NULL;
	struct tooltar tt;
	struct zerr why;
	int ret = tooltar_open(&tt, "zmount-cat", file, zm, ro, &why), bad;

	if (ret == 0) {
		ret = tooltar_scan(&tt, &why);
		m = tooltar_find(&tt, member);
		bad = !m || m->type != TAR_FILE;
		if (ret)
			fprintf(stderr, "zmount-cat: %s: %s\n", tt.name, why.msg);
		else if (bad) {
			char esc[4 * PATH_MAX];

			zlog_escape(esc, sizeof(esc), member);
			fprintf(stderr, "zmount-cat: %s: %s: %s\n", tt.name, esc,
				m ? "not a regular file" : "no such member");
			ret = 1;
		}
		if (!bad) {
			int k = tooltar_cat(&tt, m, STDOUT_FILENO);

			ret = k ? k : ret;
		}
	}
	tooltar_close(&tt);
	return ret;
}

int main(int argc, char *argv[])
{
	uint64_t off = 0, len = UINT64_MAX;
	struct reader_opts ro;
	struct zmctx *zm = NULL;
	char *buf;
	int ret, member;

	zlog_set_name("zmount-cat");
	if (toolsrc_flags("zmount-cat", &argc, argv))
		return 1;
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		return help();
	if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("zmount-cat %s\n", ZMOUNT_VERSION);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--") == 0) {
		argc--;
		argv++;
	} else if (argc > 1 && argv[1][0] == '-' && argv[1][1]) {
		fprintf(stderr, "zmount-cat: unknown option '%s' (see zmount-cat --help)\n",
			argv[1]);
		return 1;
	}
	member = argc == 3 && parse_u64(argv[2], &off) < 0;
	if (argc < 2 || argc > 4 || (argc > 2 && !member && parse_u64(argv[2], &off)) ||
	    (argc > 3 && parse_u64(argv[3], &len))) {
		fprintf(stderr, "zmount-cat: usage: zmount-cat FILE [OFFSET [LENGTH]] or FILE "
				"MEMBER (see --help)\n");
		return 1;
	}
	reader_opts_default(&ro, CACHE_SIZE);
	buf = malloc(BUF);
	if (!buf || zmctx_new(CACHE_SIZE, &zm) < 0) {
		fprintf(stderr, "zmount-cat: out of memory\n");
		free(buf);
		return 1;
	}
	ret = member ? cat_member(argv[1], zm, &ro, argv[2])
		     : cat_range(argv[1], zm, &ro, off, len, buf);
	toolsrc_end();
	zmctx_free(zm);
	free(buf);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * zmount-cat FILE [OFFSET [LENGTH]]: writes uncompressed bytes of an .xz,
 * .gz or .zst file or s3://BUCKET/KEY object to stdout through the same reader the daemon uses.
 * Exit status: 0 done, 1 bad usage or not an archive, 2 a read failed (logged on stderr).
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

int main(int argc, char *argv[])
{
	uint64_t off = 0, len = UINT64_MAX;
	struct reader_opts ro;
	struct zmctx *zm = NULL;
	struct reader *r = NULL;
	char *buf = malloc(BUF), name[4 * PATH_MAX];
	int ret;

	zlog_set_name("zmount-cat");
	if (toolsrc_flags("zmount-cat", &argc, argv)) {
		free(buf);
		return 1;
	}
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: zmount-cat [S3 FLAGS] [--] FILE|s3://BUCKET/KEY [OFFSET [LENGTH]]\n"
		       "Writes the uncompressed bytes of an .xz, .gz or .zst file or object to\n"
		       "stdout, from OFFSET (default 0) for LENGTH bytes (default: to the end).\n"
		       "  -h, --help     this text\n"
		       "  -V, --version  the version\n" TOOLSRC_HELP
		       "Exit status: 0 done, 1 usage or not an archive, 2 a read failed.\n");
		free(buf);
		return 0;
	}
	if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("zmount-cat %s\n", ZMOUNT_VERSION);
		free(buf);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--") == 0) {
		argc--;
		argv++;
	} else if (argc > 1 && argv[1][0] == '-' && argv[1][1]) {
		fprintf(stderr, "zmount-cat: unknown option '%s' (see zmount-cat --help)\n",
			argv[1]);
		free(buf);
		return 1;
	}
	if (argc < 2 || argc > 4 || (argc > 2 && parse_u64(argv[2], &off)) ||
	    (argc > 3 && parse_u64(argv[3], &len))) {
		fprintf(stderr,
			"zmount-cat: usage: zmount-cat FILE [OFFSET [LENGTH]] (see --help)\n");
		free(buf);
		return 1;
	}
	reader_opts_default(&ro, CACHE_SIZE);
	if (!buf || zmctx_new(CACHE_SIZE, &zm) < 0) {
		fprintf(stderr, "zmount-cat: out of memory\n");
		return 1;
	}
	/* Messages are one line each, whatever the file is called. */
	zlog_escape(name, sizeof(name), argv[1]);
	ret = toolsrc_reader(argv[1], zm, &ro, &r, NULL);
	if (ret == -ENOTSUP)
		fprintf(stderr, "zmount-cat: %s: not an %s file\n", name, fmttab_names());
	if (ret < 0) {
		ret = ret == -ENOTSUP ? 1 : 2;
		goto out;
	}
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
			goto out;
		}
		if (n == 0)
			break;
		if (write_all(buf, (size_t)n) < 0) {
			fprintf(stderr, "zmount-cat: write: %s\n", strerror(errno));
			ret = 2;
			goto out;
		}
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	ret = 0;
out:
	reader_close(r);
	toolsrc_end();
	zmctx_free(zm);
	free(buf);
	return ret;
}

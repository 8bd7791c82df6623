/* SPDX-License-Identifier: MIT */
/*
 * zmount-info FILE...: what the reader sees in each archive: format,
 * Streams or members, Blocks or checkpoints, sizes.  Builds the index the
 * daemon would (for gzip that is a full pass, which also verifies CRCs).
 * Exit status: 0 all readable, 1 bad usage, 2 some file failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fmttab.h"
#include "reader.h"
#include "toolsrc.h"
#include "zlog.h"
#include "zmctx.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: zmount-info [S3 FLAGS] [--] FILE|s3://BUCKET/KEY...\n"
		     "Prints, per .xz, .gz or .zst file or object, one tab-separated line: the\n"
		     "format; its Streams and Blocks (xz), members and checkpoints (gzip) or\n"
		     "frames (zstd); compressed and uncompressed sizes; the largest unit.\n"
		     "  -h, --help     this text\n"
		     "  -V, --version  the version\n" TOOLSRC_HELP
		     "Exit status: 0 all readable, 1 bad usage, 2 some file failed.\n");
}

int main(int argc, char *argv[])
{
	struct reader_opts ro;
	struct zmctx *zm;
	int status = 0, first = 1;

	zlog_set_name("zmount-info");
	if (toolsrc_flags("zmount-info", &argc, argv))
		return 1;
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("zmount-info %s\n", ZMOUNT_VERSION);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--") == 0)
		first = 2;
	else if (argc > 1 && argv[1][0] == '-' && argv[1][1]) {
		fprintf(stderr, "zmount-info: unknown option '%s' (see zmount-info --help)\n",
			argv[1]);
		return 1;
	}
	if (argc <= first) {
		fprintf(stderr, "zmount-info: give at least one file (see zmount-info --help)\n");
		return 1;
	}
	reader_opts_default(&ro, 64u << 20);
	if (zmctx_new(64u << 20, &zm) < 0) {
		fprintf(stderr, "zmount-info: out of memory\n");
		return 2;
	}
	for (int i = first; i < argc; i++) {
		struct reader_info in;
		struct reader *r;
		struct zerr why = { 0 };
		char line[1024], name[4 * PATH_MAX], why_text[4 * sizeof(why.msg)];
		int ret = toolsrc_reader(argv[i], zm, &ro, &r, &why);

		/* Tab-separated, one line per file: escape tabs and newlines in names. */
		zlog_escape(name, sizeof(name), argv[i]);
		if (ret < 0) {
			zlog_escape(why_text, sizeof(why_text),
				    why.msg[0] ? why.msg : strerror(-ret));
			printf("%s\terror\t%s\n", name, why_text);
			status = 2;
			continue;
		}
		reader_get_info(r, &in);
		/* the format's own fields (fmttab_info_line) */
		fmttab_info_line(in.fmt, &in, line, sizeof(line));
		printf("%s\t%s\n", name, line);
		reader_close(r);
	}
	toolsrc_end();
	zmctx_free(zm);
	return status;
}

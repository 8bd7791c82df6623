/* SPDX-License-Identifier: MIT */
/*
 * zmount-info FILE...: what the reader sees in each archive: format,
 * Streams or members, Blocks or checkpoints, sizes.  Builds the index the
 * daemon would (for gzip that is a full pass, which also verifies CRCs).
 * zmount-info --members FILE...: the members of the tar in each, with the
 * decoded offset of their data (tooltar.h), one line each.
 * Exit status: 0 all readable, 1 bad usage, 2 some file failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fmttab.h"
#include "reader.h"
#include "tooltar.h"
#include "toolsrc.h"
#include "zlog.h"
#include "zmctx.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: zmount-info [S3 FLAGS] [--members] [--] FILE|s3://BUCKET/KEY...\n"
		     "Prints, per .xz, .gz or .zst file or object, one tab-separated line: the\n"
		     "format; its Streams and Blocks (xz), members and checkpoints (gzip) or\n"
		     "frames (zstd); compressed and uncompressed sizes; the largest unit.\n"
		     "  --members      instead, the members of the tar each file holds (or each\n"
		     "                 plain tar), one line each: FILE, the decoded offset of its\n"
		     "                 data, then as tar --full-time -tvf: mode (its first letter\n"
		     "                 the type), owner, size, time, name, link target\n"
		     "  -h, --help     this text\n"
		     "  -V, --version  the version\n" TOOLSRC_HELP
		     "Exit status: 0 all readable, 1 bad usage, 2 some file failed.\n");
}

/* The error line of a file that failed; its reason in why. */
static void error_line(const char *name, const char *why)
{
	char text[4 * sizeof(((struct zerr *)0)->msg)];

	zlog_escape(text, sizeof(text), why);
	printf("%s\terror\t%s\n", name, text);
}

/* One file's info line.  Returns 0, or 2 after its error line. */
static int info(const char *file, struct zmctx *zm, const struct reader_opts *ro)
{
	struct reader_info in;
	struct reader *r;
	struct zerr why = { 0 };
	char line[1024], name[4 * PATH_MAX];
	int ret = toolsrc_reader(file, zm, ro, &r, &why);

	/* Tab-separated, one line per file: escape tabs and newlines in names. */
	zlog_escape(name, sizeof(name), file);
	if (ret < 0) {
		error_line(name, why.msg[0] ? why.msg : strerror(-ret));
		return 2;
	}
	reader_get_info(r, &in);
	/* the format's own fields (fmttab_info_line) */
	fmttab_info_line(in.fmt, &in, line, sizeof(line));
	printf("%s\t%s\n", name, line);
	reader_close(r);
	return 0;
}

/* One line per member of the tar in file; a damaged tar lists the members before the
 * damage, then its error line.  Returns 0, or 2. */
static int members(const char *file, struct zmctx *zm, const struct reader_opts *ro)
{
	static char line[12 * PATH_MAX];
	struct tooltar tt;
	struct zerr why;
	int ret = tooltar_open(&tt, "zmount-info", file, zm, ro, &why);

	if (ret == 0) {
		ret = tooltar_scan(&tt, &why);
		for (size_t i = 0; i < tt.t.n; i++) {
			tooltar_line(&tt, &tt.t.m[i], '\t', line, sizeof(line));
			printf("%s\t%" PRIu64 "\t%s\n", tt.name, tt.t.m[i].data_off, line);
		}
		if (ret)
			fprintf(stderr, "zmount-info: %s: %s\n", tt.name, why.msg);
	}
	if (ret)
		error_line(tt.name, why.msg);
	tooltar_close(&tt);
	return ret ? 2 : 0;
}

int main(int argc, char *argv[])
{
	struct reader_opts ro;
	struct zmctx *zm;
	int status = 0, first = 1, list = 0;

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
	if (argc > first && strcmp(argv[first], "--members") == 0) {
		list = 1;
		first++;
	}
	if (argc > first && strcmp(argv[first], "--") == 0)
		first++;
	else if (argc > first && argv[first][0] == '-' && argv[first][1]) {
		fprintf(stderr, "zmount-info: unknown option '%s' (see zmount-info --help)\n",
			argv[first]);
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
	for (int i = first; i < argc; i++)
		status |= list ? members(argv[i], zm, &ro) : info(argv[i], zm, &ro);
	toolsrc_end();
	zmctx_free(zm);
	return status;
}

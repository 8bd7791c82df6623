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

#include "reader.h"
#include "zlog.h"
#include "zmctx.h"

static void checks(uint32_t mask, char *out, size_t len)
{
	static const struct {
		unsigned id;
		const char *name;
	} names[] = { { 0, "None" }, { 1, "CRC32" }, { 4, "CRC64" }, { 10, "SHA-256" } };
	size_t used = 0;

	out[0] = '\0';
	for (unsigned id = 0; id < 32 && used < len; id++) {
		const char *name = NULL;
		char other[16];

		if (!(mask & (1u << id)))
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (names[i].id == id)
				name = names[i].name;
		if (!name) {
			snprintf(other, sizeof(other), "Unknown-%u", id);
			name = other;
		}
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", name);
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: zmount-info [--] FILE...\n"
		     "Prints, per .xz, .gz or .zst file, one tab-separated line: the format; its\n"
		     "Streams and Blocks (xz), members and checkpoints (gzip) or frames (zstd);\n"
		     "compressed and uncompressed sizes; the largest unit.\n"
		     "  -h, --help     this text\n"
		     "  -V, --version  the version\n"
		     "Exit status: 0 all readable, 1 bad usage, 2 some file failed.\n");
}

int main(int argc, char *argv[])
{
	struct reader_opts ro;
	struct zmctx *zm;
	int status = 0, first = 1;

	zlog_set_name("zmount-info");
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
		fprintf(stderr, "zmount-info: unknown option '%s' (see zmount-info --help)\n", argv[1]);
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
		char ck[128], name[4 * PATH_MAX], why_text[4 * sizeof(why.msg)];
		int ret = reader_open(argv[i], zm, &ro, &r, &why);

		/* Tab-separated, one line per file: escape tabs and newlines in names. */
		zlog_escape(name, sizeof(name), argv[i]);
		if (ret < 0) {
			zlog_escape(why_text, sizeof(why_text), why.msg[0] ? why.msg : strerror(-ret));
			printf("%s\terror\t%s\n", name, why_text);
			status = 2;
			continue;
		}
		reader_get_info(r, &in);
		if (in.fmt == PROBE_XZ) {
			checks(in.checks, ck, sizeof(ck));
			printf("%s\txz\tstreams=%" PRIu64 "\tblocks=%" PRIu64 "\tcompressed=%" PRIu64
			       "\tuncompressed=%" PRIu64 "\tmax_block=%" PRIu64 "\tcheck=%s\tpadding=%" PRIu64 "\n",
			       name, in.streams, in.blocks, in.csize, in.usize, in.max_block, ck,
			       in.padding);
		} else if (in.fmt == PROBE_ZSTD) {
			printf("%s\tzstd\tframes=%" PRIu64 "\tcompressed=%" PRIu64
			       "\tuncompressed=%" PRIu64 "\tmax_frame=%" PRIu64 "\tskippable=%" PRIu64 "\n",
			       name, in.streams, in.csize, in.usize, in.max_block, in.padding);
		} else {
			printf("%s\tgzip\tmembers=%" PRIu64 "\tcheckpoints=%" PRIu64
			       "\tcompressed=%" PRIu64 "\tuncompressed=%" PRIu64 "\tmax_span=%" PRIu64
			       "\ttrailing=%" PRIu64 "\n",
			       name, in.streams, in.blocks, in.csize, in.usize, in.max_block, in.padding);
		}
		reader_close(r);
	}
	zmctx_free(zm);
	return status;
}

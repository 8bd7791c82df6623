/* SPDX-License-Identifier: MIT */
/*
 * fuzz_seed_idx DIR SPAN FILE.gz...: saves the gzip index of each FILE in
 * DIR with the project's own code (gzdec_index_build, idxfile_save), so the
 * idxfile fuzzer starts from real index files.  Files whose index cannot be
 * built (the bad-* cases) are skipped with a note.  Exit status 0 when at
 * least one index was saved.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gzdec.h"
#include "idxfile.h"
#include "idxlocal.h"

static int save_one(const char *dir, uint64_t span, const char *file)
{
	char abs[PATH_MAX];
	struct idxfile_id id;
	struct gzdec_index *idx;
	struct idxstore *store = NULL;
	struct zerr err = { 0 };
	struct zsrc *src;
	int fd, ret;

	if (!realpath(file, abs)) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return -errno;
	}
	fd = open(abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", abs, strerror(errno));
		return -errno;
	}
	ret = zsrc_local(fd, &src);
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", abs, strerror(-ret));
		return ret;
	}
	ret = idxfile_identify(src, &id);
	if (ret == 0)
		ret = gzdec_index_build(src, id.size, span, &idx, &err);
	if (ret < 0) {
		zsrc_put(src);
		fprintf(stderr, "skipped %s: %s\n", file, err.msg[0] ? err.msg : strerror(-ret));
		return ret;
	}
	ret = idxlocal_store(dir, &store);
	if (ret == 0)
		ret = idxfile_save(store, abs, &id, idx,
				   NULL); /* hashes the source through id.src */
	idxstore_free(store);
	zsrc_put(src);
	gzdec_index_free(idx);
	if (ret < 0)
		fprintf(stderr, "%s: cannot save its index in %s: %s\n", file, dir, strerror(-ret));
	return ret;
}

int main(int argc, char **argv)
{
	int saved = 0;
	char *end;
	unsigned long long span;

	if (argc < 4) {
		fprintf(stderr, "usage: fuzz_seed_idx DIR SPAN FILE.gz...\n");
		return 2;
	}
	span = strtoull(argv[2], &end, 10);
	if (*end || span == 0) {
		fprintf(stderr, "bad span '%s'\n", argv[2]);
		return 2;
	}
	for (int i = 3; i < argc; i++)
		saved += save_one(argv[1], span, argv[i]) == 0;
	printf("fuzz_seed_idx: saved %d of %d indexes in %s\n", saved, argc - 3, argv[1]);
	return saved > 0 ? 0 : 1;
}

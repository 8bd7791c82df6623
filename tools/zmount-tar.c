/* SPDX-License-Identifier: MIT */
/*
 * zmount-tar: the member table of a tar inside an .xz, .gz or .zst file
 * (or s3:// object), read through the same reader the daemon uses, without
 * a mount.  A development tool until the mount shows tars as directories
 * (issue 34): not installed.
 *   zmount-tar list [-o] [-T] [-t TABLE] FILE  members, as tar tvf lists them
 *   zmount-tar cat [-v] [-t TABLE] FILE MEMBER a member's bytes
 *   zmount-tar save FILE TABLE                 the table, in its saved form
 * Exit status: 0 done, 1 bad usage or not an archive, 2 a read failed or
 * the tar is damaged (the members before the damage are still listed).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmttab.h"
#include "reader.h"
#include "tarscan.h"
#include "tartab.h"
#include "toolsrc.h"
#include "zlog.h"
#include "zmctx.h"

#define CACHE_SIZE (64u << 20)
#define BUF	   (1u << 20)
#define TABLE_CAP  ((size_t)1 << 30) /* the tool's cap on a table's counted bytes */

#define LIST_OFFSETS 1 /* -o */
#define LIST_FULL    2 /* -T */
#define STATS	     4 /* -v */

struct tool {
	const char *file; /* as given */
	char name[4 * PATH_MAX];
	struct zmctx *zm;
	struct reader *r; /* NULL: a plain tar, read from fd */
	int fd;
	uint64_t size;
	struct tartab t;
	char *buf;
};

static void on_drop(void *arg, uint64_t off, const char *reason, const char *name)
{
	struct tool *tl = arg;
	char esc[4 * PATH_MAX];

	zlog_escape(esc, sizeof(esc), name);
	fprintf(stderr, "zmount-tar: %s: member at offset %" PRIu64 " left out (%s): %s\n",
		tl->name, off, reason, esc);
}

/* Decoded bytes at off: through the reader, or straight from a plain tar. */
static ssize_t read_at(struct tool *tl, void *buf, size_t n, uint64_t off)
{
	ssize_t k;

	if (tl->r)
		return reader_pread(tl->r, buf, n, off);
	do
		k = pread(tl->fd, buf, n, (off_t)off);
	while (k < 0 && errno == EINTR);
	return k < 0 ? -errno : k;
}

static const char *read_error(struct tool *tl, ssize_t n, struct zerr *why)
{
	if (tl->r && reader_last_error(tl->r, why) < 0 && why->msg[0])
		return why->msg;
	return strerror((int)-n);
}

/* The table by one sequential pass, up to the end-of-archive block.  0, 2 (a read failed or
 * the tar is damaged: the members before it are in the table). */
static int scan(struct tool *tl)
{
	struct tarscan *s;
	uint64_t off = 0;
	struct zerr why;
	int ret = 0;

	if (tarscan_new(&tl->t, tl->size, on_drop, tl, &s) < 0)
		return fprintf(stderr, "zmount-tar: out of memory\n"), 2;
	while (!tarscan_done(s)) {
		ssize_t n = read_at(tl, tl->buf, BUF, off);

		if (n < 0) {
			fprintf(stderr, "zmount-tar: %s: offset %" PRIu64 ": %s\n", tl->name, off,
				read_error(tl, n, &why));
			ret = 2;
			break;
		}
		if (n == 0 ? tarscan_finish(s) : tarscan_feed(s, tl->buf, (size_t)n)) {
			tarscan_error(s, &why);
			fprintf(stderr, "zmount-tar: %s: %s\n", tl->name, why.msg);
			ret = 2;
			break;
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
	}
	tarscan_free(s);
	return ret;
}

/* The table from a file that zmount-tar save wrote for this archive.  0 or 2. */
static int load(struct tool *tl, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 2;
	struct stat st;
	uint8_t *b = NULL;
	struct zerr why;

	if (fd < 0 || fstat(fd, &st) < 0 || !(b = malloc((size_t)st.st_size + 1)) ||
	    pread(fd, b, (size_t)st.st_size, 0) != st.st_size)
		fprintf(stderr, "zmount-tar: %s: cannot read: %s\n", path, strerror(errno));
	else if (tartab_decode(&tl->t, b, (size_t)st.st_size, tl->size, &why) < 0)
		fprintf(stderr, "zmount-tar: %s: %s\n", path, why.msg);
	else
		ret = 0;
	free(b);
	if (fd >= 0)
		close(fd);
	return ret;
}

static char type_char(const struct tar_member *m)
{
	static const char c[TAR_TYPES] = { '-', 'd', 'l', 'h', 'c', 'b', 'p' };

	return c[m->type];
}

static void mode_str(const struct tar_member *m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = type_char(m);
	for (int i = 0; i < 9; i++)
		out[1 + i] = m->mode & (0400u >> i) ? rwx[i] : '-';
	if (m->mode & 04000)
		out[3] = m->mode & 0100 ? 's' : 'S';
	if (m->mode & 02000)
		out[6] = m->mode & 010 ? 's' : 'S';
	if (m->mode & 01000)
		out[9] = m->mode & 01 ? 't' : 'T';
	out[10] = 0;
}

/* One line as tar tvf writes it (times in the local zone), offsets first with -o, times to
 * the second (nanosecond where the tar has them) with -T as tar --full-time. */
static void list_one(const struct tartab *t, const struct tar_member *m, int flags)
{
	char mode[11], when[48], owner[80], ids[2][16];
	const char *un = tartab_str(t, m->uname), *gn = tartab_str(t, m->gname);
	time_t tt = (time_t)m->mtime;
	struct tm tm;

	mode_str(m, mode);
	snprintf(ids[0], sizeof(ids[0]), "%" PRIu32, m->uid);
	snprintf(ids[1], sizeof(ids[1]), "%" PRIu32, m->gid);
	snprintf(owner, sizeof(owner), "%s/%s", *un ? un : ids[0], *gn ? gn : ids[1]);
	if (!localtime_r(&tt, &tm) ||
	    !strftime(when, sizeof(when) - 16,
		      flags & LIST_FULL ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M", &tm))
		snprintf(when, sizeof(when) - 16, "%" PRId64, m->mtime);
	if ((flags & LIST_FULL) && m->mtime_ns) {
		char *e = when + strlen(when);

		/* as tar --full-time: the fraction without its trailing zeros */
		snprintf(e, 16, ".%09" PRIu32, m->mtime_ns);
		for (e += strlen(e) - 1; *e == '0'; e--)
			*e = 0;
	}
	if (flags & LIST_OFFSETS)
		printf("%" PRIu64 " %" PRIu64 " ", m->hdr_off, m->data_off);
	printf("%s %s %" PRIu64 " %s %s", mode, owner, m->size, when, tartab_name(t, m));
	if (m->type == TAR_SYMLINK)
		printf(" -> %s", tartab_str(t, m->link));
	else if (m->type == TAR_HARDLINK)
		printf(" link to %s", tartab_str(t, m->link));
	putchar('\n');
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The last member named name (in normal form), following a hard link to its file. */
static const struct tar_member *find(const struct tartab *t, const char *name)
{
	char norm[PATH_MAX + 1];
	const char *why;
	int n = tartab_name_check(name, strlen(name), norm, &why);

	for (size_t i = t->n; n > 0 && i-- > 0;)
		if (strcmp(tartab_name(t, &t->m[i]), norm) == 0)
			return t->m[i].type == TAR_HARDLINK ? tartab_link_target(t, i) : &t->m[i];
	return NULL;
}

/* Writes member m's bytes: runs of the archive's decoded bytes, zeros for sparse holes. */
static int cat_member(struct tool *tl, const struct tar_member *m)
{
	uint64_t off = 0, aoff, run;
	int k;
	struct zerr why;

	while ((k = tartab_locate(&tl->t, m, off, &aoff, &run)) >= 0) {
		size_t want = run < BUF ? (size_t)run : BUF;
		ssize_t n = (ssize_t)want;

		if (k == 0)
			memset(tl->buf, 0, want);
		else
			n = read_at(tl, tl->buf, want, aoff);
		if (n <= 0) {
			fprintf(stderr, "zmount-tar: %s: offset %" PRIu64 ": %s\n", tl->name, aoff,
				n == 0 ? "the archive ends early" : read_error(tl, n, &why));
			return 2;
		}
		if (write_all(STDOUT_FILENO, tl->buf, (size_t)n) < 0) {
			fprintf(stderr, "zmount-tar: write: %s\n", strerror(errno));
			return 2;
		}
		off += (uint64_t)n;
	}
	return 0;
}

static int save(struct tool *tl, const char *path)
{
	uint8_t *b;
	size_t len;
	int fd;

	if (tartab_encode(&tl->t, tl->size, &b, &len) < 0)
		return fprintf(stderr, "zmount-tar: out of memory\n"), 2;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, b, len) < 0 || close(fd) < 0) {
		fprintf(stderr, "zmount-tar: %s: %s\n", path, strerror(errno));
		free(b);
		return 2;
	}
	free(b);
	fprintf(stderr, "zmount-tar: %s: %zu members, table %zu bytes in memory, %zu saved\n",
		tl->name, tl->t.n, tartab_bytes(&tl->t), len);
	return 0;
}

/* The reader, or for a local file that is none of its formats the file itself, read as a
 * plain tar.  Returns 0, or the exit status. */
static int open_archive(struct tool *tl, const struct reader_opts *ro)
{
	struct stat st;
	int ret = toolsrc_reader(tl->file, tl->zm, ro, &tl->r, NULL);

	tl->fd = -1;
	if (ret == 0) {
		tl->size = reader_size(tl->r);
		return 0;
	}
	if (ret != -ENOTSUP)
		return 2;
	if (toolsrc_is_url(tl->file)) {
		fprintf(stderr, "zmount-tar: %s: not an %s file\n", tl->name, fmttab_names());
		return 1;
	}
	tl->fd = open(tl->file, O_RDONLY | O_CLOEXEC);
	if (tl->fd < 0 || fstat(tl->fd, &st) < 0) {
		fprintf(stderr, "zmount-tar: %s: %s\n", tl->name, strerror(errno));
		return 2;
	}
	tl->size = (uint64_t)st.st_size;
	return 0;
}

static int usage(int ret)
{
	fprintf(ret ? stderr : stdout,
		"usage: zmount-tar [S3 FLAGS] COMMAND ...\n"
		"The members of a tar inside an .xz, .gz or .zst file or object, or a plain tar.\n"
		"  list [-o] [-T] [-t TABLE] FILE  list them as tar tvf does (-o: header and\n"
		"                                data offsets first; -T: as --full-time)\n"
		"  cat [-v] [-t TABLE] FILE MEMBER  write one member's bytes to stdout (-v: the\n"
		"                                bytes decoded for it, on stderr)\n"
		"  save FILE TABLE               write the member table to TABLE\n"
		"  -t TABLE reads the table save wrote instead of scanning the archive.\n" TOOLSRC_HELP
		"Exit status: 0 done, 1 usage or not an archive, 2 a read failed or the tar\n"
		"is damaged.\n");
	return ret;
}

/* The command on tl->r; returns the exit status. */
static int run(struct tool *tl, const char *cmd, const char *table, int flags, char **rest)
{
	const struct tar_member *m;
	int ret = table ? load(tl, table) : scan(tl);

	if (strcmp(cmd, "list") == 0) {
		for (size_t i = 0; i < tl->t.n; i++)
			list_one(&tl->t, &tl->t.m[i], flags);
		return ret;
	}
	if (strcmp(cmd, "save") == 0)
		return ret ? ret : save(tl, rest[0]);
	m = find(&tl->t, rest[0]);
	if (!m || m->type != TAR_FILE) {
		zlog_escape(tl->buf, BUF, rest[0]);
		fprintf(stderr, "zmount-tar: %s: %s: %s\n", tl->name, tl->buf,
			m ? "not a regular file" : "no such member");
		return ret ? ret : 1;
	}
	ret = cat_member(tl, m);
	if ((flags & STATS) && tl->r) {
		struct reader_info in;

		/* what random access cost: decoded bytes against the member's */
		reader_get_info(tl->r, &in);
		fprintf(stderr,
			"zmount-tar: %s: member of %" PRIu64 " bytes at %" PRIu64 ": %" PRIu64
			" bytes decoded of %" PRIu64 "\n",
			tl->name, m->size, m->data_off, in.decoded, in.usize);
	}
	return ret;
}

int main(int argc, char *argv[])
{
	struct tool tl = { 0 };
	struct reader_opts ro;
	const char *table = NULL, *cmd;
	int flags = 0, opt, ret, want;

	zlog_set_name("zmount-tar");
	if (toolsrc_flags("zmount-tar", &argc, argv))
		return 1;
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
		return usage(0);
	if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0))
		return printf("zmount-tar %s\n", ZMOUNT_VERSION), 0;
	if (argc < 2)
		return usage(1);
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "+oTvt:")) != -1) {
		if (opt == 'o')
			flags |= LIST_OFFSETS;
		else if (opt == 'T')
			flags |= LIST_FULL;
		else if (opt == 'v')
			flags |= STATS;
		else if (opt == 't')
			table = optarg;
		else
			return usage(1);
	}
	want = strcmp(cmd, "list") == 0 ? 1 : strcmp(cmd, "cat") == 0 || strcmp(cmd, "save") == 0;
	if (!want || argc - optind != want + (strcmp(cmd, "list") != 0))
		return usage(1);
	tl.file = argv[optind];
	zlog_escape(tl.name, sizeof(tl.name), tl.file);
	tartab_init(&tl.t, TABLE_CAP);
	reader_opts_default(&ro, CACHE_SIZE);
	tl.buf = malloc(BUF);
	if (!tl.buf || zmctx_new(CACHE_SIZE, &tl.zm) < 0)
		return fprintf(stderr, "zmount-tar: out of memory\n"), 1;
	ret = open_archive(&tl, &ro);
	if (ret == 0)
		ret = run(&tl, cmd, table, flags, argv + optind + 1);
	if (tl.fd >= 0)
		close(tl.fd);
	reader_close(tl.r);
	toolsrc_end();
	tartab_free(&tl.t);
	zmctx_free(tl.zm);
	free(tl.buf);
	return ret;
}

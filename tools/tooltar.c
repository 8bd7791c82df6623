/* SPDX-License-Identifier: MIT */
/* The members of a tar inside an archive, for the tools (tooltar.h). */
#include "tooltar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmttab.h"
#include "tarscan.h"
#include "toolsrc.h"
#include "zlog.h"

#define BUF	  (1u << 20)
#define TABLE_CAP ((size_t)1 << 30) /* the tools' cap on a table's counted bytes */

static void on_drop(void *arg, uint64_t off, const char *reason, const char *name)
{
	struct tooltar *tt = arg;
	char esc[4 * PATH_MAX];

	zlog_escape(esc, sizeof(esc), name);
	fprintf(stderr, "%s: %s: member at offset %" PRIu64 " left out (%s): %s\n", tt->tool,
		tt->name, off, reason, esc);
}

/* Decoded bytes at off: through the reader, or straight from a plain tar. */
static ssize_t read_at(struct tooltar *tt, void *buf, size_t n, uint64_t off)
{
	ssize_t k;

	if (tt->r)
		return reader_pread(tt->r, buf, n, off);
	do
		k = pread(tt->fd, buf, n, (off_t)off);
	while (k < 0 && errno == EINTR);
	return k < 0 ? -errno : k;
}

/* The reader's own reason for a failed read (its log line said it too), else errno's. */
static void read_error(struct tooltar *tt, ssize_t n, uint64_t off, struct zerr *why)
{
	struct zerr r;
	const char *msg = strerror((int)-n);

	if (tt->r && reader_last_error(tt->r, &r) < 0 && r.msg[0])
		msg = r.msg;
	memset(why, 0, sizeof(*why));
	snprintf(why->msg, sizeof(why->msg), "offset %" PRIu64 ": %.200s", off, msg);
}

int tooltar_open(struct tooltar *tt, const char *tool, const char *file, struct zmctx *zm,
		 const struct reader_opts *ro, struct zerr *why)
{
	struct stat st;
	int ret;

	memset(tt, 0, sizeof(*tt));
	memset(why, 0, sizeof(*why));
	tt->tool = tool;
	tt->fd = -1;
	zlog_escape(tt->name, sizeof(tt->name), file);
	tartab_init(&tt->t, TABLE_CAP);
	tt->buf = malloc(BUF);
	if (!tt->buf) {
		snprintf(why->msg, sizeof(why->msg), "out of memory");
		fprintf(stderr, "%s: %s\n", tool, why->msg);
		return 2;
	}
	ret = toolsrc_reader(file, zm, ro, &tt->r, why);
	if (ret == 0) {
		tt->size = reader_size(tt->r);
		return 0;
	}
	if (ret != -ENOTSUP) {
		if (!why->msg[0])
			snprintf(why->msg, sizeof(why->msg), "%s", strerror(-ret));
		return 2; /* the reader logged why */
	}
	if (toolsrc_is_url(file)) {
		snprintf(why->msg, sizeof(why->msg), "not an %s file", fmttab_names());
		fprintf(stderr, "%s: %s: %s\n", tool, tt->name, why->msg);
		return 1;
	}
	tt->fd = open(file, O_RDONLY | O_CLOEXEC);
	if (tt->fd < 0 || fstat(tt->fd, &st) < 0) {
		snprintf(why->msg, sizeof(why->msg), "%s", strerror(errno));
		fprintf(stderr, "%s: %s: %s\n", tool, tt->name, why->msg);
		return 2;
	}
	tt->size = (uint64_t)st.st_size;
	return 0;
}

/* An archive that fails at its very first header is no tar at all: say that first. */
static void scan_error(const struct tooltar *tt, struct tarscan *s, struct zerr *why)
{
	char msg[sizeof(why->msg)];

	tarscan_error(s, why);
	if (tt->t.n == 0 && tt->t.dropped == 0 && why->coff == 0) {
		snprintf(msg, sizeof(msg), "not a tar: %.240s", why->msg);
		memcpy(why->msg, msg, sizeof(msg));
	}
}

int tooltar_scan(struct tooltar *tt, struct zerr *why)
{
	struct tarscan *s;
	uint64_t off = 0;
	int ret = 0;

	memset(why, 0, sizeof(*why));
	if (tarscan_new(&tt->t, tt->size, on_drop, tt, &s) < 0) {
		snprintf(why->msg, sizeof(why->msg), "out of memory");
		return 2;
	}
	while (!tarscan_done(s)) {
		ssize_t n = read_at(tt, tt->buf, BUF, off);

		if (n < 0) {
			read_error(tt, n, off, why);
			ret = 2;
			break;
		}
		if (n == 0 ? tarscan_finish(s) : tarscan_feed(s, tt->buf, (size_t)n)) {
			scan_error(tt, s, why);
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

const struct tar_member *tooltar_find(const struct tooltar *tt, const char *name)
{
	const struct tartab *t = &tt->t;
	char norm[PATH_MAX + 1];
	const char *why;
	size_t len = strlen(name);
	int n = len <= PATH_MAX ? tartab_name_check(name, len, norm, &why) : -1;

	for (size_t i = t->n; n > 0 && i-- > 0;)
		if (strcmp(tartab_name(t, &t->m[i]), norm) == 0)
			return t->m[i].type == TAR_HARDLINK ? tartab_link_target(t, i) : &t->m[i];
	return NULL;
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

int tooltar_cat(struct tooltar *tt, const struct tar_member *m, int fd)
{
	uint64_t off = 0, aoff = 0, run;
	struct zerr why;
	int k;

	while ((k = tartab_locate(&tt->t, m, off, &aoff, &run)) >= 0) {
		size_t want = run < BUF ? (size_t)run : BUF;
		ssize_t n = (ssize_t)want;

		if (k == 0)
			memset(tt->buf, 0, want); /* a sparse member's hole */
		else
			n = read_at(tt, tt->buf, want, aoff);
		if (n <= 0) {
			if (n == 0)
				snprintf(why.msg, sizeof(why.msg),
					 "offset %" PRIu64 ": the archive ends early", aoff);
			else
				read_error(tt, n, aoff, &why);
			fprintf(stderr, "%s: %s: %s\n", tt->tool, tt->name, why.msg);
			return 2;
		}
		if (write_all(fd, tt->buf, (size_t)n) < 0) {
			fprintf(stderr, "%s: write: %s\n", tt->tool, strerror(errno));
			return 2;
		}
		off += (uint64_t)n;
	}
	return 0;
}

static void mode_str(const struct tar_member *m, char out[11])
{
	static const char type[TAR_TYPES] = { '-', 'd', 'l', 'h', 'c', 'b', 'p' };
	static const char rwx[] = "rwxrwxrwx";

	out[0] = type[m->type];
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

/* As tar --full-time: local time, and the fraction without its trailing zeros. */
static void time_str(const struct tar_member *m, char *out, size_t n)
{
	time_t tt = (time_t)m->mtime;
	struct tm tm;
	size_t len;

	if (!localtime_r(&tt, &tm) || !(len = strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))) {
		snprintf(out, n, "%" PRId64, m->mtime);
		return;
	}
	if (m->mtime_ns && len + 11 <= n) {
		char *e = out + len;

		snprintf(e, n - len, ".%09" PRIu32, m->mtime_ns);
		for (e += strlen(e) - 1; *e == '0'; e--)
			*e = 0;
	}
}

void tooltar_line(const struct tooltar *tt, const struct tar_member *m, char sep, char *out,
		  size_t n)
{
	const struct tartab *t = &tt->t;
	const char *un = tartab_str(t, m->uname), *gn = tartab_str(t, m->gname);
	const char *lk = m->type == TAR_SYMLINK	   ? "-> "
			 : m->type == TAR_HARDLINK ? "link to "
						   : NULL;
	char mode[11], when[48], uid[16], gid[16], name[4 * PATH_MAX];
	int k;

	mode_str(m, mode);
	time_str(m, when, sizeof(when));
	snprintf(uid, sizeof(uid), "%" PRIu32, m->uid);
	snprintf(gid, sizeof(gid), "%" PRIu32, m->gid);
	zlog_escape(name, sizeof(name), tartab_name(t, m));
	k = snprintf(out, n, "%s%c%s/%s%c%" PRIu64 "%c%s%c%s", mode, sep, *un ? un : uid,
		     *gn ? gn : gid, sep, m->size, sep, when, sep, name);
	if (lk && k >= 0 && (size_t)k < n) {
		zlog_escape(name, sizeof(name), tartab_str(t, m->link));
		snprintf(out + k, n - (size_t)k, "%c%s%s", sep, lk, name);
	}
}

void tooltar_close(struct tooltar *tt)
{
	if (tt->fd >= 0)
		close(tt->fd);
	tt->fd = -1;
	reader_close(tt->r);
	tt->r = NULL;
	tartab_free(&tt->t);
	free(tt->buf);
	tt->buf = NULL;
}

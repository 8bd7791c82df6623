/* SPDX-License-Identifier: MIT */
/*
 * The table of formats (fmt.h) and the lookups fs/ and tools/ use
 * (fmttab.h).  This is the only list of formats in the tree: adding one is
 * its fmt_NAME.c and one line here.  A test build adds a line through
 * ZMOUNT_FMT_EXTRA (the name of one more `const struct fmt`), so that a
 * dummy format proves nothing else needs an edit (tests/fmt/).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "idxrec.h"
#include "tarsave.h"
#include "src.h"
#include "reader_int.h"
#include "zmctx_int.h"

extern const struct fmt fmt_xz, fmt_gzip, fmt_zstd;
#ifdef ZMOUNT_FMT_EXTRA
extern const struct fmt ZMOUNT_FMT_EXTRA;
#endif

/* Ids are positions + 1 (fmttab.h).  The order is also the sniffs' order: xz before all. */
static const struct fmt *const table[] = {
	&fmt_xz,
	&fmt_gzip,
	&fmt_zstd,
#ifdef ZMOUNT_FMT_EXTRA
	&ZMOUNT_FMT_EXTRA,
#endif
};

#define NFMT ((int)(sizeof(table) / sizeof(table[0])))
_Static_assert(sizeof(table) / sizeof(table[0]) < FMTTAB_MAX, "FMTTAB_MAX too small");

/* Bytes of the file's start the sniffs get (a format may pread more). */
#define HEAD 16

const struct fmt *fmt_get(int id)
{
	return id >= 1 && id <= NFMT ? table[id - 1] : NULL;
}

int fmt_sniff(struct zsrc *src, const struct fmt **f)
{
	unsigned char head[HEAD];
	ssize_t n = zsrc_pread(src, head, sizeof(head), 0);

	*f = NULL;
	if (n < 0)
		return (int)n;
	for (int i = 0; i < NFMT; i++)
		if (table[i]->sniff(src, head, (size_t)n)) {
			*f = table[i];
			return i + 1;
		}
	return 0;
}

void *fmt_state(const struct reader *r)
{
	return r->ctx->fstate[r->fmt];
}

int fmttab_by_magic(struct zsrc *src)
{
	const struct fmt *f;

	return fmt_sniff(src, &f);
}

int fmttab_count(void)
{
	return NFMT;
}

const char *fmttab_name(int id)
{
	return fmt_get(id) ? fmt_get(id)->name : "plain";
}

const char *fmttab_unit(int id)
{
	return fmt_get(id) ? fmt_get(id)->unit : "file";
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len > sl && strcmp(s + len - sl, suffix) == 0; /* a stem, however short */
}

/* The longest suffix of name any format has: its id, and the suffix in *sx. */
static int match(const char *name, const struct fmt_suffix **sx)
{
	size_t len = strlen(name), best = 0;
	int id = 0;

	for (int i = 0; i < NFMT; i++)
		for (const struct fmt_suffix *s = table[i]->suffixes; s->ext; s++)
			if (strlen(s->ext) > best && ends_with(name, len, s->ext)) {
				best = strlen(s->ext);
				*sx = s;
				id = i + 1;
			}
	return id;
}

int fmttab_strip(const char *name, char *out, size_t outlen)
{
	const struct fmt_suffix *sx = NULL;
	int id = match(name, &sx);
	size_t stem;

	if (!id)
		return 0;
	stem = strlen(name) - strlen(sx->ext);
	if (stem + strlen(sx->add) + 1 > outlen)
		return 0;
	memcpy(out, name, stem);
	strcpy(out + stem, sx->add);
	return id;
}

int fmttab_by_suffix(const char *name)
{
	const struct fmt_suffix *sx;

	return match(name, &sx);
}

enum fmttab_bg fmttab_bg(int id)
{
	return fmt_get(id) ? fmt_get(id)->bg : FMTTAB_BG_NONE;
}

bool fmttab_list_opens(int id)
{
	return fmt_get(id) && fmt_get(id)->list_open;
}

bool fmttab_salvages(int id)
{
	return fmt_get(id) && fmt_get(id)->salvage;
}

bool fmttab_open_verifies(int id)
{
	return fmt_get(id) && fmt_get(id)->open_verifies;
}

bool fmttab_has_ckpts(int id)
{
	return fmt_get(id) && fmt_get(id)->ck;
}

bool fmttab_saves(int id)
{
	return fmt_get(id) && fmt_get(id)->saved;
}

bool fmttab_index_optional(int id)
{
	return fmt_get(id) && fmt_get(id)->index_optional;
}

int fmttab_saved(int id, const struct idxstore *store, const char *real, struct zsrc *src,
		 struct zerr *err)
{
	return fmttab_saves(id) ? fmt_get(id)->saved->fresh(store, real, src, err) : -ENOTSUP;
}

const struct fmt_saved *fmt_saved_kind(uint32_t kind)
{
	for (int i = 0; i < NFMT; i++)
		if (table[i]->saved && table[i]->saved->kind == kind)
			return table[i]->saved;
	if (kind == idxrec_tar_saved.kind)
		return &idxrec_tar_saved;
	return kind == idxrec_ckpt_saved.kind ? &idxrec_ckpt_saved : NULL;
}

const char *fmttab_counter(int id)
{
	return fmt_get(id) ? fmt_get(id)->counter : NULL;
}

int fmttab_info_line(int id, const struct reader_info *in, char *out, size_t len)
{
	return fmt_get(id) ? fmt_get(id)->info_line(in, out, len) : snprintf(out, len, "plain");
}

int fmttab_info_counts(int id, const struct reader_info *in, char *out, size_t len)
{
	if (len)
		out[0] = '\0';
	return fmt_get(id) ? fmt_get(id)->info_counts(in, out, len) : 0;
}

int fmttab_advice(int id, enum fmttab_advice what, const char *bs, char *out, size_t len)
{
	if (fmt_get(id))
		return fmt_get(id)->advice(what, bs, out, len);
	return snprintf(out, len, "%s",
			what == FMTTAB_UNIT	  ? "unit"
			: what == FMTTAB_NO_INDEX ? "not yet indexed, so its index was built"
						  : "");
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_make(void)
{
	size_t n = 0;

	for (int i = 0; i < NFMT && n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
				      i == 0	      ? ""
				      : i == NFMT - 1 ? " or "
						      : ", ",
				      table[i]->name);
}

const char *fmttab_names(void)
{
	pthread_once(&names_once, names_make);
	return names;
}

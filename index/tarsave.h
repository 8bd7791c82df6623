/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_TARSAVE_H
#define ZMOUNT_TARSAVE_H

/*
 * A tar's member table (tartab.h) saved in index_dir beside the archive's
 * other indexes ("<h>.zmt", kind IDXFILE_KIND_TAR), in idxfile.h's envelope
 * with its trust, identity and atomic-write rules: a table loads only for
 * the archive version it was built from, or for a renamed or copied one
 * whose whole-file hash matches.  The records are tartab_encode's form.
 *
 * Returns as idxfile_save_recs and idxfile_load_recs (idxfile.h); a load
 * fills t (initialised and empty; tartab_free it), which holds nothing a
 * scan could not have produced (tartab_decode's checks).  Any thread.
 */

#include <stdint.h>

#include "idxfile.h"
#include "tartab.h"

/* What a save hands the envelope (idxrec_tar.c). */
struct tarsave_recs {
	const uint8_t *blob; /* tartab_encode's */
	size_t len;
	uint64_t asize; /* the tar's decoded size */
	uint64_t members;
};

extern const struct fmt_saved idxrec_tar_saved;

int tarsave_save(const struct idxstore *store, const char *name, const struct idxfile_id *id,
		 const struct tartab *t, uint64_t asize, uint64_t *bytes_written);
int tarsave_load(const struct idxstore *store, const char *name, const struct idxfile_id *id,
		 struct tartab *t, struct zerr *err);

#endif

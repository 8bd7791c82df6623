/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_IDXTEE_H
#define ZMOUNT_IDXTEE_H

/*
 * The whole-file hash of a source, taken by a pass that reads it anyway.
 * A saved index records the XXH64 of its source's bytes (idxfile.h), which
 * saving used to read a second time after the pass that built the index:
 * for an object in a bucket, a second download of all of it (issue 32: a
 * first read of an S3 .gz fetched 2.04 times the object).
 *
 * idxtee_new returns a source that reads through src and feeds each byte
 * it returns the first time, in order from offset 0, to that hash; a read
 * that starts past the bytes hashed so far is passed through unhashed (the
 * hash then waits for a read that covers the gap).  idxtee_take hands the
 * hash to an identity once every byte of the source went through.
 *
 * Threads: a tee's pread is called by one thread at a time (the pass that
 * made it); its stat, tag and hint are src's and may run on any thread.
 */

#include <stdbool.h>

#include "idxfile.h"
#include "src.h"

/*
 * A tee over src, which it holds a reference to until its own last
 * zsrc_put; stat, tag, hint, pinned and remote are src's.  Returns 0 and
 * *out, -ENOMEM, or src's stat error (*out NULL).
 */
int idxtee_new(struct zsrc *src, struct zsrc **out);

/*
 * If tee (made by idxtee_new) has returned every one of id->size bytes,
 * sets id->hash to their whole-file hash, id->hashed, and returns true;
 * else leaves id alone and returns false.  id must be the identity of
 * the source under the tee (idxfile_identify): src_hash then trusts the
 * hash only while the source still has that identity.
 */
bool idxtee_take(struct zsrc *tee, struct idxfile_id *id);

#endif

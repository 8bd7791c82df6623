/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_READAHEAD_H
#define ZMOUNT_READAHEAD_H

/*
 * Read-ahead for a reader's sequential streams, on its context's pool
 * (readahead.c; reader.h says what a caller sees).  Internal to index/:
 * reader.c's views and close call it.  Any thread; each function takes
 * r->lock for its own bookkeeping and returns with no lock held.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reader;

/*
 * Notes a read of [off, off + len) (off < size, len > 0, not past the
 * end) and, if it continues a stream, queues the units that follow on
 * the pool (none without a pool or with opts.readahead 0).  Never waits
 * for a job; a full queue drops the rest.
 */
void readahead_note(struct reader *r, uint64_t off, size_t len);

/* Whether a read at off is near where a stream has got to (fill_get's seq). */
bool readahead_near(struct reader *r, uint64_t off);

/* Waits until r's queued read-ahead jobs have finished (reader_close, reader_detach). */
void readahead_wait(struct reader *r);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_HUGEMEM_H
#define ZMOUNT_HUGEMEM_H

#include <stddef.h>

/* The size of a transparent huge page on x86-64 and arm64 (4 KiB pages). */
#define HUGEMEM_PAGE ((size_t)2 << 20)

/*
 * len bytes of zeroed memory in a mapping of their own, starting on a
 * HUGEMEM_PAGE boundary and advised for transparent huge pages, or NULL
 * when out of memory.  For large buffers that are written soon and whole:
 * on a VM a fault per 4 KiB page costs more than filling the page, and one
 * fault per 2 MiB costs far less (doc/results/benchmarks.md).  Where THP is off,
 * the advice fails and this is the plain mapping malloc would have made.
 * Freed with hugemem_free(p, len), the same len.  Any thread.
 */
void *hugemem_alloc(size_t len);
void hugemem_free(void *p, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_PIO_H
#define ZMOUNT_PIO_H

/*
 * The codecs' one way to read a file: pread at an offset, retried on EINTR.
 * Returns the count (0 at end of file, fewer than len near it), or -errno
 * (-EINVAL for an offset past INT64_MAX).  Any thread; fd is borrowed.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

ssize_t pio_pread(int fd, void *buf, size_t len, uint64_t off);

#endif

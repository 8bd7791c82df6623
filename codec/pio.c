/* SPDX-License-Identifier: MIT */
#include "pio.h"

#include <errno.h>
#include <unistd.h>

ssize_t pio_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > INT64_MAX)
		return -EINVAL;
	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

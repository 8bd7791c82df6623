/* SPDX-License-Identifier: MIT */
#include "bdi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mountinfo writes space, tab, newline and backslash in paths as \ooo. */
static void unescape(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* The "major:minor" of the last mount on mnt into dev, or -ENOENT. */
static int find_dev(const char *mnt, char *dev, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		/* mount ID, parent ID, major:minor, root, mount point, ... */
		char *save, *tok = strtok_r(line, " ", &save), *mm = NULL, *mp = NULL;

		for (int i = 1; tok && i <= 4; i++) {
			tok = strtok_r(NULL, " ", &save);
			if (i == 2)
				mm = tok;
			else if (i == 4)
				mp = tok;
		}
		if (!mm || !mp)
			continue;
		unescape(mp);
		if (strcmp(mp, mnt) == 0 && strlen(mm) < size) {
			strcpy(dev, mm);
			ret = 0; /* keep going: a later line is a mount stacked on top */
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int bdi_set_read_ahead(const char *mnt, size_t bytes)
{
	char dev[64], path[128], val[32];
	int fd, ret = find_dev(mnt, dev, sizeof(dev));
	ssize_t n;

	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	snprintf(val, sizeof(val), "%zu\n", bytes / 1024);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	ret = n < 0 ? -errno : 0;
	close(fd);
	return ret;
}

/* SPDX-License-Identifier: MIT */
#include "bdi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* One mount at the path asked about. */
struct at {
	unsigned long id, parent;
	char dev[32]; /* "major:minor"; "" if it did not fit */
	int ours;     /* type BDI_FSTYPE, source src (any source if src is NULL) */
};

/*
 * Collects the mounts at mnt listed in mountinfo text f into *out (*n of
 * them; the caller frees *out).  Returns 0 or -ENOMEM.
 *
 * A line: ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
 */
static int collect(FILE *f, const char *mnt, const char *src, struct at **out, size_t *n)
{
	char *line = NULL;
	size_t cap = 0, acap = 0;
	int ret = 0;

	*out = NULL;
	*n = 0;
	while (getline(&line, &cap, f) > 0) {
		char *save, *tok[6], *type = NULL, *source = NULL, *t;
		int i;

		line[strcspn(line, "\n")] = '\0';
		for (i = 0, t = strtok_r(line, " ", &save); t && i < 6;
		     t = strtok_r(NULL, " ", &save))
			tok[i++] = t;
		if (i < 6)
			continue;
		/* Optional fields up to the lone "-", then type and source. */
		for (; t; t = strtok_r(NULL, " ", &save)) {
			if (strcmp(t, "-") == 0) {
				type = strtok_r(NULL, " ", &save);
				source = type ? strtok_r(NULL, " ", &save) : NULL;
				break;
			}
		}
		if (!type || !source)
			continue;
		unescape(tok[4]);
		if (strcmp(tok[4], mnt) != 0)
			continue;
		unescape(source);
		if (*n == acap) {
			size_t ncap = acap ? acap * 2 : 8;
			struct at *na = realloc(*out, ncap * sizeof(*na));

			if (!na) {
				ret = -ENOMEM;
				break;
			}
			*out = na;
			acap = ncap;
		}
		(*out)[*n].id = strtoul(tok[0], NULL, 10);
		(*out)[*n].parent = strtoul(tok[1], NULL, 10);
		if (strlen(tok[2]) < sizeof((*out)[*n].dev))
			strcpy((*out)[*n].dev, tok[2]);
		else
			(*out)[*n].dev[0] = '\0';
		(*out)[*n].ours =
			strcmp(type, BDI_FSTYPE) == 0 && (!src || strcmp(source, src) == 0);
		(*n)++;
	}
	free(line);
	return ret;
}

int bdi_find_dev(FILE *f, const char *mnt, const char *src, char *dev, size_t size)
{
	struct at *at;
	const char *found = NULL;
	size_t n;
	int ret = collect(f, mnt, src, &at, &n);

	for (size_t i = 0; ret == 0 && i < n; i++) {
		bool top = true;

		for (size_t j = 0; j < n && top; j++)
			if (j != i && at[j].parent == at[i].id)
				top = false; /* another mount at mnt sits on it */
		if (!top || !at[i].ours)
			continue;
		/* Copies of one mount made by propagation share its device. */
		if (found && strcmp(found, at[i].dev) != 0)
			ret = -EEXIST;
		found = at[i].dev;
	}
	if (ret == 0 && !found)
		ret = -ENOENT;
	if (ret == 0 && (!found[0] || strlen(found) >= size))
		ret = -ENAMETOOLONG;
	if (ret == 0)
		strcpy(dev, found);
	free(at);
	return ret;
}

int bdi_is_mounted(FILE *f, const char *mnt, const char *src)
{
	struct at *at;
	size_t n;
	int ret = collect(f, mnt, src, &at, &n);

	for (size_t i = 0; ret == 0 && i < n; i++)
		if (at[i].ours)
			ret = 1;
	free(at);
	return ret;
}

int bdi_set_read_ahead(const char *mnt, const char *src, size_t bytes)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char dev[64], path[128], val[32];
	ssize_t n;
	int fd, ret;

	if (!f)
		return -errno;
	ret = bdi_find_dev(f, mnt, src, dev, sizeof(dev));
	fclose(f);
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

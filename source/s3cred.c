/* SPDX-License-Identifier: MIT */
#include "s3cred.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void wipe_str(char *p)
{
	if (p) {
		explicit_bzero(p, strlen(p));
		free(p);
	}
}

void s3cred_free(struct s3cred *c)
{
	if (!c)
		return;
	wipe_str(c->access_key);
	wipe_str(c->secret_key);
	wipe_str(c->session_token);
	free(c);
}

static struct s3cred *make(const char *ak, const char *sk, const char *tok)
{
	struct s3cred *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->access_key = strdup(ak);
	c->secret_key = strdup(sk);
	c->session_token = tok && *tok ? strdup(tok) : NULL;
	if (!c->access_key || !c->secret_key || (tok && *tok && !c->session_token)) {
		s3cred_free(c);
		return NULL;
	}
	return c;
}

struct s3cred *s3cred_dup(const struct s3cred *c)
{
	return make(c->access_key, c->secret_key, c->session_token);
}

/* Strips blanks at both ends of s in place; returns the new start. */
static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (*s && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The three values of one profile, being read (malloc'ed). */
struct found {
	char *v[3];
};

static const char *const keys[3] = { "aws_access_key_id", "aws_secret_access_key",
				     "aws_session_token" };

/* Parses one "key = value" line of the wanted profile into f.  Returns 0 or -errno. */
static int take_line(char *line, struct found *f)
{
	char *eq = strchr(line, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	char *k = trim(line), *v = trim(eq + 1);

	for (int i = 0; i < 3; i++) {
		if (strcmp(k, keys[i]))
			continue;
		wipe_str(f->v[i]);
		f->v[i] = strdup(v);
		return f->v[i] ? 0 : -ENOMEM;
	}
	return 0; /* region, output and the like: not ours */
}

/* Reads profile from fp into f.  Returns 0, or -errno with err set. */
static int read_profile(FILE *fp, const char *file, const char *profile, struct found *f, char *err,
			size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	int in = 0, no = 0, rc = 0;

	while (getline(&line, &cap, fp) >= 0) {
		char *s = trim(line);
		size_t n = strlen(s);

		no++;
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			if (s[n - 1] != ']') {
				rc = -EINVAL;
				break;
			}
			s[n - 1] = '\0';
			in = !strcmp(trim(s + 1), profile);
			continue;
		}
		if (!in)
			continue;
		rc = take_line(s, f);
		if (rc)
			break;
	}
	if (!rc && ferror(fp))
		rc = -EIO;
	if (rc == -EINVAL)
		say(err, errlen, "%s:%d: not a [section] nor key = value", file, no);
	else if (rc)
		say(err, errlen, "%s: %s", file, strerror(-rc));
	if (line)
		explicit_bzero(line, cap);
	free(line);
	return rc;
}

static int load_file(const char *file, const char *profile, struct s3cred **out, char *err,
		     size_t errlen)
{
	struct found f = { { NULL, NULL, NULL } };
	FILE *fp = fopen(file, "re");
	int rc;

	if (!fp) {
		rc = -errno;
		say(err, errlen, "%s: %s", file, strerror(errno));
		return rc;
	}
	rc = read_profile(fp, file, profile, &f, err, errlen);
	fclose(fp);
	if (!rc && (!f.v[0] || !f.v[1])) {
		rc = -ENOENT;
		say(err, errlen,
		    "%s: profile [%s] has no aws_access_key_id and aws_secret_access_key", file,
		    profile);
	}
	if (!rc) {
		*out = make(f.v[0], f.v[1], f.v[2]);
		rc = *out ? 0 : -ENOMEM;
	}
	for (int i = 0; i < 3; i++)
		wipe_str(f.v[i]);
	return rc;
}

int s3cred_load(const char *file, const char *profile, struct s3cred **out, char *err,
		size_t errlen)
{
	char path[4096];

	*out = NULL;
	if (!profile)
		profile = getenv("AWS_PROFILE");
	if (!profile || !*profile)
		profile = "default";
	if (file)
		return load_file(file, profile, out, err, errlen);

	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");

	if (ak && *ak && sk && *sk) {
		*out = make(ak, sk, getenv("AWS_SESSION_TOKEN"));
		return *out ? 0 : -ENOMEM;
	}
	file = getenv("AWS_SHARED_CREDENTIALS_FILE");
	if (!file || !*file) {
		const char *home = getenv("HOME");

		if (!home || !*home) {
			say(err, errlen,
			    "no AWS_ACCESS_KEY_ID, and no HOME for ~/.aws/credentials");
			return -ENOENT;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/.aws/credentials", home) >=
		    sizeof(path))
			return -ENAMETOOLONG;
		file = path;
	}
	return load_file(file, profile, out, err, errlen);
}

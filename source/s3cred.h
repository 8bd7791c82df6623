/* SPDX-License-Identifier: MIT */
#ifndef ZMOUNT_S3CRED_H
#define ZMOUNT_S3CRED_H

#include <stddef.h>

/*
 * S3 credentials from the usual places.  Secrets are never logged: the
 * error reports name the file, the profile and the line, never a value.
 * s3cred_free wipes them.
 */

struct s3cred {
	char *access_key;
	char *secret_key;
	char *session_token; /* NULL when there is none */
};

/*
 * Loads credentials:
 *   - file not NULL: from that file (the ~/.aws/credentials format: INI,
 *     "[profile]" sections with aws_access_key_id, aws_secret_access_key and
 *     optional aws_session_token);
 *   - file NULL: from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with
 *     AWS_SESSION_TOKEN if set) when both are set; otherwise from
 *     $AWS_SHARED_CREDENTIALS_FILE, or else $HOME/.aws/credentials.
 * The profile is profile if not NULL, else $AWS_PROFILE, else "default".
 * On failure err (if not NULL, errlen bytes) holds one line saying why.
 * Returns 0 and *out (free with s3cred_free), or with *out NULL:
 *   -ENOENT  no credentials there (no file, no such profile, or a key missing);
 *   -EINVAL  a line of the file that is not a section, a comment or key = value;
 *   -ENOMEM, or the -errno of opening or reading the file.
 */
int s3cred_load(const char *file, const char *profile, struct s3cred **out, char *err,
		size_t errlen);

/* Copies c (for a client that keeps its own).  Returns NULL when out of memory. */
struct s3cred *s3cred_dup(const struct s3cred *c);

/* Wipes and frees c.  Accepts NULL. */
void s3cred_free(struct s3cred *c);

#endif

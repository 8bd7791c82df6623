#!/usr/bin/env bash
# The tools on s3:// URLs against the real RGW of the fixture s3_rgw:
# zmount-cat of an uploaded .xz, .gz and .zst against the originals (whole
# and ranges), zmount-info and zmount-index info/verify on them, the flags
# and the environment that name the endpoint and the keys, and the one-line
# errors of a missing key, a bucket URL and missing credentials.
# usage: test_tools_s3.sh BINDIR S3DIR   (S3DIR: what tests/s3/rgw.sh up made)
set -u
bin=$1 s3dir=$2
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ep=$(cat "$s3dir/endpoint") && bucket=$(cat "$s3dir/bucket") || {
	echo "FAIL: no gateway in $s3dir (run through ctest: fixture s3_rgw)"; exit 1; }
cred=$s3dir/credentials
ak=$(sed -n 's/^aws_access_key_id *= *//p' "$cred")
sk=$(sed -n 's/^aws_secret_access_key *= *//p' "$cred")
put() { # put FILE KEY
	curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$1" "$ep/$bucket/$2" >/dev/null
}

# Multi-Block xz, multi-member gzip, multi-frame zstd, about 3 MB each.
seq 1 500000 > "$tmp/orig"
xz -T1 --block-size=200000 -c "$tmp/orig" > "$tmp/t.xz"
{ head -c 1000000 "$tmp/orig" | gzip -c; tail -c +1000001 "$tmp/orig" | gzip -c; } > "$tmp/t.gz"
split -b 1000000 "$tmp/orig" "$tmp/part."
for p in "$tmp"/part.*; do zstd -q -c "$p"; done > "$tmp/t.zst"
for f in t.xz t.gz t.zst; do
	put "$tmp/$f" "tools/$f" || { echo "FAIL: upload of $f"; exit 1; }
done

for f in t.xz t.gz t.zst; do
	url=s3://$bucket/tools/$f
	if "$bin/zmount-cat" --endpoint "$ep" --credentials "$cred" "$url" > "$tmp/out" 2>"$tmp/err" &&
		cmp -s "$tmp/out" "$tmp/orig"; then ok "zmount-cat $url is the original"
	else bad "zmount-cat $url: $(head -c 300 "$tmp/err")"; fi
	# A range inside, and one across the end.
	for spec in "1234567 100000" "3388880 100"; do
		set -- $spec
		"$bin/zmount-cat" --endpoint="$ep" --credentials="$cred" "$url" "$1" "$2" > "$tmp/part" 2>"$tmp/err"
		if cmp -s "$tmp/part" <(tail -c +$(($1 + 1)) "$tmp/orig" | head -c "$2"); then ok "$f range $1 $2"
		else bad "$f range $1 $2: $(head -c 300 "$tmp/err")"; fi
	done
done

# The endpoint and keys from the environment instead of flags.
if AWS_ENDPOINT_URL=$ep AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk \
	"$bin/zmount-cat" "s3://$bucket/tools/t.gz" 2>"$tmp/err" | cmp -s - "$tmp/orig"; then
	ok "zmount-cat with AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID"
else bad "environment: $(head -c 300 "$tmp/err")"; fi

"$bin/zmount-info" --endpoint "$ep" --credentials "$cred" "s3://$bucket/tools/t.xz" > "$tmp/info" 2>"$tmp/err"
rc=$?
want=$(printf 's3://%s/tools/t.xz\txz' "$bucket")
if [ $rc = 0 ] && grep -q "^$want" "$tmp/info" && grep -q "$(stat -c %s "$tmp/orig")" "$tmp/info"; then
	ok "zmount-info on s3://: $(head -c 120 "$tmp/info")"
else bad "zmount-info: exit $rc, '$(cat "$tmp/info" "$tmp/err" | head -c 300)'"; fi

"$bin/zmount-index" info --endpoint "$ep" --credentials "$cred" "s3://$bucket/tools/t.zst" > "$tmp/iinfo" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -q '^format=zstd' "$tmp/iinfo" && grep -q "^uncompressed=$(stat -c %s "$tmp/orig")" "$tmp/iinfo"; then
	ok "zmount-index info on s3://"
else bad "zmount-index info: exit $rc, '$(cat "$tmp/iinfo" "$tmp/err" | head -c 400)'"; fi

"$bin/zmount-index" verify --endpoint "$ep" --credentials "$cred" \
	"s3://$bucket/tools/t.xz" "s3://$bucket/tools/t.gz" "s3://$bucket/tools/t.zst" > "$tmp/ver" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ "$(grep -c ': ok$' "$tmp/ver")" = 3 ]; then ok "zmount-index verify on s3://"
else bad "zmount-index verify: exit $rc, '$(cat "$tmp/ver" "$tmp/err" | head -c 400)'"; fi

# build -d s3://BUCKET/PREFIX: a local .gz indexed into a shared prefix, then found there.
mkdir -p "$tmp/shared" && cp "$tmp/t.gz" "$tmp/shared/t.gz"
idxpre="tools-idx-$$"
for want in "built=1 fresh=0" "built=0 fresh=1"; do
	"$bin/zmount-index" build --endpoint "$ep" --credentials "$cred" -d "s3://$bucket/$idxpre" \
		"$tmp/shared" > "$tmp/bld" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && grep -q "$want" "$tmp/bld"; then ok "zmount-index build -d s3://: $want"
	else bad "zmount-index build -d s3:// ($want): exit $rc, '$(cat "$tmp/bld" "$tmp/err" | head -c 400)'"; fi
done
n=$(curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	"$ep/$bucket?list-type=2&prefix=$idxpre%2F" | grep -o '\.zmi</Key>' | wc -l)
if [ "$n" = 1 ]; then ok "build -d s3:// put one .zmi"; else bad "build -d s3:// put $n .zmi objects"; fi
"$bin/zmount-index" info -d "s3://$bucket/$idxpre" "$tmp/shared/t.gz" > /dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q "only build" "$tmp/err"; then ok "info -d s3://: a usage error"
else bad "info -d s3://: exit $rc, '$(cat "$tmp/err")'"; fi

# Errors: one line each, the right exit status, no secret.
"$bin/zmount-cat" --endpoint "$ep" --credentials "$cred" "s3://$bucket/tools/nope.gz" > "$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q 'nope.gz' "$tmp/err" && [ ! -s "$tmp/out" ]; then
	ok "missing key: exit 2, '$(cat "$tmp/err")'"
else bad "missing key: exit $rc, '$(cat "$tmp/err")'"; fi
"$bin/zmount-cat" --endpoint "$ep" --credentials "$cred" "s3://$bucket" > "$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "names a bucket" "$tmp/err"; then ok "bucket URL: exit 2, '$(cat "$tmp/err")'"
else bad "bucket URL: exit $rc, '$(cat "$tmp/err")'"; fi
HOME=$tmp AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= AWS_SHARED_CREDENTIALS_FILE= \
	"$bin/zmount-cat" --endpoint "$ep" "s3://$bucket/tools/t.gz" > "$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q credentials "$tmp/err"; then
	ok "no credentials: exit 2, '$(cat "$tmp/err")'"
else bad "no credentials: exit $rc, '$(cat "$tmp/err")'"; fi
"$bin/zmount-cat" --endpoint "$ep" --credentials "$cred" "s3://$bucket/tools/t.gz" 0 10 --region 2>"$tmp/err" >/dev/null
rc=$?
if [ $rc = 1 ] && grep -q -- '--region needs a value' "$tmp/err"; then ok "a flag without its value"
else bad "a flag without its value: exit $rc, '$(cat "$tmp/err")'"; fi
grep -l "$sk" "$tmp"/err "$tmp"/info "$tmp"/iinfo "$tmp"/ver "$tmp"/bld 2>/dev/null && bad "the secret key was printed"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]

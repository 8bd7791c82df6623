#!/usr/bin/env bash
# The tools on s3:// URLs against the real RGW of the fixture s3_rgw:
# zmount-cat of an uploaded .xz, .gz and .zst against the originals (whole
# and ranges), a member of an uploaded .tar.gz (zmount-info --members, zmount-cat
# URL MEMBER against tar -xzOf), zmount-info and zmount-index info/verify on them, the flags
# and the environment that name the endpoint and the keys, build, info and
# prune with -d s3://BUCKET/PREFIX (shared indexes) and of s3:// objects and
# prefixes, and
# the one-line errors of a missing key, a bucket URL and missing credentials.
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

# A tar in an object (issue 34): zmount-info --members and zmount-cat URL MEMBER.
mkdir -p "$tmp/tree/logs" && cp "$tmp/orig" "$tmp/tree/logs/a.log" && echo small > "$tmp/tree/b"
tar -C "$tmp/tree" -czf "$tmp/t.tar.gz" logs b && put "$tmp/t.tar.gz" tools/t.tar.gz ||
	{ echo "FAIL: upload of t.tar.gz"; exit 1; }
url=s3://$bucket/tools/t.tar.gz
"$bin/zmount-info" --endpoint "$ep" --credentials "$cred" --members "$url" > "$tmp/members" 2>"$tmp/err"
if [ "$(cut -f7 "$tmp/members" | tr '\n' ' ')" = "logs logs/a.log b " ]; then ok "zmount-info --members $url"
else bad "zmount-info --members $url: $(head -c 300 "$tmp/members" "$tmp/err")"; fi
if "$bin/zmount-cat" --endpoint "$ep" --credentials "$cred" "$url" logs/a.log 2>"$tmp/err" |
	cmp -s - <(tar -xzOf "$tmp/t.tar.gz" logs/a.log); then ok "zmount-cat $url logs/a.log is tar -xzOf's"
else bad "zmount-cat $url logs/a.log: $(head -c 300 "$tmp/err")"; fi

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

# build of s3:// objects into a shared prefix, info from it as from a local directory, and
# prune of that prefix: by proof only.
s3c() { curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk" \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
idx() { "$bin/zmount-index" "$@" --endpoint "$ep" --credentials "$cred"; }
keys() { # keys PREFIX: the .zmi keys under it, one a line, sorted
	s3c "$ep/$bucket?list-type=2&prefix=$1%2F" | grep -o '<Key>[^<]*\.zmi</Key>' |
		sed 's/<Key>//; s/<\/Key>//' | sort; }
src="tools-src-$$" ppre="tools-prune-$$"
for n in 1 2 3 4; do
	head -c $((n * 300000)) "$tmp/orig" | gzip -c > "$tmp/o$n.gz"
	put "$tmp/o$n.gz" "$src/o$n.gz" || { echo "FAIL: upload of o$n.gz"; exit 1; }
done
urls=() && for n in 1 2 3 4; do urls+=("s3://$bucket/$src/o$n.gz"); done
for want in "built=4 fresh=0 failed=0" "built=0 fresh=4 failed=0"; do
	idx build -d "s3://$bucket/$ppre" "${urls[@]}" > "$tmp/bld" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && grep -q "4 gzip and zstd files.*$want" "$tmp/bld"; then
		ok "build of s3:// objects -d s3://: $want"
	else bad "build of s3:// objects ($want): exit $rc, '$(cat "$tmp/bld" "$tmp/err" | head -c 400)'"; fi
done
idx build -q -d "$tmp/ldir" "s3://$bucket/$src/o1.gz" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ "$(ls "$tmp/ldir" | grep -c '\.zmi$')" = 1 ]; then ok "build of an s3:// object -d DIR"
else bad "build of an s3:// object -d DIR: exit $rc, '$(cat "$tmp/err")'"; fi
# A prefix is walked as a local directory is (it was "HEAD .../: HTTP 404").
for url in "s3://$bucket/$src/" "s3://$bucket/$src"; do
	rm -rf "$tmp/pdir"
	idx build -d "$tmp/pdir" "$url" > "$tmp/bld" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && grep -q "4 gzip and zstd files.*built=4 fresh=0 failed=0" "$tmp/bld" &&
		[ "$(ls "$tmp/pdir" | grep -c '\.zmi$')" = 4 ]; then ok "build of the prefix $url"
	else bad "build of the prefix $url: exit $rc, '$(cat "$tmp/bld" "$tmp/err" | head -c 400)'"; fi
done
idx verify "s3://$bucket/$src/" > "$tmp/ver" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ "$(grep -c "^s3://$bucket/$src/o[1-4].gz: ok$" "$tmp/ver")" = 4 ]; then
	ok "verify of the prefix s3://$bucket/$src/"
else bad "verify of the prefix: exit $rc, '$(cat "$tmp/ver" "$tmp/err" | head -c 400)'"; fi

# info: the same lines from the prefix as from the local directory, but the file's place.
idx info -d "$tmp/ldir" "s3://$bucket/$src/o1.gz" > "$tmp/linfo" 2>"$tmp/err"
idx info -d "s3://$bucket/$ppre" "s3://$bucket/$src/o1.gz" > "$tmp/sinfo" 2>>"$tmp/err"
rc=$?
hex=$(sed -n 's/^index_file=.*\/\([0-9a-f]*\.zmi\)$/\1/p' "$tmp/linfo")
if [ $rc = 0 ] && grep -qx "index_file=s3://$bucket/$ppre/$hex" "$tmp/sinfo" &&
	grep -qx 'index_state=fresh' "$tmp/sinfo" && grep -qx 'index_used=saved' "$tmp/sinfo" &&
	diff <(grep -v '^index_file=' "$tmp/linfo") <(grep -v '^index_file=' "$tmp/sinfo") >/dev/null; then
	ok "info -d s3:// reports as info -d DIR: $(grep '^index_' "$tmp/sinfo" | tr '\n' ' ')"
else bad "info -d s3://: exit $rc, '$(diff "$tmp/linfo" "$tmp/sinfo"; cat "$tmp/err")'"; fi

# A local file's index in the prefix (a local mount with endpoint= saves such), its file then
# gone here: it may be another machine's, so prune keeps it.
mkdir -p "$tmp/loc" && cp "$tmp/t.gz" "$tmp/loc/l.gz"
idx build -q -d "s3://$bucket/$ppre" "$tmp/loc/l.gz" 2>"$tmp/err" || bad "build of a local file: $(cat "$tmp/err")"
idx info -d "s3://$bucket/$ppre" "$tmp/loc/l.gz" > "$tmp/sinfo" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -qx 'index_state=fresh' "$tmp/sinfo" && grep -qx 'index_used=saved' "$tmp/sinfo"; then
	ok "info -d s3:// of a local file"
else bad "info -d s3:// of a local file: exit $rc, '$(cat "$tmp/sinfo" "$tmp/err")'"; fi
rm "$tmp/loc/l.gz"
name_of() { idx info -d "s3://$bucket/$ppre" "s3://$bucket/$src/$1" | sed -n 's/^index_file=s3:\/\/[^/]*\///p'; }
k1=$(name_of o1.gz) k2=$(name_of o2.gz) k3=$(name_of o3.gz) k4=$(name_of o4.gz)
before=$(keys "$ppre")
if [ "$(echo "$before" | wc -l)" = 5 ]; then ok "5 indexes in the prefix before prune"
else bad "before prune: '$before'"; fi
kl=$(comm -23 <(echo "$before") <(printf '%s\n' "$k1" "$k2" "$k3" "$k4" | sort))
# o2 deleted; o3 overwritten by one of the same size (the gzip MTIME changed: only the ETag
# tells, Last-Modified may be the same second); o4's index damaged past its header (only the
# CRC-64 tells); a non-index object beside them.
flip() { # flip FILE OFFSET: one bit; a negative OFFSET counts from the end
	python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[o] ^= 1; open(p, "wb").write(b)' "$1" "$2"; }
s3c -X DELETE "$ep/$bucket/$src/o2.gz" >/dev/null || bad "DELETE o2.gz"
cp "$tmp/o3.gz" "$tmp/o3b.gz" && flip "$tmp/o3b.gz" 4 && put "$tmp/o3b.gz" "$src/o3.gz"
s3c "$ep/$bucket/$k4" > "$tmp/blob" || bad "GET $k4"
flip "$tmp/blob" -12 && put "$tmp/blob" "$k4" && echo x > "$tmp/x" && put "$tmp/x" "$ppre/README.txt"
# Through the same gateway spelled otherwise, the objects' identities (made through
# $ep) cannot be judged: only the damaged index goes (found by its CRC-64).
"$bin/zmount-index" prune -d "s3://$bucket/$ppre" --endpoint "${ep/127.0.0.1/localhost}" \
	--credentials "$cred" > "$tmp/prn" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && grep -qx "zmount-index: removed 1 index files from s3://$bucket/$ppre" "$tmp/prn" &&
	grep -q "(1 a local path, 4 an object this endpoint cannot tell)" "$tmp/err"; then
	ok "prune through another endpoint judged no object: $(cat "$tmp/prn")"
else bad "prune through another endpoint: exit $rc, '$(cat "$tmp/prn" "$tmp/err")'"; fi
idx prune -d "s3://$bucket/$ppre" > "$tmp/prn" 2>"$tmp/err"
rc=$?
after=$(keys "$ppre")
if [ $rc = 0 ] && grep -qx "zmount-index: removed 2 index files from s3://$bucket/$ppre" "$tmp/prn"; then
	ok "prune -d s3://: $(cat "$tmp/prn")"
else bad "prune -d s3://: exit $rc, '$(cat "$tmp/prn" "$tmp/err")'"; fi
for c in "$k2:deleted object" "$k3:overwritten object" "$k4:damaged index"; do
	if ! grep -qx "${c%%:*}" <<<"$after"; then ok "prune removed the index of the ${c#*:}"
	else bad "prune kept the index of the ${c#*:}"; fi
done
if grep -qx "$k1" <<<"$after"; then ok "prune kept the valid index"; else bad "prune removed the valid index"; fi
if [ -n "$kl" ] && grep -qx "$kl" <<<"$after" && grep -q "(1 a local path, 0 an object" "$tmp/err"; then
	ok "prune kept the local path's index, and said so: $(cat "$tmp/err")"
else bad "the local path's index ($kl): '$after', '$(cat "$tmp/err")'"; fi
if s3c -o /dev/null "$ep/$bucket/$ppre/README.txt"; then ok "prune left a non-index object alone"
else bad "prune removed README.txt"; fi
idx prune -d "s3://no-such-zm-bucket-$$/i" > "$tmp/prn" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "no such bucket" "$tmp/err"; then
	ok "prune of a missing bucket: exit 2, '$(cat "$tmp/err")'"
else bad "prune of a missing bucket: exit $rc, '$(cat "$tmp/prn" "$tmp/err")'"; fi

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
grep -l "$sk" "$tmp"/err "$tmp"/info "$tmp"/iinfo "$tmp"/ver "$tmp"/bld "$tmp"/sinfo "$tmp"/prn 2>/dev/null && bad "the secret key was printed"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]

#!/usr/bin/env bash
# The mount and the tools against tests/s3/fakes3.py, a fake S3 server on
# 127.0.0.1 (no gateway needed):
#  - a server that repeats its continuation token: the mount fails at once
#    with one line naming the bucket and prefix, exit non-zero, after a
#    bounded number of LIST requests (counted by the server; the test's own
#    wait is bounded by timeout(1) so old code fails instead of hanging);
#  - a mistyped prefix: the mount comes up empty and warns, naming the
#    nearest existing prefix;
#  - a tool whose endpoint cannot be reached says which endpoint failed, and
#    the tools take AWS_ENDPOINT_URL(_S3), AWS_REGION and AWS_PROFILE;
#  - zmount-index build and verify walk a prefix as a local directory.
# usage: test_fakes3.sh ZMOUNT TOOLDIR   (TOOLDIR holds zmount-cat)
set -u
zmount=$1 bin=$2
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
srv= nsrv=0
cleanup() {
	fusermount3 -uz "$tmp/mnt" 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/mnt"
export AWS_ACCESS_KEY_ID=AKFAKE AWS_SECRET_ACCESS_KEY=fakesecret
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE

# server MODE KEY...: starts fakes3.py, sets $port and $srv.
server() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	nsrv=$((nsrv + 1))
	mkfifo "$tmp/in.$nsrv" "$tmp/port.$nsrv"
	python3 "$here/fakes3.py" "$@" <"$tmp/in.$nsrv" >"$tmp/port.$nsrv" &
	srv=$!
	exec {hold}>"$tmp/in.$nsrv" # keeps its stdin open
	read -r port <"$tmp/port.$nsrv"
}
count() { curl -s "http://127.0.0.1:$port/_count"; }

# 1. The continuation token repeats: no hang, one line, exit non-zero.
server repeat
timeout 20 "$zmount" s3://bkt/logs/ "$tmp/mnt" -f -o "endpoint=http://127.0.0.1:$port" \
	</dev/null >"$tmp/out" 2>"$tmp/err"
rc=$? n=$(count)
if [ $rc != 0 ] && [ $rc != 124 ] && [ "$n" -le 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	grep -q 's3://bkt/logs/.*repeated its continuation token' "$tmp/err"; then
	ok "repeated token: exit $rc after $n LIST requests: $(cat "$tmp/err")"
else
	bad "repeated token: exit $rc (124: still listing after 20 s) after $n LIST requests:" \
		"$(head -c 400 "$tmp/err")"
	fusermount3 -uz "$tmp/mnt" 2>/dev/null
fi

# 2. A mistyped prefix mounts empty, with a warning naming the nearest prefixes.
server keys logs/app/1.log logs/web/2.log logs/3.gz data/x.log
"$zmount" s3://bkt/logz/ "$tmp/mnt" -f -o "endpoint=http://127.0.0.1:$port" \
	</dev/null >"$tmp/out" 2>"$tmp/err" &
zm=$!
for _ in $(seq 100); do
	mountpoint -q "$tmp/mnt" && break
	kill -0 $zm 2>/dev/null || break
	sleep 0.1
done
if mountpoint -q "$tmp/mnt" && [ -z "$(ls -A "$tmp/mnt")" ] &&
	grep -q 's3://bkt/logz/: no objects; did you mean s3://bkt/logs/?' "$tmp/err"; then
	ok "mistyped prefix: $(cat "$tmp/err")"
else bad "mistyped prefix: '$(head -c 400 "$tmp/err")'"; fi
fusermount3 -u "$tmp/mnt" 2>/dev/null
wait $zm
# "log" shows what is under "log/": nothing, though keys start with "log".
"$zmount" s3://bkt/log "$tmp/mnt" -f -o "endpoint=http://127.0.0.1:$port" \
	</dev/null >"$tmp/out" 2>"$tmp/err" &
zm=$!
for _ in $(seq 100); do
	mountpoint -q "$tmp/mnt" && break
	kill -0 $zm 2>/dev/null || break
	sleep 0.1
done
if mountpoint -q "$tmp/mnt" &&
	grep -q 's3://bkt/log/: no objects; did you mean s3://bkt/logs/?' "$tmp/err"; then
	ok "s3://bkt/log: $(cat "$tmp/err")"
else bad "s3://bkt/log: '$(head -c 400 "$tmp/err")'"; fi
fusermount3 -u "$tmp/mnt" 2>/dev/null
wait $zm

# 3. A tool says which endpoint failed.
timeout 60 "$bin/zmount-cat" --endpoint http://127.0.0.1:1 s3://bkt/logs/3.gz >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q 'cannot reach http://127.0.0.1:1' "$tmp/err"; then
	ok "unreachable endpoint named: $(head -c 300 "$tmp/err")"
else bad "unreachable endpoint: exit $rc, '$(head -c 400 "$tmp/err")'"; fi
AWS_ENDPOINT_URL=http://127.0.0.1:$port timeout 60 "$bin/zmount-cat" s3://bkt/logs/3.gz \
	>"$tmp/out" 2>"$tmp/err"
if [ "$(cat "$tmp/out")" = logs/3.gz ]; then ok "zmount-cat takes AWS_ENDPOINT_URL"
else bad "AWS_ENDPOINT_URL: '$(head -c 400 "$tmp/err")'"; fi
AWS_ENDPOINT_URL=http://127.0.0.1:1 AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port timeout 60 \
	"$bin/zmount-cat" s3://bkt/logs/3.gz >"$tmp/out" 2>"$tmp/err"
if [ "$(cat "$tmp/out")" = logs/3.gz ]; then ok "AWS_ENDPOINT_URL_S3 comes before AWS_ENDPOINT_URL"
else bad "AWS_ENDPOINT_URL_S3: '$(head -c 400 "$tmp/err")'"; fi

# 4. zmount-index build and verify walk a prefix as a local directory.
server keys logs/app/1.gz logs/web/2.gz logs/3.log logs/x/ data/x.gz
for url in s3://bkt/logs/ s3://bkt/logs; do
	rm -rf "$tmp/idx"
	"$bin/zmount-index" build --endpoint "http://127.0.0.1:$port" -d "$tmp/idx" "$url" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && cat "$tmp/out" "$tmp/err" |
		grep -q '2 gzip and zstd files.*built=2 fresh=0 failed=0; skipped: xz=0 other=1'; then
		ok "zmount-index build $url walks the prefix"
	else bad "zmount-index build $url: exit $rc, '$(cat "$tmp/out" "$tmp/err" | head -c 400)'"; fi
done
"$bin/zmount-index" verify --endpoint "http://127.0.0.1:$port" s3://bkt/logs/ >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ "$(grep -c ': ok$' "$tmp/out")" = 2 ] && grep -q '^s3://bkt/logs/app/1.gz: ok$' "$tmp/out"; then
	ok "zmount-index verify s3://bkt/logs/ walks the prefix"
else bad "zmount-index verify: exit $rc, '$(cat "$tmp/out" "$tmp/err" | head -c 400)'"; fi
"$bin/zmount-index" build --endpoint "http://127.0.0.1:$port" -d "$tmp/idx" s3://bkt/logz \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc != 0 ] && grep -q 'did you mean s3://bkt/logs/?' "$tmp/err"; then
	ok "zmount-index build of no object nor prefix: $(head -1 "$tmp/err")"
else bad "zmount-index build s3://bkt/logz: exit $rc, '$(head -c 400 "$tmp/err")'"; fi

# The region signs (AWS_REGION), the profile picks the keys (AWS_PROFILE).
printf '[default]\naws_access_key_id = AKDEF\naws_secret_access_key = s1\n[other]\naws_access_key_id = AKOTHER\naws_secret_access_key = s2\n' >"$tmp/cred"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$tmp/cred" \
	AWS_PROFILE=other AWS_REGION=eu-west-9 AWS_ENDPOINT_URL=http://127.0.0.1:$port \
	timeout 60 "$bin/zmount-cat" s3://bkt/logs/app/1.gz >"$tmp/out" 2>"$tmp/err"
auth=$(curl -s "http://127.0.0.1:$port/_auth")
case $(cat "$tmp/out")/$auth in
logs/app/1.gz/*Credential=AKOTHER/*/eu-west-9/s3/*) ok "zmount-cat takes AWS_REGION and AWS_PROFILE" ;;
*) bad "AWS_REGION, AWS_PROFILE: '$auth' '$(head -c 300 "$tmp/err")'" ;;
esac
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$tmp/cred" \
	timeout 60 "$bin/zmount-cat" --endpoint "http://127.0.0.1:$port" --profile other \
	s3://bkt/logs/app/1.gz >"$tmp/out" 2>"$tmp/err"
auth=$(curl -s "http://127.0.0.1:$port/_auth")
case $(cat "$tmp/out")/$auth in
logs/app/1.gz/*Credential=AKOTHER/*) ok "zmount-cat --profile" ;;
*) bad "--profile: '$auth' '$(head -c 300 "$tmp/err")'" ;;
esac

echo "$pass passed, $fail failed"
[ $fail = 0 ]

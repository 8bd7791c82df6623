#!/usr/bin/env bash
# One bad SRC, one message: the daemon and the tools parse a path or an
# s3:// URL through source/srcloc.c, so after their own "PROGRAM: SRC: "
# prefix they must say the same words, on one line.
# usage: test_srcmsg.sh DAEMON_DIR TOOLS_DIR
set -u
dbin=$1 tbin=$2
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/mnt"
: > "$tmp/file"

# Refused URLs (no request is made) and local paths that cannot be opened.
for src in s3://ab/x s3://Upper/key s3:///key s3://-abc/key s3:// "s3://$(printf 'b%.0s' {1..64})/key" \
	"$tmp/missing" "$tmp/file/below"; do
	"$dbin/zmount" "$src" "$tmp/mnt" 2>"$tmp/d"
	drc=$?
	if [ "$drc" = 0 ]; then
		fusermount3 -u "$tmp/mnt" 2>/dev/null
		bad "$src: zmount mounted it"
		continue
	fi
	want=$src
	[ "$(wc -l < "$tmp/d")" = 1 ] || bad "$want: zmount said $(wc -l < "$tmp/d") lines"
	d=$(head -n 1 "$tmp/d")
	d=${d#"zmount: "}
	d=${d#"$src: "}
	for tool in zmount-cat zmount-info; do
		"$tbin/$tool" "$src" >/dev/null 2>"$tmp/t"
		t=$(head -n 1 "$tmp/t")
		t=${t#"$tool: error: "}
		t=${t#"$src: "}
		if [ "$d" = "$t" ]; then ok "$want: zmount and $tool say '$d'"
		else bad "$want: zmount says '$d', $tool says '$t'"; fi
	done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/usr/bin/env bash
# The command-line tools over the reader, without FUSE: the xz-utils corpus
# through zmount-cat, ranges against dd, and zmount-info's counts.
# usage: test_tools.sh BINDIR CORPUS
set -u
bin=$1 corpus=$2
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -f "$corpus/xz-utils/EXPECTED.tsv" ] || { echo "FAIL: no corpus at $corpus"; echo "0 passed, 1 failed"; exit 1; }
while IFS=$'\t' read -r file expect sha _usize _rc _msg tags format _rest; do
	case "$file" in '#'*|'') continue ;; esac
	[ "$format" = xz ] || continue
	f=$corpus/xz-utils/$file
	"$bin/zmount-cat" "$f" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	got=$(sha256sum < "$tmp/out" | cut -d' ' -f1)
	if [ "$expect" = error ]; then
		# 2: unreadable; 1: not xz at all (bad magic).  Either way, said why.
		if { [ "$rc" = 2 ] || [ "$rc" = 1 ]; } && [ -s "$tmp/err" ]; then ok "$file fails (exit $rc) with a message"
		else bad "$file: exit $rc, stderr '$(head -c 200 "$tmp/err")' (want failure and a message)"; fi
		# xz writes these bytes before it notices the damage; we must write none.
		case "$tags" in *partial-out=[1-9]*)
			[ -s "$tmp/out" ] && bad "$file: served $(stat -c %s "$tmp/out") unverified bytes" ||
				ok "$file: no unverified byte served" ;;
		esac
	elif [ "$rc" = 0 ] && [ "$got" = "$sha" ]; then ok "$file reads back with its sha256"
	else bad "$file: exit $rc, sha256 $got (want $sha)"; fi
done < "$corpus/xz-utils/EXPECTED.tsv"

# Ranges: offsets at and across 64 KiB Block boundaries, against dd on the original.
seq 1 400000 > "$tmp/orig"
xz -T1 --block-size=65536 -c "$tmp/orig" > "$tmp/b.xz"
gzip -c "$tmp/orig" > "$tmp/g.gz"
for f in b.xz g.gz; do
	for spec in "0 1" "65535 2" "65536 65536" "131071 200000" "2688000 100000" "2688887 10" "2688888 5" "9999999 5"; do
		set -- $spec
		want=$(dd if="$tmp/orig" bs=1 skip="$1" count="$2" status=none | sha256sum)
		got=$("$bin/zmount-cat" "$tmp/$f" "$1" "$2" | sha256sum)
		[ "$got" = "$want" ] && ok "zmount-cat $f $1 $2" || bad "zmount-cat $f $1 $2 differs from dd"
	done
done

# zmount-info: two Streams with padding between them, and a plain file.
xz -c "$tmp/orig" > "$tmp/two.xz"; head -c 4 /dev/zero >> "$tmp/two.xz"; xz -c "$tmp/orig" >> "$tmp/two.xz"
line=$("$bin/zmount-info" "$tmp/two.xz")
case "$line" in *"streams=2"*"uncompressed=$((2 * $(stat -c %s "$tmp/orig")))"*"padding=4") ok "zmount-info two.xz: $line" ;;
	*) bad "zmount-info two.xz: $line" ;; esac
line=$("$bin/zmount-info" "$tmp/g.gz")
case "$line" in *gzip*"members=1"*"uncompressed=$(stat -c %s "$tmp/orig")"*) ok "zmount-info g.gz: $line" ;;
	*) bad "zmount-info g.gz: $line" ;; esac
"$bin/zmount-info" "$tmp/orig" >/dev/null; rc=$?
[ "$rc" = 2 ] && ok "zmount-info on a plain file exits 2" || bad "zmount-info on a plain file exits $rc"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

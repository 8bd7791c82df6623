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

# Every tool: -h/--help (usage on stdout, exit 0), -V/--version ("TOOL X.Y.Z").
for tool in zmount-cat zmount-info zmount-index zmount-stat; do
	for flag in -h --help; do
		"$bin/$tool" $flag >"$tmp/out" 2>"$tmp/err"; rc=$?
		if [ "$rc" = 0 ] && grep -q "^usage: $tool" "$tmp/out" && [ ! -s "$tmp/err" ]; then ok "$tool $flag"
		else bad "$tool $flag: exit $rc, stdout '$(head -c 100 "$tmp/out")', stderr '$(head -c 100 "$tmp/err")'"; fi
	done
	for flag in -V --version; do
		"$bin/$tool" $flag >"$tmp/out" 2>"$tmp/err"; rc=$?
		if [ "$rc" = 0 ] && grep -qx "$tool [0-9]*\.[0-9]*\.[0-9]*" "$tmp/out" && [ ! -s "$tmp/err" ]; then ok "$tool $flag: $(cat "$tmp/out")"
		else bad "$tool $flag: exit $rc, stdout '$(head -c 100 "$tmp/out")', stderr '$(head -c 100 "$tmp/err")'"; fi
	done
	# An unknown option or no argument: exit 1, one line on stderr naming the tool.
	for args in --bogus ""; do
		"$bin/$tool" $args >"$tmp/out" 2>"$tmp/err"; rc=$?
		if [ "$rc" = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^$tool: " "$tmp/err"; then ok "$tool '${args}': exit 1, '$(cat "$tmp/err")'"
		else bad "$tool '${args}': exit $rc, stderr '$(cat "$tmp/err")' (want exit 1 and one '$tool:' line)"; fi
	done
done

# Messages start with the tool's own name, the reader's log lines included,
# and a file name cannot forge a line: a corrupt .xz with newlines in its name.
xz -T1 --block-size=65536 -c "$tmp/orig" > "$tmp/bad.xz"
printf '\377' | dd of="$tmp/bad.xz" bs=1 seek=300 conv=notrunc status=none
forged=$'a\nzmount: info: FORGED LINE\nb.xz'
head -c 2000 "$tmp/bad.xz" > "$tmp/trunc.xz" # no Index at the end: zmount-info fails too
for cmd in "zmount-cat" "zmount-info" "zmount-index verify"; do
	tool=${cmd%% *}
	src=$tmp/bad.xz
	[ "$tool" = zmount-info ] && src=$tmp/trunc.xz
	cp "$src" "$tmp/$forged"
	$bin/$cmd "$tmp/$forged" >"$tmp/out" 2>"$tmp/err"; rc=$?
	others=$(grep -v "^$tool: " "$tmp/err")
	if [ "$rc" = 2 ] && [ -z "$others" ] && ! grep -q '^zmount: info: FORGED' "$tmp/out" "$tmp/err" &&
	   grep -q 'a\\x0azmount: info: FORGED LINE\\x0ab.xz' "$tmp/out" "$tmp/err"; then
		ok "$cmd on a corrupt file: exit 2, stderr lines all start '$tool: ', the name escaped: $(head -n1 "$tmp/out" "$tmp/err" | tr '\n' ' ' | head -c 300)"
	else bad "$cmd on a corrupt file: exit $rc, stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"; fi
done
rm -f "$tmp/$forged"

# zmount-cat's own last line gives the reader's reason, not strerror's "Input/output error".
$bin/zmount-cat "$tmp/bad.xz" >/dev/null 2>"$tmp/err"; rc=$?
last=$(tail -n1 "$tmp/err")
if [ "$rc" = 2 ] && [ "${last#zmount-cat: $tmp/bad.xz: offset }" != "$last" ] &&
   grep -q 'compressed offset' <<<"$last"; then
	ok "zmount-cat on a corrupt file names the reason: $last"
else bad "zmount-cat on a corrupt file: exit $rc, last line '$last'"; fi

# zmount-index verify DIR recurses like build: every xz and gzip file, in name order.
mkdir -p "$tmp/tree/sub/deeper"
cp "$tmp/b.xz" "$tmp/tree/a.xz"
cp "$tmp/g.gz" "$tmp/tree/sub/c.gz"
cp "$tmp/two.xz" "$tmp/tree/sub/deeper/d.xz"
cp "$tmp/orig" "$tmp/tree/plain.txt"
"$bin/zmount-index" verify "$tmp/tree" >"$tmp/out" 2>"$tmp/err"; rc=$?
want=$(printf '%s: ok\n' "$tmp/tree/a.xz" "$tmp/tree/sub/c.gz" "$tmp/tree/sub/deeper/d.xz")
if [ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = "$want" ] && grep -q "^zmount-index: $tmp/tree: skipped 1 files" "$tmp/err"; then ok "zmount-index verify DIR: 3 archives ok, 1 plain file skipped"
else bad "zmount-index verify DIR: exit $rc, stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"; fi
head -c 20000 "$tmp/g.gz" > "$tmp/tree/sub/trunc.gz"
"$bin/zmount-index" verify "$tmp/tree" "$tmp/b.xz" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" = 2 ] && grep -q "^$tmp/tree/sub/trunc.gz: corrupt: " "$tmp/out" && grep -qx "$tmp/b.xz: ok" "$tmp/out" &&
   [ "$(wc -l < "$tmp/out")" = 5 ]; then ok "zmount-index verify DIR FILE: the truncated .gz under DIR is corrupt (exit 2)"
else bad "zmount-index verify DIR FILE: exit $rc, stdout '$(cat "$tmp/out")'"; fi

# zmount-stat without a daemon: the attribute set by hand on a directory, as a
# new daemon (served_bytes, cache_peak, top lines) and an old one would write it.
mkdir -p "$tmp/statdir"
setx() { python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.zmount.stats", sys.argv[2].encode())' "$@"; }
new=$'cache_budget=268435456\ncache_used=1048576\ncache_peak=201326592\ncache_entries=3\ncache_hits=90\ncache_misses=10\ncache_waits=2\ncache_evictions=5\ndecoded_bytes=3221225472\nreadahead_bytes=1073741824\nserved_bytes=2147483648\nxz_indexes=4\nindexes_built=1\nindexes_loaded=2\nread_errors=7\nindex_errors=3\ncache_charged=0\nnodes=12\nlistings=2\nlisting_bytes=2048\nlisting_budget=4194304\nlisting_rebuilds=0\nplain_reads=5\nnew_counter=9\ntop=2147483648 1048576 10 wide_unit:201326592 logs/big.xz\ntop=1610612736 0 0 no_index a\\x0ab.gz\ntop=3 3 1 - c.zst\n'
if ! setx "$tmp/statdir" "$new" 2>"$tmp/err"; then
	bad "zmount-stat: cannot set a user xattr in $tmp to test with: $(cat "$tmp/err")"
else
	"$bin/zmount-stat" "$tmp/statdir" >"$tmp/out" 2>"$tmp/err"; rc=$?
	miss=""
	for want in "cache      1 MiB used of 256 MiB (0.4%), 3 entries" "peak       192 MiB (75.0% of the budget)" \
		"hit ratio  90.0%  (90 hits, 10 misses, 2 waited on a decode, 5 evictions)" \
		"decoded    3 GiB, of which read-ahead 1 GiB" "served     2 GiB" "amplif.    1.50x" \
		"indexes    4 xz read, 1 built by a pass (gzip, zstd), 2 loaded from index_dir" \
		"errors     7 failed reads" "corrupt    3 archives failed to index" \
		"tree       12 nodes, 2 listings in 2 KiB of 4 MiB, 0 rebuilt; 5 reads of plain files" \
		"  logs/big.xz" "    decoded 2 GiB to serve 1 MiB in 10 reads (2048.00x)" \
		"    cause: Blocks of up to 192 MiB are wider than cache_size/2 (128 MiB)" \
		"    fix:   mount with cache_size=385M or more, or recompress with xz -T0 --block-size=128MiB (cache_size/2)" \
		"  a\\x0ab.gz" "    decoded 1.5 GiB to serve 0 bytes in 0 reads" "    cause: gzip not yet indexed" \
		"    fix:   zmount-index build" "  c.zst" "    decoded 3 bytes to serve 3 bytes in 1 read (1.00x)"; do
		grep -qF -- "$want" "$tmp/out" || miss="$miss [$want]"
	done
	grep -v "cache_size=" "$tmp/out" | grep -q "=" && miss="$miss [no raw key=value lines]"
	[ "$rc" = 0 ] && [ -z "$miss" ] && [ ! -s "$tmp/err" ] && ok "zmount-stat, new daemon: units, ratio, amplification, peak, top files, causes" ||
		bad "zmount-stat, new daemon: exit $rc, missing$miss in: $(cat "$tmp/out" "$tmp/err")"
	old=$'cache_budget=1048576\ncache_used=0\ncache_entries=0\ncache_hits=0\ncache_misses=0\ncache_waits=0\ncache_evictions=0\ndecoded_bytes=0\nreadahead_bytes=0\nxz_indexes=0\nindexes_built=0\nindexes_loaded=0\nread_errors=0\n'
	setx "$tmp/statdir" "$old"
	"$bin/zmount-stat" "$tmp/statdir" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" = 0 ] && grep -qx "served     n/a (daemon too old)" "$tmp/out" && grep -qx "peak       n/a (daemon too old)" "$tmp/out" &&
	   grep -qx "hit ratio  n/a (no lookups yet)" "$tmp/out" && ! grep -q "top files" "$tmp/out"; then ok "zmount-stat, old daemon: served and peak n/a (daemon too old)"
	else bad "zmount-stat, old daemon: exit $rc: $(cat "$tmp/out" "$tmp/err")"; fi
	"$bin/zmount-stat" -w 0.1 -n 3 "$tmp/statdir" >"$tmp/out" 2>"$tmp/err"; rc=$?
	n=$(grep -c "^zmount-stat $tmp/statdir" "$tmp/out")
	[ "$rc" = 0 ] && [ "$n" = 3 ] && ok "zmount-stat -w 0.1 -n 3: 3 reports" || bad "zmount-stat -w 0.1 -n 3: exit $rc, $n reports"
fi
"$bin/zmount-stat" "$tmp/tree" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q "^zmount-stat: $tmp/tree: not the root of a zmount mount" "$tmp/err" && ok "zmount-stat on a plain directory: exit 2, said why" ||
	bad "zmount-stat on a plain directory: exit $rc, '$(cat "$tmp/err")'"
for args in "-w" "-w 0 $tmp/statdir" "-n 2 $tmp/statdir" "a b"; do
	"$bin/zmount-stat" $args >/dev/null 2>"$tmp/err"; rc=$?
	[ "$rc" = 1 ] && grep -q "^zmount-stat: " "$tmp/err" && ok "zmount-stat $args: bad usage, exit 1" || bad "zmount-stat $args: exit $rc '$(cat "$tmp/err")'"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

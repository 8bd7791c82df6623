#!/usr/bin/env bash
# zmount-index on generated data with a private index directory: build,
# second build (fresh), info (fresh, stale, sizes), stale after an in-place
# rewrite that restores the mtime, a forged index in a 1777 directory,
# verify's exit codes, prune, zstd (build, info, a forged index, verify),
# and bad usage.
# usage: test_index_tool.sh BINDIR CORPUS   (CORPUS is unused: data is generated)
set -u
bin=$1
z=$bin/zmount-index
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
idx=$tmp/idx
zmi() { find "$idx" -maxdepth 1 -name '*.zmi' 2>/dev/null | wc -l; }
key() { sed -n "s/^$1=//p" "$2" | head -n 1; } # KEY FILE: the value of KEY= in FILE
flip() { # FILE OFFSET: xor one byte with 0x55
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((b ^ 0x55)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

[ -x "$z" ] || { echo "FAIL: no $z"; echo "0 passed, 1 failed"; exit 1; }

# Data: text, one- and two-member gzip (one without a .gz name), multi-Block xz.
mkdir -p "$tmp/tree/sub" "$tmp/bad" "$tmp/outside"
seq 1 300000 > "$tmp/t1"
awk 'BEGIN { for (i = 0; i < 60000; i++) printf "line %d %x %s\n", i, i * 7919, (i % 3 ? "abc" : "xyz") }' > "$tmp/t2"
gzip -c "$tmp/t1" > "$tmp/tree/one.gz"
{ gzip -c "$tmp/t2"; gzip -c "$tmp/t1"; } > "$tmp/tree/sub/two-members.dat"
xz -T1 --block-size=65536 -c "$tmp/t1" > "$tmp/tree/blocks.xz"
cp "$tmp/t2" "$tmp/tree/plain.txt"
gzip -c "$tmp/t2" > "$tmp/outside/elsewhere.gz"
ln -s ../outside "$tmp/tree/link" # build must not follow it

# Corrupt copies: a byte flipped in the middle of the gzip, and in the middle of a middle xz Block.
cp "$tmp/tree/one.gz" "$tmp/bad/flipped.gz"
flip "$tmp/bad/flipped.gz" $(($(stat -c %s "$tmp/bad/flipped.gz") / 2))
cp "$tmp/tree/blocks.xz" "$tmp/bad/flipped.xz"
nblocks=$(xz --robot -lvv "$tmp/bad/flipped.xz" | grep -c '^block')
read -r bcoff bcsize < <(xz --robot -lvv "$tmp/bad/flipped.xz" | awk -F'\t' -v n=$((nblocks / 2)) '$1 == "block" && $4 == n { print $5, $7 }')
flip "$tmp/bad/flipped.xz" $((bcoff + bcsize / 2))
check "fixtures: gzip -t rejects flipped.gz" eval '! gzip -t "$tmp/bad/flipped.gz" 2>/dev/null'
check "fixtures: xz -t rejects flipped.xz (Block $((nblocks / 2)) of $nblocks)" eval '! xz -t "$tmp/bad/flipped.xz" 2>/dev/null'

# build: one index per gzip file, found by magic; xz skipped and counted; symlinks not followed.
"$z" build -d "$idx" "$tmp/tree" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "build exits 0 (got $rc, stderr: $(head -c 300 "$tmp/err"))" [ "$rc" = 0 ]
check "build made 2 index files (got $(zmi))" [ "$(zmi)" = 2 ]
check "build summary: built=2 fresh=0 failed=0, xz=1 skipped: $(cat "$tmp/out")" \
	grep -q 'built=2 fresh=0 failed=0; skipped: xz=1 other=1' "$tmp/out"
check "build is quiet off a terminal (stderr empty)" [ ! -s "$tmp/err" ]
check "build names what it built per format: gzip: $(cat "$tmp/out")" \
	grep -Eq '^gzip: 2 files, [0-9.]+ [KM]iB: index built for 2 \([0-9.]+ [KM]?i?B(ytes)? saved\)$' "$tmp/out"
check "build names what it built per format: xz, small Blocks: $(cat "$tmp/out")" \
	grep -Eq '^xz: 1 file, [0-9.]+ [KM]iB: no checkpoints needed \(small units\) for 1$' "$tmp/out"
"$z" info -d "$idx" "$tmp/outside/elsewhere.gz" > "$tmp/info"
check "symlinked directory not followed: elsewhere.gz has no index" [ "$(key index_state "$tmp/info")" = missing ]

# A second build finds every index fresh and builds none.
"$z" build -d "$idx" "$tmp/tree" > "$tmp/out" 2>&1
rc=$?
check "second build: exit 0, built=0 fresh=2: $(cat "$tmp/out")" eval '[ "$rc" = 0 ] && grep -q "built=0 fresh=2 failed=0" "$tmp/out"'
"$z" build -q -d "$idx" "$tmp/tree" > "$tmp/out" 2>&1
check "build -q prints nothing" [ ! -s "$tmp/out" ]
# On a terminal (script(1) gives it one), a progress line redrawn with \r.
if command -v script > /dev/null; then
	script -qec "'$z' build -d '$tmp/idx-tty' '$tmp/tree'" /dev/null > "$tmp/out" 2>&1 < /dev/null
	shown=$(tr '\r\033' '|~' < "$tmp/out")
	case "$shown" in
	*"|[#"*"] 1/3 files  "*"B/"*"iB  "*" left  "*"built=2 fresh=0"*) ok "build on a terminal draws a progress line: $shown" ;;
	*) bad "build on a terminal: no progress line in: $shown" ;;
	esac
fi

# info: fresh, the saved index used, sizes as gzip and xz say.
for f in tree/one.gz tree/sub/two-members.dat; do
	"$z" info -d "$idx" "$tmp/$f" > "$tmp/info" 2>&1
	rc=$?
	want=$(gzip -dc "$tmp/$f" | wc -c)
	check "info $f: exit 0, format=gzip, index fresh and used" eval \
		'[ "$rc" = 0 ] && [ "$(key format "$tmp/info")" = gzip ] && [ "$(key index_state "$tmp/info")" = fresh ] && [ "$(key index_used "$tmp/info")" = saved ]'
	check "info $f: uncompressed=$want" [ "$(key uncompressed "$tmp/info")" = "$want" ]
	check "info $f: compressed is the file size" [ "$(key compressed "$tmp/info")" = "$(stat -c %s "$tmp/$f")" ]
	ifile=$(key index_file "$tmp/info")
	check "info $f: index_file exists in the index dir, index_size is its size" eval \
		'[ "$(dirname "$ifile")" = "$idx" ] && [ "$(key index_size "$tmp/info")" = "$(stat -c %s "$ifile")" ]'
done
check "info two-members.dat: members=2" [ "$(key members "$tmp/info")" = 2 ]
"$z" info -d "$idx" "$tmp/tree/blocks.xz" > "$tmp/info" 2>&1
check "info blocks.xz: format=xz, blocks=$nblocks, uncompressed=$(xz -dc "$tmp/tree/blocks.xz" | wc -c)" eval \
	'[ "$(key format "$tmp/info")" = xz ] && [ "$(key blocks "$tmp/info")" = "$nblocks" ] && [ "$(key uncompressed "$tmp/info")" = "$(xz -dc "$tmp/tree/blocks.xz" | wc -c)" ]'

# A touched source has no index (files are named by size, mtime and ends: a new mtime is
# another name; the old file stays until prune); info then builds in memory and saves nothing.
touch -d '2001-02-03 04:05:06' "$tmp/tree/one.gz"
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "info after touch: index_state=missing, index_used=memory" eval \
	'[ "$(key index_state "$tmp/info")" = missing ] && [ "$(key index_used "$tmp/info")" = memory ]'
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "info saved nothing: still missing" [ "$(key index_state "$tmp/info")" = missing ]
"$z" build -d "$idx" "$tmp/tree" > "$tmp/out" 2>&1
check "build after touch rebuilds only that one: $(cat "$tmp/out")" grep -q 'built=1 fresh=1 failed=0' "$tmp/out"
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "info after rebuild: fresh" [ "$(key index_state "$tmp/info")" = fresh ]

# Item 7 of issue 10: an in-place rewrite that restores the mtime (touch -r, rsync --inplace -t)
# keeps size, inode and mtime; only ctime moves.  Since issue 20 a moved ctime sends the load to
# the whole-file hash: here the bytes are the same too, so the index is proven fresh (and rebound);
# other bytes are refused (check_idxfile's rename_proven_by_content, mount_rotate).
touch -r "$tmp/tree/one.gz" "$tmp/ref-times"
mtime_before=$(stat -c %y "$tmp/tree/one.gz")
sleep 0.05 # ctime ticks with the kernel's coarse clock
dd if="$tmp/tree/one.gz" of="$tmp/tree/one.gz" bs=64k conv=notrunc status=none
touch -r "$tmp/ref-times" "$tmp/tree/one.gz"
check "fixture: the rewrite kept the mtime ($mtime_before)" [ "$(stat -c %y "$tmp/tree/one.gz")" = "$mtime_before" ]
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "info after an in-place rewrite of the same bytes, mtime restored: fresh, saved ($(key index_state "$tmp/info"))" eval \
	'[ "$(key index_state "$tmp/info")" = fresh ] && [ "$(key index_used "$tmp/info")" = saved ]'
"$z" build -d "$idx" "$tmp/tree" > "$tmp/out" 2>&1
check "build after the rewrite finds both fresh: $(cat "$tmp/out")" grep -q 'built=0 fresh=2 failed=0' "$tmp/out"

# Item 9 of issue 10: a forged index (one window byte changed, CRC recomputed) planted by another
# user in a mode-1777 index directory must not be used, and nothing may be saved there.
reseal() { # FILE: flip a byte in the middle of the last window, then recompute the CRC-64/XZ
	python3 - "$1" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
le = lambda o, n: int.from_bytes(b[o:o + n], 'little')
plen, npoints = le(60, 4), le(112, 8)
recs = 136 + plen
wz = [le(recs + 32 * i + 20, 4) for i in range(npoints)]
assert wz[-1] > 0, 'the last checkpoint has no window'
b[len(b) - 8 - wz[-1] // 2] ^= 0x55
t = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0xC96C5795D7870F42 if c & 1 else c >> 1
    t.append(c)
c = (1 << 64) - 1
for x in b[:-8]:
    c = t[(c ^ x) & 0xFF] ^ (c >> 8)
b[-8:] = (c ^ ((1 << 64) - 1)).to_bytes(8, 'little')
open(p, 'wb').write(b)
PY
}
good=$tmp/idx-good shared=$tmp/shared
mkdir -p "$shared"
"$z" build -q -d "$good" "$tmp/tree/one.gz"
gfile=$(ls "$good"/*.zmi)
reseal "$gfile"
"$z" info -d "$good" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "control: the forged index is valid (CRC resealed) and used from a directory of ours" eval \
	'[ "$(key index_state "$tmp/info")" = fresh ] && [ "$(key index_used "$tmp/info")" = saved ]'
cp "$gfile" "$shared/"
chmod 1777 "$shared"
if [ "$(id -u)" = 0 ]; then chown 65534:65534 "$shared"/*.zmi; fi
forged_sum=$(cksum < "$shared/$(basename "$gfile")")
"$z" info -d "$shared" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "forged index in a 1777 dir: index_state=untrusted, index_used=memory ($(key index_state "$tmp/info"), $(key index_used "$tmp/info"): $(key index_reason "$tmp/info"))" eval \
	'[ "$(key index_state "$tmp/info")" = untrusted ] && [ "$(key index_used "$tmp/info")" = memory ]'
check "forged index in a 1777 dir: sizes still right" \
	[ "$(key uncompressed "$tmp/info")" = "$(gzip -dc "$tmp/tree/one.gz" | wc -c)" ]
"$z" build -d "$shared" "$tmp/tree" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "build into a 1777 dir: exit 2, nothing saved, forged file untouched (rc $rc, $(ls -A "$shared" | wc -l) entries)" eval \
	'[ "$rc" = 2 ] && [ "$(ls -A "$shared" | wc -l)" = 1 ] && [ "$(cksum < "$shared/$(basename "$gfile")")" = "$forged_sum" ]'
check "build into a 1777 dir says why: $(head -c 300 "$tmp/err")" grep -q "cannot save indexes in $shared" "$tmp/err"
if [ "$(id -u)" = 0 ]; then
	chmod 0700 "$shared"
	"$z" info -d "$shared" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
	check "forged index owned by uid 65534 in a 0700 dir of ours: untrusted ($(key index_reason "$tmp/info"))" eval \
		'[ "$(key index_state "$tmp/info")" = untrusted ] && [ "$(key index_used "$tmp/info")" = memory ]'
fi

# A corrupt gzip fails the build (exit 2), on one line naming it; no index for it.
"$z" build -d "$idx" "$tmp/tree" "$tmp/bad" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "build with a corrupt gzip exits 2 (got $rc)" [ "$rc" = 2 ]
check "build reports it on one line: $(cat "$tmp/err")" eval \
	'[ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "flipped.gz" "$tmp/err"'
check "build summary counts it: $(cat "$tmp/out")" grep -q 'built=0 fresh=2 failed=1; skipped: xz=2' "$tmp/out"
check "still 3 index files (2, and one.gz's before the touch, until prune)" [ "$(zmi)" = 3 ]

# verify: 0 all good, 2 corrupt (gzip and xz), 3 unreadable, 2 wins over 3.
vrf() { "$z" verify "$@" > "$tmp/vout" 2> "$tmp/verr"; echo $?; }
rc=$(vrf "$tmp/tree/one.gz" "$tmp/tree/sub/two-members.dat" "$tmp/tree/blocks.xz")
check "verify good files: exit 0 (got $rc), three ok lines" eval \
	'[ "$rc" = 0 ] && [ "$(grep -c ": ok$" "$tmp/vout")" = 3 ]'
rc=$(vrf "$tmp/bad/flipped.gz")
check "verify flipped.gz: exit 2 (got $rc): $(cat "$tmp/vout")" eval \
	'[ "$rc" = 2 ] && grep -q "^$tmp/bad/flipped.gz: corrupt: ." "$tmp/vout"'
rc=$(vrf "$tmp/bad/flipped.xz")
check "verify flipped.xz: exit 2 (got $rc): $(cat "$tmp/vout")" eval \
	'[ "$rc" = 2 ] && grep -q "^$tmp/bad/flipped.xz: corrupt: .*Block" "$tmp/vout"'
rc=$(vrf "$tmp/missing.gz")
check "verify a missing file: exit 3 (got $rc): $(cat "$tmp/vout")" eval \
	'[ "$rc" = 3 ] && grep -q "^$tmp/missing.gz: unreadable: " "$tmp/vout"'
rc=$(vrf "$tmp/tree/plain.txt")
check "verify a plain file: exit 3 (got $rc)" [ "$rc" = 3 ]
rc=$(vrf "$tmp/missing.gz" "$tmp/bad/flipped.xz" "$tmp/tree/one.gz")
check "verify missing + corrupt + good: exit 2, one line each (got $rc)" eval \
	'[ "$rc" = 2 ] && [ "$(wc -l < "$tmp/vout")" = 3 ] && grep -q "one.gz: ok$" "$tmp/vout"'

# Issue 12: reasons as data.  A truncated gzip and an xz with a flipped
# Block: verify prints each one's reason, with its compressed offset, on its
# own line and nothing on stderr; info prints the open's reason in error=;
# and the tool never points fd 2 elsewhere (no dup2/dup3 onto fd 2).
head -c 40000 "$tmp/tree/one.gz" > "$tmp/bad/cut.gz"
rc=$(vrf "$tmp/bad/cut.gz" "$tmp/bad/flipped.xz")
check "verify cut.gz and flipped.xz: exit 2, both reasons name the compressed offset: $(cat "$tmp/vout")" eval \
	'[ "$rc" = 2 ] && grep -q "^$tmp/bad/cut.gz: corrupt: .*compressed offset [0-9]" "$tmp/vout" &&
	 grep -q "^$tmp/bad/flipped.xz: corrupt: read error at offset [0-9]* (Block [0-9]*, compressed offset [0-9]*): ." "$tmp/vout"'
check "verify writes no log line of theirs to stderr: $(head -c 300 "$tmp/verr")" [ ! -s "$tmp/verr" ]
"$z" info -d "$idx" "$tmp/bad/cut.gz" > "$tmp/info" 2> /dev/null
check "info cut.gz: error= gives the reason: $(key error "$tmp/info")" eval \
	'key error "$tmp/info" | grep -q "compressed offset [0-9]"'
if strace -o /dev/null true 2> /dev/null; then
	strace -f -qq -e trace=dup2,dup3 -o "$tmp/strace" "$z" verify "$tmp/bad/cut.gz" "$tmp/bad/flipped.xz" > /dev/null 2>&1
	check "verify never redirects fd 2: $(grep -m1 -E 'dup[23]\([0-9]+, 2[,)]' "$tmp/strace")" eval \
		'! grep -Eq "dup[23]\([0-9]+, 2[,)]" "$tmp/strace"'
else
	echo "SKIP: strace cannot trace here, so fd 2 redirection is not checked"
fi

# prune: the index of a deleted source goes, the others stay.
"$z" info -d "$idx" "$tmp/tree/sub/two-members.dat" > "$tmp/info" 2>&1
gone=$(key index_file "$tmp/info")
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
kept=$(key index_file "$tmp/info")
rm "$tmp/tree/sub/two-members.dat"
"$z" prune -d "$idx" > "$tmp/out" 2>&1
rc=$?
check "prune: exit 0 (got $rc), removed 2 (the deleted source's, one.gz's before the touch): $(cat "$tmp/out")" eval '[ "$rc" = 0 ] && grep -q "removed 2 " "$tmp/out"'
check "prune removed the deleted source's index" [ ! -e "$gone" ]
check "prune kept the other index" [ -e "$kept" ]
"$z" info -d "$idx" "$tmp/tree/one.gz" > "$tmp/info" 2>&1
check "the kept index is still fresh" [ "$(key index_state "$tmp/info")" = fresh ]

# zstd: build saves the measured frame sizes of zstd written from a pipe (no Frame_Content_Size),
# finds them fresh the second time; a file whose frames state their size needs no index; info
# uses a fresh one; one that disagrees with the frames is refused; verify decodes every frame.
mkdir -p "$tmp/ztree" "$tmp/zbad"
zstd -q -c < "$tmp/t1" > "$tmp/ztree/stream.zst"
{ zstd -q -c < "$tmp/t2"; zstd -q -c < "$tmp/t1"; } > "$tmp/ztree/two-streams.dat"
zstd -q -c "$tmp/t2" > "$tmp/ztree/stated.zst"
cp "$tmp/ztree/stated.zst" "$tmp/zbad/flipped-stated.zst"
flip "$tmp/zbad/flipped-stated.zst" $(($(stat -c %s "$tmp/zbad/flipped-stated.zst") / 2))
cp "$tmp/ztree/stream.zst" "$tmp/zbad/flipped-stream.zst"
flip "$tmp/zbad/flipped-stream.zst" $(($(stat -c %s "$tmp/zbad/flipped-stream.zst") / 2))
check "fixtures: zstd -t rejects both flipped zstd files" eval \
	'! zstd -q -t "$tmp/zbad/flipped-stated.zst" 2>/dev/null && ! zstd -q -t "$tmp/zbad/flipped-stream.zst" 2>/dev/null'
zidx=$tmp/zidx
zmiz() { find "$zidx" -maxdepth 1 -name '*.zmi' 2>/dev/null | wc -l; }
"$z" build -d "$zidx" "$tmp/ztree" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "zstd build: exit 0 (got $rc, stderr: $(head -c 300 "$tmp/err")), built=2, stated.zst not needed: $(cat "$tmp/out")" eval \
	'[ "$rc" = 0 ] && grep -q "built=2 fresh=0 failed=0; skipped: xz=0 other=0; not needed: zstd=1" "$tmp/out"'
check "zstd build made 2 index files (got $(zmiz))" [ "$(zmiz)" = 2 ]
"$z" build -d "$zidx" "$tmp/ztree" > "$tmp/out" 2>&1
check "zstd second build: built=0 fresh=2: $(cat "$tmp/out")" grep -q 'built=0 fresh=2 failed=0' "$tmp/out"
for f in stream.zst two-streams.dat; do
	"$z" info -d "$zidx" "$tmp/ztree/$f" > "$tmp/info" 2>&1
	want=$(zstd -dc "$tmp/ztree/$f" | wc -c)
	check "info $f: format=zstd, index fresh and used, uncompressed=$want: $(tr '\n' ' ' < "$tmp/info")" eval \
		'[ "$(key format "$tmp/info")" = zstd ] && [ "$(key index_state "$tmp/info")" = fresh ] && [ "$(key index_used "$tmp/info")" = saved ] && [ "$(key uncompressed "$tmp/info")" = "$want" ]'
done
check "info two-streams.dat: frames=2" [ "$(key frames "$tmp/info")" = 2 ]
"$z" info -d "$zidx" "$tmp/ztree/stated.zst" > "$tmp/info" 2>&1
check "info stated.zst: index_state=unneeded, index_used=none" eval \
	'[ "$(key index_state "$tmp/info")" = unneeded ] && [ "$(key index_used "$tmp/info")" = none ]'
# A saved size more than its frame's blocks can hold (total and CRC fixed up): refused.
zforge() { # FILE: double frame 0's size and the total, then recompute the CRC-64/XZ
	python3 - "$1" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
le = lambda o, n: int.from_bytes(b[o:o + n], 'little')
put = lambda o, v: b.__setitem__(slice(o, o + 8), v.to_bytes(8, 'little'))
assert le(106, 2) == 2, 'not a zstd index'
rec = 136 + le(60, 4)  # version 5 header
u0 = le(rec + 16, 8)
put(rec + 16, 2 * u0)
put(72, le(72, 8) + u0)
c = (1 << 64) - 1
for x in b[:-8]:
    c ^= x
    for _ in range(8):
        c = (c >> 1) ^ 0xC96C5795D7870F42 if c & 1 else c >> 1
b[-8:] = (c ^ ((1 << 64) - 1)).to_bytes(8, 'little')
open(p, 'wb').write(b)
PY
}
"$z" info -d "$zidx" "$tmp/ztree/stream.zst" > "$tmp/info" 2>&1
zfile=$(key index_file "$tmp/info")
zforge "$zfile"
"$z" info -d "$zidx" "$tmp/ztree/stream.zst" > "$tmp/info" 2>&1
check "info with a forged zstd index: corrupt, not used, size still right ($(key index_reason "$tmp/info"))" eval \
	'[ "$(key index_state "$tmp/info")" = corrupt ] && [ "$(key index_used "$tmp/info")" = memory ] && [ "$(key uncompressed "$tmp/info")" = "$(zstd -dc "$tmp/ztree/stream.zst" | wc -c)" ]'
"$z" build -d "$zidx" "$tmp/ztree" > "$tmp/out" 2>&1
check "build replaces the forged zstd index: $(cat "$tmp/out")" grep -q 'built=1 fresh=1 failed=0' "$tmp/out"
touch -d '2001-02-03 04:05:06' "$tmp/ztree/stream.zst"
"$z" info -d "$zidx" "$tmp/ztree/stream.zst" > "$tmp/info" 2>&1
check "info after touching a zstd source: missing, memory" eval \
	'[ "$(key index_state "$tmp/info")" = missing ] && [ "$(key index_used "$tmp/info")" = memory ]'
rc=$(vrf "$tmp/ztree")
check "verify the zstd tree: exit 0 (got $rc), three ok lines: $(cat "$tmp/vout")" eval \
	'[ "$rc" = 0 ] && [ "$(grep -c ": ok$" "$tmp/vout")" = 3 ]'
rc=$(vrf "$tmp/zbad/flipped-stated.zst")
check "verify decodes frames that state their size: flipped-stated.zst exit 2 (got $rc): $(cat "$tmp/vout")" eval \
	'[ "$rc" = 2 ] && grep -q "flipped-stated.zst: corrupt: ." "$tmp/vout"'
rc=$(vrf "$tmp/zbad/flipped-stream.zst")
check "verify flipped-stream.zst: exit 2 (got $rc): $(cat "$tmp/vout")" eval \
	'[ "$rc" = 2 ] && grep -q "flipped-stream.zst: corrupt: ." "$tmp/vout"'
"$z" build -q -d "$zidx" "$tmp/ztree" # stream.zst was touched: fresh again
rm "$tmp/ztree/two-streams.dat"
"$z" prune -d "$zidx" > "$tmp/out" 2>&1
check "prune removes the zstd index of a deleted source and stream.zst's before the touch, keeps the other: $(cat "$tmp/out")" eval \
	'grep -q "removed 2 " "$tmp/out" && [ "$(zmiz)" = 1 ]'
"$z" build -d "$zidx" "$tmp/zbad" > "$tmp/out" 2> "$tmp/err"
rc=$?
check "build over corrupt zstd: exit 2 (got $rc), flipped-stream.zst failed: $(cat "$tmp/out" "$tmp/err")" eval \
	'[ "$rc" = 2 ] && grep -q "flipped-stream.zst" "$tmp/err"'

# Checkpoints (issue 19): a one-Block xz and a one-frame zstd of 44 MB get them, saved in
# .zmc files; a second build finds them fresh; a Block with a BCJ filter gets none, quietly.
mkdir -p "$tmp/ck"
for i in $(seq 1 8); do cat "$tmp/t2"; done > "$tmp/t8"        # about 11 MB of varied lines
for i in 1 2 3 4; do cat "$tmp/t8"; done > "$tmp/big"              # 44 MB: over two 16 MiB spans
xz -T1 -1 -c "$tmp/big" > "$tmp/ck/one.xz"
zstd -q -3 -c "$tmp/big" > "$tmp/ck/one.zst"
xz -T1 --x86 --lzma2=preset=1 -c "$tmp/big" > "$tmp/ck/bcj.xz"
cidx=$tmp/cidx
"$z" build -d "$cidx" "$tmp/ck" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "checkpoints: build exit 0 (got $rc, $(head -c 300 "$tmp/err")), built=2: $(cat "$tmp/out")" eval \
	'[ "$rc" = 0 ] && grep -q "checkpoints: built=2 fresh=0 failed=0" "$tmp/out"'
check "checkpoints: two .zmc files" eval '[ "$(find "$cidx" -name "*.zmc" | wc -l)" = 2 ]'
check "checkpoints: the xz line names them and their size: $(cat "$tmp/out")" \
	grep -Eq '^xz: 2 files, [0-9.]+ MiB: checkpoints built for 1, no checkpoints possible for 1 \([0-9.]+ [KM]iB saved\)$' "$tmp/out"
check "checkpoints: the zstd line names them and their size: $(cat "$tmp/out")" \
	grep -Eq '^zstd: 1 file, [0-9.]+ MiB: .*checkpoints built for 1 \([0-9.]+ [KM]iB saved\)$' "$tmp/out"
# On a terminal, a long pass shows its bytes moving: a rate and the time left (pv's way).
if command -v script > /dev/null; then
	script -qec "'$z' build -d '$tmp/cidx-tty' '$tmp/ck/one.xz'" /dev/null > "$tmp/out" 2>&1 < /dev/null
	shown=$(tr '\r\033' '|~' < "$tmp/out")
	case "$shown" in
	*"|["*"] 0/1 files  "*"iB/"*"iB  "*"iB/s  "*" left  "*"e.xz"*"xz: 1 file"*) ok "build on a terminal: rate and time left during one file's pass" ;;
	*) bad "build on a terminal: no rate or time left in: $(printf '%s' "$shown" | tail -c 600)" ;;
	esac
fi
"$z" build -d "$cidx" "$tmp/ck" > "$tmp/out" 2> "$tmp/err"
check "checkpoints: second build finds them fresh: $(cat "$tmp/out")" grep -q "checkpoints: built=0 fresh=2 failed=0" "$tmp/out"
"$z" info -d "$cidx" "$tmp/ck/one.xz" > "$tmp/out" 2> "$tmp/err"
check "checkpoints: info says fresh: $(tr '\n' ' ' < "$tmp/out")" eval \
	'[ "$(key checkpoint_units "$tmp/out")" = 1 ] && [ "$(key checkpoints_state "$tmp/out")" = fresh ]'
touch "$tmp/ck/one.xz"
"$z" info -d "$cidx" "$tmp/ck/one.xz" > "$tmp/out" 2> "$tmp/err"
check "checkpoints: info after touch says missing: $(tr '\n' ' ' < "$tmp/out")" eval \
	'[ "$(key checkpoints_state "$tmp/out")" = missing ]'
"$z" info -d "$cidx" "$tmp/tree/blocks.xz" > "$tmp/out" 2> "$tmp/err"
check "checkpoints: info on small Blocks says unneeded" eval '[ "$(key checkpoints_state "$tmp/out")" = unneeded ]'
"$z" build -d "$tmp/nidx" "$tmp/tree" > "$tmp/out" 2> "$tmp/err"
check "checkpoints: none for small units: $(cat "$tmp/out")" grep -q "checkpoints: built=0 fresh=0 failed=0" "$tmp/out"

# Usage.
"$z" frobnicate > /dev/null 2> "$tmp/err"; rc=$?
check "unknown subcommand exits 1 with one line (got $rc)" eval '[ "$rc" = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ]'
"$z" build --bogus "$tmp/tree" > /dev/null 2>&1; rc=$?
check "unknown option exits 1 (got $rc)" [ "$rc" = 1 ]
"$z" verify > /dev/null 2>&1; rc=$?
check "verify without a file exits 1 (got $rc)" [ "$rc" = 1 ]
"$z" > /dev/null 2>&1; rc=$?
check "no subcommand exits 1 (got $rc)" [ "$rc" = 1 ]
"$z" --help > "$tmp/out" 2>&1; rc=$?
check "--help exits 0 and documents verify's exit codes" eval '[ "$rc" = 0 ] && grep -q "3 some file could not be read" "$tmp/out"'

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

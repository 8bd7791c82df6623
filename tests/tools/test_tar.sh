#!/usr/bin/env bash
# zmount-info --members and zmount-cat FILE MEMBER against GNU tar (issue 34):
# archives made here with every --format (ustar, gnu, oldgnu, pax, v7), long names
# over 100 and 255 bytes, symlinks, hard links, sparse files (gnu/oldgnu 'S'
# headers, pax sparse 0.0, 0.1, 1.0), each plain and compressed with gzip, xz (one
# Block, and 64 KiB Blocks) and zstd:
#   - `zmount-info --members`, less its file and offset fields, equals
#     `tar --full-time -tvf` (type, mode, owner, size, time to the nanosecond, name,
#     link target), names in normal form;
#   - `zmount-cat FILE MEMBER` of every regular member equals `tar -xOf TAR MEMBER`,
#     and a hard link gives its target's bytes (as tar -x leaves it);
#   - the offset zmount-info gives is where the member's bytes are: `zmount-cat FILE
#     OFFSET SIZE` of a non-sparse member gives them too;
#   - a missing member: one line on stderr, exit 1; a member named like a number is
#     read as ./NAME;
#   - damaged tars (cut short, a bad header checksum, names that escape, a bad pax
#     record length, a pax size past the end) give their reason and exit status.
# Usage: test_tar.sh BINDIR (where zmount-info and zmount-cat are).
set -euo pipefail
info=$1/zmount-info
cat=$1/zmount-cat
for b in "$info" "$cat"; do [ -x "$b" ] || { echo "test_tar: no $b" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/zmount-tar-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export TZ=UTC LC_ALL=C
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# -- the source tree ---------------------------------------------------------------
src=$tmp/src
mkdir -p "$src/short" "$src/mid" "$src/long"
cd "$src"
: >short/empty
printf x >short/one
head -c 511 /dev/urandom >short/f511
head -c 512 /dev/urandom >short/f512
head -c 513 /dev/urandom >short/f513
head -c 300000 /dev/urandom >short/big
echo "a space" >"short/with space"
printf '#!/bin/sh\n' >short/exec && chmod 755 short/exec
ln -s one short/sym
ln short/f513 short/hard
touch -d '2021-05-06 07:08:09.123456789' short/one short/f511
touch -d '2021-05-06 07:08:09.5' short/exec # tar --full-time writes ".5"
# over 100 bytes, split by ustar into prefix and name: 236 bytes
d60=$(printf 'c%.0s' $(seq 60))
d80=$(printf 'd%.0s' $(seq 80))
n90=$(printf 'n%.0s' $(seq 90))
mkdir -p "mid/$d60/$d80" && echo mid >"mid/$d60/$d80/$n90"
d200=$(printf 'e%.0s' $(seq 200))
d100=$(printf 'f%.0s' $(seq 100))
n120=$(printf 'g%.0s' $(seq 120))
mkdir -p "long/$d200/$d100" && head -c 5000 /dev/urandom >"long/$d200/$d100/$n120"
ln -s "$d200/$d100/$n120" long/longlink
# sparse: data at 0 and at 1 MiB, a hole to the end at 3 MiB
mkdir sparse && head -c 4096 /dev/urandom >sparse/sp
head -c 8192 /dev/urandom | dd of=sparse/sp bs=1 seek=1048576 conv=notrunc status=none
truncate -s 3M sparse/sp
cd - >/dev/null

# -- archives ----------------------------------------------------------------------
arc=$tmp/arc
mkdir "$arc"
mk() { # NAME TAR-FLAGS... -- MEMBERS...
	local name=$1 flags=() ; shift
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	tar "${flags[@]}" -C "$src" -cf "$arc/$name.tar" "$@"
}
mk v7 --format=v7 -- short
mk ustar --format=ustar -- short mid
mk gnu --format=gnu -S -- short mid long sparse
mk oldgnu --format=oldgnu -S -- short mid long sparse
mk pax --format=pax -- short mid long sparse
for v in 0.0 0.1 1.0; do mk "pax-sparse$v" --format=pax --sparse-version=$v -- sparse short; done
for t in "$arc"/*.tar; do
	gzip -kn "$t"
	xz -k -T1 "$t"
	zstd -q -k "$t"
	xz -T1 --block-size=65536 -c "$t" >"${t%.tar}-blocks.tar.xz"
done

# tar's listing in the form zmount-info writes it, less the tabs: one space apart,
# names in normal form
tarlist() {
	tar --full-time -tvf "$1" | tr -s ' ' | sed -E 's#^(d[^ ]* [^ ]* [^ ]* [^ ]* [^ ]* .*)/$#\1#'
}
# zmount-info --members FILE, less its first two fields (file, offset), one space apart
members() {
	"$info" --members "$1" | { grep -v $'\terror\t' || true; } | cut -f3- | tr '\t' ' '
}

# TAR FILE WANT XDIR: FILE (TAR or a compressed copy) against WANT (tarlist TAR),
# tar -xOf TAR and the members tar -x wrote to XDIR (for hard links).
check_archive() {
	local tarf=$1 f=$2 want=$3 x=$4 got
	got=$(members "$f") || { fail "$f: zmount-info --members exits $?"; return; }
	[ "$got" = "$want" ] || { fail "$f: list differs"; diff <(echo "$want") <(echo "$got") | head -5 >&2; }
	while IFS=$'\t' read -r _ off mode _ size _ name _; do
		case $mode in
		-*)
			cmp -s <(tar -xOf "$tarf" "$name") <("$cat" "$f" "$name") ||
				fail "$f: zmount-cat $name differs from tar -xOf"
			# the offset: the member's bytes in the archive's decoded bytes (the
			# stored bytes of a sparse member are not the member's)
			case $name in sparse/*) continue ;; esac
			if [ "$f" = "$tarf" ]; then
				cmp -s <(tar -xOf "$tarf" "$name") <(tail -c +$((off + 1)) "$f" | head -c "$size")
			else
				cmp -s <(tar -xOf "$tarf" "$name") <("$cat" "$f" "$off" "$size")
			fi || fail "$f: $name not at offset $off"
			;;
		h*) cmp -s "$x/$name" <("$cat" "$f" "$name") || fail "$f: zmount-cat $name (hard link)" ;;
		esac
	done < <("$info" --members "$f")
}

n=0
for t in "$arc"/*.tar; do
	want=$(tarlist "$t")
	rm -rf "$tmp/x" && mkdir "$tmp/x" && tar -C "$tmp/x" -xf "$t"
	for f in "$t" "$t.gz" "$t.xz" "$t.zst" "${t%.tar}-blocks.tar.xz"; do
		check_archive "$t" "$f" "$want" "$tmp/x"
		n=$((n + 1))
	done
done
echo "test_tar: $n archives listed and read"

# -- a missing member, a member named like a number ------------------------------------
f=$arc/ustar.tar.gz
st=0
"$cat" "$f" short/nope >"$tmp/out" 2>"$tmp/err" || st=$?
[ "$st" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(grep -c '' "$tmp/err")" = 1 ] &&
	grep -q 'short/nope: no such member' "$tmp/err" ||
	fail "zmount-cat of a missing member: exit $st, stderr $(cat "$tmp/err")"
mkdir -p "$tmp/num" && printf 'member 42\n' >"$tmp/num/42" && printf 'other\n' >"$tmp/num/x"
tar -C "$tmp/num" -czf "$tmp/num.tar.gz" 42 x
[ "$("$cat" "$tmp/num.tar.gz" ./42)" = "member 42" ] || fail "zmount-cat FILE ./42"
[ "$("$cat" "$tmp/num.tar.gz" 0 2)" = "42" ] || fail "zmount-cat FILE 0 2 is not a range"
st=0
"$cat" "$tmp/num.tar.gz" 42 >/dev/null 2>&1 || st=$?
[ "$st" = 0 ] || fail "zmount-cat FILE 42 (an offset) exits $st"
st=0
printf 'not a tar\n' | gzip >"$tmp/plain.gz"
"$info" --members "$tmp/plain.gz" >"$tmp/out" 2>/dev/null || st=$?
[ "$st" = 2 ] && grep -q $'\terror\tnot a tar: ' "$tmp/out" ||
	fail "zmount-info --members of a gzip of text: exit $st, $(cat "$tmp/out")"

# -- damaged tars --------------------------------------------------------------------
bad=$tmp/bad
mkdir "$bad"
python3 - "$bad" "$arc/gnu.tar" <<'PY'
import io, sys, tarfile
out, gnu = sys.argv[1], sys.argv[2]
def member(tf, name, data=b"x"):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tf.addfile(ti, io.BytesIO(data))
with tarfile.open(out + "/escape.tar", "w", format=tarfile.GNU_FORMAT) as tf:
    for name in ("ok-first", "../evil", "/abs/path", "a/../../b", "ok-last"):
        member(tf, name)
# a bad checksum in the second header
with tarfile.open(out + "/cksum.tar", "w", format=tarfile.USTAR_FORMAT) as tf:
    for name in ("one", "two", "three"):
        member(tf, name)
b = bytearray(open(out + "/cksum.tar", "rb").read())
b[1024 + 5] ^= 0x20
open(out + "/cksum.tar", "wb").write(b)
# a pax record whose length is one too many
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
    member(tf, "first")
    member(tf, "p" * 120)
b = bytearray(buf.getvalue())
rec = b.index(b" path=")
b[rec - 1] += 1
open(out + "/paxlen.tar", "wb").write(b)
# a pax size of 9 GiB: more than the octal field holds, and more than the archive
ti = tarfile.TarInfo("huge")
ti.size = 9 << 30
open(out + "/paxsize.tar", "wb").write(ti.tobuf(tarfile.PAX_FORMAT) + bytes(4096))
# cut short inside a member's data
data = open(gnu, "rb").read()
open(out + "/cut.tar", "wb").write(data[: len(data) // 2])
PY
for f in "$bad"/*.tar; do gzip -kn "$f"; done

expect() { # FILE STATUS MEMBERS-LISTED STDERR-PATTERN
	local out err st=0
	"$info" --members "$1" >"$tmp/out" 2>"$tmp/err" || st=$?
	out=$(grep -v $'\terror\t' "$tmp/out" || true)
	err=$(cat "$tmp/err")
	[ "$st" = "$2" ] || fail "$1: exit $st, not $2 ($err)"
	[ "$3" = - ] || [ "$(echo -n "$out" | grep -c '^')" = "$3" ] || fail "$1: $(echo -n "$out" | grep -c '^') members listed, not $3"
	grep -qE "$4" <<<"$err" || fail "$1: stderr '$err' lacks /$4/"
}
for f in "$bad"/escape.tar "$bad"/escape.tar.gz; do
	expect "$f" 0 2 'member at offset 1024 left out \(a "\.\." segment'
	[ "$(grep -c 'left out' "$tmp/err")" = 3 ] || fail "$f: not 3 members left out"
	grep -q 'absolute name' "$tmp/err" || fail "$f: the absolute name is not named"
done
expect "$bad/cksum.tar.gz" 2 1 'the header at offset 1024 fails its checksum'
expect "$bad/paxlen.tar.gz" 2 1 'pax header at offset 1024: bad record length'
# 9 GiB from the data's offset, 1536: the pax record's size, not the header's field
expect "$bad/paxsize.tar" 2 0 'runs past the end of the archive \(its data ends at 9663677952,'
# the members before the one cut short, as tar lists them
expect "$bad/cut.tar.gz" 2 - 'the member at offset [0-9]+ runs past the end of the archive'
got=$(members "$bad/cut.tar.gz" 2>/dev/null) || true
[ -n "$got" ] && [ "$got" = "$(tarlist "$bad/cut.tar" 2>/dev/null | head -n "$(echo "$got" | wc -l)")" ] ||
	fail "cut.tar.gz: the members before the cut differ from tar's"
# (a tar cut short where the scanner does not know the size, found at EOF, is
# check_tarscan's: the reader always knows it.)
st=0
"$cat" "$bad/escape.tar" ../evil >/dev/null 2>&1 || st=$?
[ "$st" = 1 ] || fail "cat of a dropped member exits $st, not 1"
echo "test_tar: damaged tars checked"
[ "$fails" = 0 ] || { echo "test_tar: $fails failures" >&2; exit 1; }

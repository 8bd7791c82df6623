#!/usr/bin/env bash
# make-seeds.sh SEEDER CORPUS OUT -- writes the seed corpora of the fuzz targets.
#
#   SEEDER  the fuzz_seed_idx binary (saves real index files with our own code)
#   CORPUS  the shared conformance corpus (../shared/corpus from the repo root)
#   OUT     gets one directory per target: xz/ gz/ idxfile/ opts/ zstd/ lzma2/
#
# Seeds:
#   xz/       CORPUS/xz-utils/*.xz, plus small files made here with xz: several
#             Blocks with and without sizes in their headers, every check type,
#             x86 and delta filters, concatenated Streams with Stream Padding,
#             an empty file, a small dictionary.
#   gz/       the cases of CORPUS/make-gzip-cases.sh up to 1 MiB (about 15 s),
#             plus small files made here: several 64 KiB checkpoints in a few
#             KiB of input, stored blocks, several members, trailing zeros and
#             garbage, FNAME/FCOMMENT/FEXTRA/FHCRC headers, bgzf, empty.
#   idxfile/  index files saved by SEEDER for the good gzip seeds, span 64 KiB.
#   opts/     option strings, valid and not.
#   zstd/     small files made here with zstd and pzstd: levels, from a pipe
#             (no Frame_Content_Size), no checksum, --long=27, empty, RLE and
#             raw blocks, pzstd, concatenated, skippable frames, a trained
#             dictionary, a seekable-format file with its seek table.
#   lzma2/    raw LZMA2 data made here with xz --format=raw: presets 0, 6 and
#             9e, a 4 KiB dictionary, lc/lp/pb extremes, random bytes
#             (uncompressed chunks), zeros, empty, and text mixed with random.
# Deterministic: no timestamps or random bytes go into any seed.  Everything
# large stays in OUT (a build directory); nothing is written to CORPUS.
# Writes OUT/.complete last, and does nothing if it is already there.
set -euo pipefail
export LC_ALL=C
[ $# -eq 3 ] || { echo "usage: $0 SEEDER CORPUS OUT" >&2; exit 2; }
seeder=$1 corpus=$2 out=$3
[ -f "$out/.complete" ] && { echo "seeds already in $out"; exit 0; }
for t in xz gzip pigz bgzip python3 perl; do
	command -v $t >/dev/null || { echo "make-seeds: missing tool $t" >&2; exit 2; }
done
[ -d "$corpus/xz-utils" ] || { echo "make-seeds: no corpus at $corpus" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"/{xz,gz,idxfile,opts}
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/zmount-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Text that compresses about 4:1, and text that compresses about 200:1.
perl -e 'srand(7); my @w = map { join "", map { chr(97 + int rand 26) } 1 .. 1 + int rand 8 } 1 .. 500;
	 for my $l (1 .. 6000) { print join(" ", map { $w[int rand @w] } 1 .. 8), "\n" }' >"$work/words"
perl -e 'printf "line %07d of a very regular log file\n", $_ for 1 .. 9000' >"$work/lines"
head -c 40000 "$work/words" >"$work/words40k"

echo "== xz seeds"
cp "$corpus"/xz-utils/*.xz "$out/xz/"
x() { # x NAME INPUT XZ-OPTIONS...
	local name=$1 in=$2
	shift 2
	xz -c "$@" <"$in" >"$out/xz/gen-$name.xz"
}
x blocks-T1 "$work/lines" -T1 --block-size=64KiB
x blocks-T2 "$work/lines" -T2 --block-size=64KiB
x blocks-uneven "$work/words40k" -T1 --block-list=1,100,4096,0
x check-none "$work/words40k" --check=none -0
x check-crc32 "$work/words40k" --check=crc32 -0
x check-sha256 "$work/words40k" --check=sha256 -0
x x86 "$work/words40k" --x86 --lzma2=preset=0
x delta "$work/words40k" --delta=dist=4 --lzma2=preset=0
x dict4k "$work/lines" --lzma2=dict=4KiB
x empty /dev/null
head -c 3000 "$work/lines" | xz -c -T1 --block-size=1000 >"$work/a.xz"
head -c 2000 "$work/words" | xz -c --check=crc32 >"$work/b.xz"
{ cat "$work/a.xz"; head -c 8 /dev/zero; xz -c </dev/null; cat "$work/b.xz"; head -c 4 /dev/zero; } \
	>"$out/xz/gen-streams-padding.xz"

echo "== gzip seeds (make-gzip-cases.sh, up to 1 MiB each)"
bash "$corpus/make-gzip-cases.sh" "$work/gzc" >"$work/gzc.log" 2>&1 ||
	{ cat "$work/gzc.log" >&2; exit 1; }
find "$work/gzc" -name '*.gz' -size -1025k -exec cp {} "$out/gz/" \;
g() { # g NAME INPUT COMMAND...: the command reads INPUT on stdin
	local name=$1 in=$2
	shift 2
	"$@" <"$in" >"$out/gz/gen-$name.gz"
}
g lines-9 "$work/lines" gzip -9n
g lines-1 "$work/lines" gzip -1n
g words-6 "$work/words40k" gzip -6n
g empty /dev/null gzip -n
g bgzf "$work/lines" bgzip -c
g pigz-indep "$work/lines" pigz -n -i -b 32
cat "$out/gz/gen-lines-1.gz" "$out/gz/gen-empty.gz" "$out/gz/gen-words-6.gz" >"$out/gz/gen-members.gz"
{ cat "$out/gz/gen-lines-9.gz"; head -c 100 /dev/zero; } >"$out/gz/gen-trail-zeros.gz"
{ cat "$out/gz/gen-words-6.gz"; printf 'garbage\n'; } >"$out/gz/gen-trail-garbage.gz"
python3 - "$work/lines" "$work/words40k" "$out/gz" <<'PY'
import gzip, struct, sys, zlib
lines, words, out = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read(), sys.argv[3]
def raw(data, level):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()
def member(data, flags=0, extra=b'', name=b'', comment=b'', level=6):
    hdr = b'\x1f\x8b\x08' + bytes([flags]) + b'\0\0\0\0\0\xff'
    if flags & 4: hdr += struct.pack('<H', len(extra)) + extra
    if flags & 8: hdr += name + b'\0'
    if flags & 16: hdr += comment + b'\0'
    if flags & 2: hdr += struct.pack('<H', zlib.crc32(hdr) & 0xffff)
    return hdr + raw(data, level) + struct.pack('<II', zlib.crc32(data), len(data) & 0xffffffff)
def put(name, b):
    open(f'{out}/gen-{name}.gz', 'wb').write(b)
put('stored', member(lines[:150000], level=0))
put('all-flags', member(words[:5000], 2 | 4 | 8 | 16, b'AB\x02\0xy', b'name.txt', b'a comment'))
put('fhcrc', member(words[:3000], 2))
put('fextra-big', member(b'x' * 1000, 4, b'Z' * 6000))
put('members-small', b''.join(member(lines[i:i + 20000]) for i in range(0, 100000, 20000)))
put('python', gzip.compress(lines, 9, mtime=0))
PY

echo "== idxfile seeds (indexes saved by $(basename "$seeder"))"
mkdir -p "$work/src"
for f in gen-lines-9 gen-lines-1 gen-members gen-trail-zeros gen-trail-garbage gen-stored \
	gen-pigz-indep gen-bgzf gen-members-small gen-words-6 gen-empty; do
	cp "$out/gz/$f.gz" "$work/src/"
done
# a few of the shared cases too, so the fuzzer sees the indexes of odd files
for f in "$work"/gzc/good-*.gz; do
	[ "$(stat -c %s "$f")" -le 200000 ] && cp "$f" "$work/src/"
done
"$seeder" "$out/idxfile" 65536 "$work"/src/*.gz 2>"$work/seeder.log" ||
	{ cat "$work/seeder.log" >&2; exit 1; }
"$seeder" "$work/idx-1m" 1048576 "$work/src/gen-lines-9.gz" >/dev/null
cp "$work"/idx-1m/*.zmi "$out/idxfile/span-1m.zmi"

echo "== opts seeds"
n=0
while IFS= read -r line; do
	n=$((n + 1))
	printf '%s' "$line" >"$out/opts/opt-$n"
done <<'OPTS'
cache_size=256M,span=1M,timeout=1,log_level=info
cache_size=1M,span=64K,timeout=0,threads=1,log_level=error
cache_size=18446744073709551615,span=67108864,timeout=3600,threads=256
cache_size=4GiB,span=64KiB,timeout=0.5,log_level=debug,noindex
index_dir=none,index_dir=/var/cache/zmount,threads=2
span=63K,span=65M,span=1T,cache_size=1023K,timeout=3601,timeout=-1
timeout=1e3,timeout=0x10,timeout=nan,timeout=inf,threads=0,threads=257,threads=1K
log_level=warning,log_level=WARN,log_level=,noindex=1,ro,allow_other,default_permissions
index_dir=relative,index_dir=,cache_size=,span=K,cache_size=99999999999999999999
fsname=zmount,subtype=zmount,max_read=131072,cache_size=2tib,span=1mb
index_dir=s3://bucket/fleet/idx/,index_dir=s3://,index_dir=s3://b,endpoint=http://127.0.0.1:7480,region=eu-west-1,retries=3
OPTS

echo "== zstd seeds"
for t in zstd pzstd; do
	command -v $t >/dev/null || { echo "make-seeds: missing tool $t" >&2; exit 2; }
done
mkdir -p "$out/zstd"
z() { # z NAME INPUT ZSTD-OPTIONS...: the input goes through a pipe (no FCS) if INPUT is "-INPUT"
	local name=$1 in=$2
	shift 2
	case $in in
	-*) cat "${in#-}" | zstd -q -c "$@" >"$out/zstd/gen-$name.zst" ;;
	*) zstd -q -c "$@" "$in" >"$out/zstd/gen-$name.zst" ;;
	esac
}
le32() { local v=$1; printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)))"; }
z level1 "$work/lines" -1
z level19 "$work/words40k" -19
z pipe -"$work/words40k" -3
z nocheck "$work/words40k" --no-check
z long27 -"$work/words40k" --long=27
z empty -/dev/null
head -c 300 "$work/words" >"$work/tiny"
z tiny "$work/tiny" -3
head -c 20000 /dev/zero >"$work/zeros"
z rle -"$work/zeros" -3
perl -e 'my $x = 7; for (1 .. 20000) { $x = ($x * 1103515245 + 12345) & 0x7fffffff; print chr(($x >> 16) & 255) }' >"$work/rnd"
z raw "$work/rnd" -3
pzstd -q -p2 -1 -c "$work/lines" >"$out/zstd/gen-pzstd.zst"
cat "$out/zstd/gen-tiny.zst" "$out/zstd/gen-empty.zst" "$out/zstd/gen-pipe.zst" >"$out/zstd/gen-concat.zst"
{ le32 $((0x184D2A50)); le32 4; printf abcd; cat "$out/zstd/gen-tiny.zst"; le32 $((0x184D2A5F)); le32 0; } \
	>"$out/zstd/gen-skippable.zst"
mkdir -p "$work/samples"
split -b 1000 "$work/words40k" "$work/samples/s."
zstd -q --train "$work"/samples/s.* -o "$work/dict" --maxdict=4096 >/dev/null 2>&1
z dict "$work/tiny" -D "$work/dict"
# seekable format: three frames from pipes and their seek table (8-byte entries)
head -c 1000 "$work/words" >"$work/p1"
head -c 3000 "$work/lines" >"$work/p2"
head -c 2000 "$work/words40k" >"$work/p3"
{
	for p in p1 p2 p3; do zstd -q -c <"$work/$p" >"$work/$p.zst"; cat "$work/$p.zst"; done
	le32 $((0x184D2A5E)); le32 $((3 * 8 + 9))
	for p in p1 p2 p3; do le32 "$(stat -c %s "$work/$p.zst")"; le32 "$(stat -c %s "$work/$p")"; done
	le32 3; printf '\000'; le32 $((0x8F92EAB1))
} >"$out/zstd/gen-seekable.zst"

echo "== lzma2 seeds (raw LZMA2 data, as inside an xz Block)"
mkdir -p "$out/lzma2"
l() { # l NAME INPUT LZMA2-OPTIONS: dictionaries of at most 1 MiB, the harness's usual one
	xz -q --format=raw --lzma2="$3" -c <"$2" >"$out/lzma2/gen-$1.lzma2"
}
l words-p0 "$work/words40k" preset=0
l words-p6 "$work/words40k" preset=6,dict=1MiB
l words-p9e "$work/words40k" preset=9e,dict=1MiB
l lines-dict4k "$work/lines" preset=6,dict=4KiB
l words-lc0lp4 "$work/words40k" preset=6,dict=64KiB,lc=0,lp=4,pb=4
l words-lc4pb0 "$work/words40k" preset=6,dict=64KiB,lc=4,lp=0,pb=0
l rnd "$work/rnd" preset=6,dict=64KiB
l zeros "$work/zeros" preset=6,dict=64KiB
l empty /dev/null preset=0
l tiny "$work/tiny" preset=6,dict=4KiB
cat "$work/rnd" "$work/words40k" "$work/rnd" "$work/words40k" >"$work/mix"
l mix "$work/mix" preset=6,dict=64KiB

echo "== tarscan seeds (GNU tar's formats, small)"
mkdir -p "$out/tarscan" "$work/tree/d"
printf 'hello\n' >"$work/tree/d/f"
ln -s f "$work/tree/d/s"
ln "$work/tree/d/f" "$work/tree/d/h"
ln=$(printf 'n%.0s' $(seq 150))
printf x >"$work/tree/$ln"
head -c 1024 "$work/rnd" >"$work/tree/sp"
truncate -s 40000 "$work/tree/sp"
for f in v7 ustar; do tar --format=$f -C "$work/tree" -cf "$out/tarscan/$f.tar" d; done
for f in gnu oldgnu pax; do tar --format=$f -S -C "$work/tree" -cf "$out/tarscan/$f.tar" .; done
for v in 0.0 0.1 1.0; do
	tar --format=pax --sparse-version=$v -C "$work/tree" -cf "$out/tarscan/pax-sparse$v.tar" sp
done

# one record of what was made, for the log of whoever runs this
for d in xz gz idxfile opts zstd lzma2 tarscan; do
	printf '%-8s %4d files, %7d KiB\n' "$d" "$(ls "$out/$d" | wc -l)" "$(du -sk "$out/$d" | cut -f1)"
done
touch "$out/.complete"

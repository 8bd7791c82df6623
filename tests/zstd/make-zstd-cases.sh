#!/usr/bin/env bash
# make-zstd-cases.sh -- deterministic generator of .zst conformance cases
# plus EXPECTED.tsv, in the style of ../shared/corpus/make-{gzip,xz}-cases.sh
# (same columns 1-7), with `zstd -t` / `zstd -dc` as the oracle.
#
# usage: make-zstd-cases.sh OUTDIR
#
# Needs: bash, coreutils, zstd and pzstd (Debian package zstd), perl.
# Everything is derived from fixed seeds.  Compressed bytes can differ with
# other zstd versions; decompressed bytes (column 3) cannot.  Exits 1 if a
# case does not land in the class its name promises:
#   good-  `zstd -t` exits 0;
#   bad-   `zstd -t` fails: the daemon must give EIO (and log a line);
#   raw-   `zstd -t` fails for want of a dictionary or memory, and the same
#          file decodes when zstd is given them (-D dict, --memory=2048MB):
#          a valid file zmount shows raw, under its own name, with a log line.
#
# EXPECTED.tsv columns (tab separated, '-' = not applicable):
#  1 file     2 expect (ok|error by `zstd -t`)
#  3 sha256   of `zstd -dc` for ok rows; for raw- rows, of the decode with
#             the dictionary or memory it needs
#  4 usize    byte count of that output
#  5 rc       exit code of `zstd -q -t FILE`
#  6 message  its stderr, the file name prefix removed ("NAME : ", where zstd
#             shortens NAME, or "zstd: NAME: "), lines joined with " | "
#  7 tags     what the case exercises; from=<good case it was damaged from>;
#             bad-frame=<k>@<uoff>+<usize> when the damage is confined to one
#             zstd frame (1-based): the other frames still decode and verify
#  8 frames   from this script's own frame walker (perl, below; not zmount's):
#             zstd=N;skippable=M;fcs=all|some|none;check=all|some|none;
#             window=<largest Window_Size>;dict=<ids or 0>;seektable=yes|no
#  9 show     what zmount must do: decoded | raw | eio
#
# zstd-cases.EXPECTED.reference.tsv beside this script is the table it wrote
# with Debian 12's zstd 1.5.4 (two runs gave byte-identical cases); diff a
# fresh run against it to catch tool drift.  check_zstddec runs this script
# and holds zmount's codec to every row.
set -euo pipefail
export LC_ALL=C

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
OUT=$1
for t in zstd pzstd perl sha256sum od split; do
    command -v $t >/dev/null || { echo "missing tool: $t (apt-get install zstd)" >&2; exit 2; }
done
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/zstdcases.XXXXXX"); trap 'rm -rf "$W"' EXIT; cd "$W"

text() { # text BYTES SEED  (same generator as make-gzip-cases.sh)
    awk -v n="$1" -v s="$2" 'BEGIN {
        split("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa", w, " ");
        t = 0; i = 0;
        while (t < n) { l = sprintf("%s:%010d %s %s %s %d\n", s, t, w[i%16+1], w[(i*7+s)%16+1], w[(i*13)%16+1], (i*7919)%100003);
                        if (t + length(l) > n) l = substr(l, 1, n - t);
                        printf "%s", l; t += length(l); i++ } }'
}
rnd() { perl -e 'my ($n,$x)=@ARGV; my $o=""; for (1..$n) { $x=($x*1103515245+12345) & 0x7fffffff; $o.=chr(($x>>16)&255) } print $o' "$1" "$2"; }
zeros() { head -c "$1" /dev/zero; }
flip() { local b; b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
         printf "$(printf '\\%03o' $(( b ^ $3 )))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
sz() { stat -c %s "$1"; }
Z() { zstd -q -f --no-progress "$@"; }

# walk FILE -> one line per frame:
#   zstd COFF CSIZE HSIZE FCS|- CHECK WINDOW DICT BLOCK1_BODY_OFF
#   skip COFF CSIZE MAGIC
#   cut COFF                 (a zstd frame that runs past the end; the walk stops)
# RFC 8878 section 3.1; an independent reading of the format for the tags.
walk() {
    perl -e '
        open(my $f, "<:raw", $ARGV[0]) or die; local $/; my $d = <$f>; my $n = length $d; my $p = 0;
        while ($p + 4 <= $n) {
            my $m = unpack("V", substr($d, $p, 4));
            if (($m & 0xFFFFFFF0) == 0x184D2A50) {
                my $s = unpack("V", substr($d, $p + 4, 4)); printf "skip %d %d %08x\n", $p, $s + 8, $m; $p += $s + 8; next;
            }
            last if $m != 0xFD2FB528;
            my $fhd = ord(substr($d, $p + 4, 1)); my $ss = ($fhd >> 5) & 1; my $ck = ($fhd >> 2) & 1;
            my @did = (0, 1, 2, 4); my $dl = $did[$fhd & 3];
            my $fl = ($fhd >> 6) == 0 ? ($ss ? 1 : 0) : (1, 2, 4, 8)[$fhd >> 6];
            my $q = $p + 5; my $win = 0;
            if (!$ss) { my $b = ord(substr($d, $q++, 1)); my $base = 2 ** (10 + ($b >> 3)); $win = $base + ($base / 8) * ($b & 7); }
            my $dict = 0; for (my $i = $dl - 1; $i >= 0; $i--) { $dict = $dict * 256 + ord(substr($d, $q + $i, 1)) } $q += $dl;
            my $fcs = "-";
            if ($fl) { $fcs = 0; for (my $i = $fl - 1; $i >= 0; $i--) { $fcs = $fcs * 256 + ord(substr($d, $q + $i, 1)) } $fcs += 256 if $fl == 2; }
            $q += $fl; $win = $fcs if $ss; my $h = $q - $p; my $b1 = $q + 3;
            my $cut = 0;
            while (1) {
                if ($q + 3 > $n) { $cut = 1; last }
                my $bh = ord(substr($d, $q, 1)) | ord(substr($d, $q + 1, 1)) << 8 | ord(substr($d, $q + 2, 1)) << 16;
                my $t = ($bh >> 1) & 3; $q += 3 + ($t == 1 ? 1 : $bh >> 3); last if $bh & 1;
            }
            $q += 4 if $ck;
            if ($cut || $q > $n) { printf "cut %d\n", $p; last }
            printf "zstd %d %d %d %s %d %d %d %d\n", $p, $q - $p, $h, $fcs, $ck, $win, $dict, $b1; $p = $q;
        }' "$1"
}
# frames FILE -> column 8
frames() {
    walk "$1" | awk -v st="$(seektab "$1")" '
        $1 == "zstd" { z++; if ($5 != "-") f++; if ($6) c++; if ($7 > w) w = $7; if ($8) d = d (d == "" ? "" : "+") $8 }
        $1 == "skip" { s++ }
        $1 == "cut" { t = ";truncated-at=" $2 }
        function all(k) { return z == 0 ? "-" : k == z ? "all" : (k ? "some" : "none") }
        END { printf "zstd=%d;skippable=%d;fcs=%s;check=%s;window=%.0f;dict=%s;seektable=%s%s", z, s, all(f), all(c), w, d == "" ? 0 : d, st, t }'
}
seektab() { [ "$(tail -c 4 "$1" | od -An -tx4 | tr -d ' ')" = 8f92eab1 ] && echo yes || echo no; }
# frameinfo FILE K -> "coff csize hsize fcs block1_body_off uoff" of zstd frame K (1-based)
frameinfo() { walk "$1" | awk -v k="$2" '$1 == "zstd" { n++; if (n == k) { print $2, $3, $4, $5, $9, u; exit } u += $5 }'; }
le32() { local v=$1; printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)))"; }

text 4194304 1 > text4m
{ text 1048576 2; rnd 262144 3; zeros 1048576; text 1048576 4; } > mixed3m
text 200000 5 > small
rnd 300000 6 > random
head -c 1000000 text4m > p1; head -c 2500000 text4m | tail -c 1500000 > p2; tail -c +2500001 text4m > p3

CASES=()   # "name|tags|show"
add() { CASES+=("$1|$2|$3"); }

# ------------------------------------------------------------- good cases
Z -1 text4m -o "$OUT/good-zstd-level1.zst";               add good-zstd-level1.zst "level=1,fcs,check" decoded
Z -3 text4m -o "$OUT/good-zstd-level3.zst";               add good-zstd-level3.zst "level=3,fcs,check" decoded
Z -19 text4m -o "$OUT/good-zstd-level19.zst";             add good-zstd-level19.zst "level=19,fcs,check" decoded
cat text4m | Z --long=27 -c > "$OUT/good-zstd-long27.zst"; add good-zstd-long27.zst "long=27,window=128MiB,no-fcs(pipe)" decoded
Z --no-check mixed3m -o "$OUT/good-zstd-nocheck.zst";      add good-zstd-nocheck.zst "no-checksum,unverified" decoded
cat mixed3m | Z -c > "$OUT/good-zstd-pipe.zst";            add good-zstd-pipe.zst "no-fcs(pipe),check" decoded
pzstd -q -f -p2 -1 mixed3m -o "$OUT/good-zstd-pzstd.zst";   add good-zstd-pzstd.zst "pzstd-p2,multi-frame,skippable-before-each" decoded
{ Z -c p1; Z -c p2; Z --no-check -c p3; } > "$OUT/good-zstd-concat.zst"; add good-zstd-concat.zst "concatenated,multi-frame" decoded
: > empty; Z empty -o "$OUT/good-zstd-empty.zst";           add good-zstd-empty.zst "empty-frame,fcs=0" decoded
{ Z -c empty; Z -c small; Z -c empty; } > "$OUT/good-zstd-empty-frames-between.zst"
add good-zstd-empty-frames-between.zst "empty-frames-around-one" decoded
{ le32 $((0x184D2A50)); le32 16; printf 0123456789abcdef; Z -c small; le32 $((0x184D2A5F)); le32 0; Z -c p1; le32 $((0x184D2A53)); le32 5; printf hello; } \
    > "$OUT/good-zstd-skippable.zst"
add good-zstd-skippable.zst "skippable-frames=3(16,0,5-bytes)" decoded
Z -3 random -o "$OUT/good-zstd-raw-blocks.zst";             add good-zstd-raw-blocks.zst "incompressible,raw-blocks" decoded
zeros 3000000 | Z -3 -c > "$OUT/good-zstd-rle.zst";         add good-zstd-rle.zst "zeros,rle-blocks,no-fcs" decoded
Z -T2 --rsyncable mixed3m -o "$OUT/good-zstd-rsyncable.zst"; add good-zstd-rsyncable.zst "rsyncable,T2" decoded
# seekable format: frames from pipes (no FCS) + a seek table with checksums
{ cat p1 | Z -c; cat p2 | Z -c; cat p3 | Z -c; } > frames
n=0; tab=""
while read -r kind coff csize _; do
    [ "$kind" = zstd ] || continue; n=$((n + 1)); tab="$tab $csize $(sz p$n)"
done < <(walk frames)
{
    cat frames; le32 $((0x184D2A5E)); le32 $(( n * 12 + 9 ))
    i=0; set -- $tab
    while [ $# -gt 0 ]; do
        i=$((i + 1)); le32 "$1"; le32 "$2"
        # low 32 bits of XXH64 (the seekable format's entry checksum), from zstd's own trailer
        Z -c p$i | tail -c 4; shift 2
    done
    le32 "$n"; printf '\200'; le32 $((0x8F92EAB1))
} > "$OUT/good-zstd-seekable.zst"
add good-zstd-seekable.zst "seekable-format,seek-table-with-checksums,no-fcs" decoded
# issue 18, item 1: two pipe frames (no FCS) of 110 bytes, a seek table saying the first has 200
text 110 7 > s1; text 110 8 > s2; { Z -c < s1; Z -c < s2; } > lies
set -- $(walk lies | awk '$1 == "zstd" { print $3 }')
{ cat lies; le32 $((0x184D2A5E)); le32 25; le32 "$1"; le32 200; le32 "$2"; le32 110; le32 2; printf '\000'; le32 $((0x8F92EAB1)); } \
    > "$OUT/good-zstd-seektable-lies.zst"
add good-zstd-seektable-lies.zst "seekable-format,decompressed-size-wrong(200-for-110),no-fcs" decoded
# issue 18, item 13: only skippable frames: valid, nothing in it
{ le32 $((0x184D2A50)); le32 4; printf abcd; le32 $((0x184D2A5A)); le32 0; } > "$OUT/good-zstd-only-skippable.zst"
add good-zstd-only-skippable.zst "skippable-frames-only,empty" decoded

# -------------------------------------------------------------- raw cases
mkdir samples; split -b 2000 small samples/s.
Z --train samples/s.* -o dict --maxdict=8192 >/dev/null 2>&1
Z -D dict small -o "$OUT/raw-zstd-dictionary.zst";          add raw-zstd-dictionary.zst "dictionary-needed" raw
cp dict "$OUT/raw-zstd-dictionary.dict"
# Window_Descriptor of a pipe frame raised to 2 GiB (exponent 21): as --long=31 writes
cat small | Z -c > w.zst
[ $(( $(od -An -tu1 -j4 -N1 w.zst) & 0x20 )) = 0 ] || { echo "pipe frame is single-segment" >&2; exit 1; }
cp w.zst "$OUT/raw-zstd-window-2g.zst"
printf '\250' | dd of="$OUT/raw-zstd-window-2g.zst" bs=1 seek=5 conv=notrunc status=none
add raw-zstd-window-2g.zst "window=2GiB(long=31),over-the-limit" raw

# -------------------------------------------------------------- bad cases
G=$OUT/good-zstd-level3.zst; GS=$(sz "$G")
read -r coff csize hsize fcs b1 uoff <<<"$(frameinfo "$G" 1)"
cp "$G" "$OUT/bad-zstd-payload.zst"; flip "$OUT/bad-zstd-payload.zst" $(( b1 + 20 )) 85
add bad-zstd-payload.zst "from=good-zstd-level3.zst,block-content-byte" eio
cp "$G" "$OUT/bad-zstd-checksum.zst"; flip "$OUT/bad-zstd-checksum.zst" $(( GS - 1 )) 1
add bad-zstd-checksum.zst "from=good-zstd-level3.zst,xxh64-wrong(data-decodes-fully)" eio
cp "$G" "$OUT/bad-zstd-reserved-bit.zst"; flip "$OUT/bad-zstd-reserved-bit.zst" 4 8
add bad-zstd-reserved-bit.zst "from=good-zstd-level3.zst,frame-header-descriptor-bit-3" eio
cp "$G" "$OUT/bad-zstd-block-type.zst"; flip "$OUT/bad-zstd-block-type.zst" "$hsize" 2  # type 2 (compressed) -> 3
[ $(( $(od -An -tu1 -j"$hsize" -N1 "$OUT/bad-zstd-block-type.zst") & 6 )) = 6 ] ||
    { echo "first block of $G is not compressed" >&2; exit 1; }
add bad-zstd-block-type.zst "from=good-zstd-level3.zst,reserved-block-type-3" eio
head -c $(( GS / 2 )) "$G" > "$OUT/bad-zstd-trunc-half.zst";    add bad-zstd-trunc-half.zst "from=good-zstd-level3.zst,truncated-in-a-block" eio
head -c $(( GS - 1 )) "$G" > "$OUT/bad-zstd-trunc-last-byte.zst"; add bad-zstd-trunc-last-byte.zst "from=good-zstd-level3.zst,truncated-in-checksum" eio
head -c "$hsize" "$G" > "$OUT/bad-zstd-trunc-header.zst";      add bad-zstd-trunc-header.zst "from=good-zstd-level3.zst,header-only" eio
{ cat "$G"; printf 'garbage!'; } > "$OUT/bad-zstd-trailing-garbage.zst"
add bad-zstd-trailing-garbage.zst "from=good-zstd-level3.zst,trailing-garbage(8-bytes)" eio
{ cat "$G"; zeros 64; } > "$OUT/bad-zstd-trailing-zeros.zst"
add bad-zstd-trailing-zeros.zst "from=good-zstd-level3.zst,trailing-zeros(64-bytes)" eio
C=$OUT/good-zstd-concat.zst
read -r coff csize hsize fcs b1 uoff <<<"$(frameinfo "$C" 2)"
[ "$fcs" != - ] || { echo "frame 2 of $C has no FCS" >&2; exit 1; }
cp "$C" "$OUT/bad-zstd-concat-frame2.zst"; flip "$OUT/bad-zstd-concat-frame2.zst" $(( coff + csize - 1 )) 1
add bad-zstd-concat-frame2.zst "from=good-zstd-concat.zst,bad-frame=2@$uoff+$fcs,xxh64-wrong" eio
[ "$fcs" -gt 65791 ] && [ "$fcs" -lt 4294967296 ] || { echo "frame 2 of $C: FCS is not 4 bytes" >&2; exit 1; }
cp "$C" "$OUT/bad-zstd-fcs-lie.zst"   # FCS, the header's last field, one more
flip "$OUT/bad-zstd-fcs-lie.zst" $(( coff + hsize - 4 )) 1
add bad-zstd-fcs-lie.zst "from=good-zstd-concat.zst,bad-frame=2@$uoff+$fcs,frame-content-size-wrong" eio
# issue 18, item 2: a frame whose 4-byte FCS is forged to 0 over ~1.5 KB of compressed blocks, then a good frame
text 9000 10 > t9; for i in 1 2 3 4 5 6 7 8; do cat t9; done > z72k; Z -3 z72k -o fz.zst
[ "$(od -An -tx1 -j4 -N1 fz.zst | tr -d ' ')" = a4 ] || { echo "fz.zst: not a single-segment frame with a 4-byte FCS" >&2; exit 1; }
printf '\000\000\000\000' | dd of=fz.zst bs=1 seek=5 conv=notrunc status=none
{ cat fz.zst; Z -c small; } > "$OUT/bad-zstd-fcs-zero.zst"
add bad-zstd-fcs-zero.zst "frame-content-size-forged-to-0,compressed-blocks" eio

bad=0
{
    printf '# generated by make-zstd-cases.sh with %s\n' "$(zstd --version | head -1)"
    printf '# file\texpect\tsha256\tusize\trc\tmessage\ttags\tframes\tshow\n'
    for c in "${CASES[@]}"; do
        f=${c%%|*}; rest=${c#*|}; tags=${rest%%|*}; show=${rest#*|}; p=$OUT/$f
        set +e
        msg=$(cd "$OUT" && zstd -q -t -- "$f" 2>&1 >/dev/null | sed 's|^zstd: [^ ]*: ||; s|^[^ ]* : ||' | paste -sd'|' - | sed 's/|/ | /g')
        rc=$(cd "$OUT" && zstd -q -t -- "$f" >/dev/null 2>&1; echo $?)
        set -e
        [ "$rc" = 0 ] && ex=ok || ex=error
        sha=- n=-
        case $f in
        good-*) sha=$(zstd -q -dc < "$p" | sha256sum | cut -c1-64); n=$(zstd -q -dc < "$p" | wc -c) ;;
        raw-zstd-dictionary.zst) sha=$(zstd -q -dc -D "$OUT/raw-zstd-dictionary.dict" < "$p" | sha256sum | cut -c1-64)
            n=$(zstd -q -dc -D "$OUT/raw-zstd-dictionary.dict" < "$p" | wc -c) ;;
        raw-*) sha=$(zstd -q -dc --memory=2048MB < "$p" | sha256sum | cut -c1-64)
            n=$(zstd -q -dc --memory=2048MB < "$p" | wc -c) ;;
        esac
        want=${f%%-*}
        case $want in good) want=ok ;; *) want=error ;; esac
        [ "$want" = "$ex" ] || { echo "MISMATCH: $f is $ex with this zstd, name says $want" >&2; bad=1; }
        if [ "${f%%-*}" = raw ] && [ "$n" = 0 ]; then
            echo "MISMATCH: $f does not decode even with what it needs" >&2; bad=1
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$ex" "$sha" "$n" "$rc" "${msg:--}" "$tags" "$(frames "$p")" "$show"
    done
} > "$OUT/EXPECTED.tsv"
echo "wrote ${#CASES[@]} cases + EXPECTED.tsv to $OUT" >&2
exit $bad

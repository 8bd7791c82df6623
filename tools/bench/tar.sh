#!/bin/bash
# tar.sh: a member of a compressed tar through -o tar, against tar and ratarmount (issue 34).
#
#   sudo tools/bench/tar.sh [--size SIZE] [--repeat N] [--workdir DIR] [--zmount PATH]
#                           [--prefix DIR] [--no-ratarmount] [--reads N] [--rand-budget SECS]
#                           [--pattern RE]
#
# Input (made once per SIZE, default 1G, kept in WORKDIR/in): SIZE of log text
# (tools/bench/gencorpus.c) split into log files of 1 to 8 MiB under logs/, tarred
# (GNU format) and compressed with gzip -6 into x.tar.gz.  LAST is the tar's last
# member.  In each of --repeat rounds (default 3; the page cache dropped before every
# timing) it measures, wall-clock:
#   tar        tar -xzOf x.tar.gz LAST > /dev/null
#   cold       a fresh zmount -o tar (empty index_dir), from its start to
#              cat MNT/x.tar/LAST done: mount, the one pass that builds the member table
#              (and the gzip checkpoints), the member read
#   saved      a fresh mount over the index_dir the cold mount filled (the gzip index and
#              the member table): from its start to the cat done, and the cat alone
#   saved_up   a mount over that index_dir, up for a second with nothing read in it, the
#              page cache then dropped: cat MNT/x.tar/LAST alone (issue 34's 50 ms row)
#   xz rand    x.tar.xz, the same tar as one xz Block (xz -6 -T1), and text.xz, a copy of
#              it shown as one file (no .tar in its name): over an index_dir that a full
#              read of each filled (checkpoints, member table), --reads (40) pairs of
#              random 4 KiB O_DIRECT reads: one in a random member of x.tar/ (a member,
#              then an offset in it), one in text at the same decoded offset, each after a
#              page-cache drop, stopped after --rand-budget (15) s; the p50 pooled over
#              the rounds.  That mount has cache_size=32M, so that few reads hit its own
#              cache of decoded bytes
#   grep       20 .tar.gz bundles of SIZE/20 of log text each: a fresh mount with an
#              empty index_dir, grep -r PATTERN (ERROR) MNT | wc -l, against
#              for f in *.tar.gz; do tar -xzOf $f | grep PATTERN; done | wc -l (the
#              counts must agree)
#   ratar      ratarmount (PREFIX/venv/bin/ratarmount, built by peer.sh --setup; left out
#              when it is not there): the same two, cold (its index built inside its
#              mount) and over its saved .index.sqlite
# and, from the mount's own counters (user.zmount.stats), the bytes decoded in each
# zmount case, the member table's bytes in memory, and the saved table's (.zmt) size
# against the archive's.  Medians; ratios are tar's time / the tool's (above 1: faster).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=/opt/peers
WORK=/tmp/zmount-tarbench
SIZE=1G
REPEAT=3
ZMOUNT="$ROOT/build/fs/zmount"
RATAR=1
READS=40
BUDGET=15
PATTERN=ERROR
XZCACHE=32M # far below the tar, so that few random reads hit the mount's own cache
while [ $# -gt 0 ]; do
	case "$1" in
	--size) SIZE=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--workdir) WORK=$2; shift 2 ;;
	--zmount) ZMOUNT=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-ratarmount) RATAR=0; shift ;;
	--reads) READS=$2; shift 2 ;;
	--rand-budget) BUDGET=$2; shift 2 ;;
	--pattern) PATTERN=$2; shift 2 ;;
	*) sed -n '4,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "tar.sh: needs root (drop_caches, mounts)" >&2; exit 1; }
[ -x "$ZMOUNT" ] || { echo "tar.sh: no $ZMOUNT; build first" >&2; exit 1; }
RATARMOUNT="$PREFIX/venv/bin/ratarmount"
if [ $RATAR = 1 ] && [ ! -x "$RATARMOUNT" ]; then
	echo "tar.sh: no $RATARMOUNT (tools/bench/peer.sh --setup builds it): ratarmount left out" >&2
	RATAR=0
fi

# ---- the input ----------------------------------------------------------------
IN="$WORK/in"
mkdir -p "$IN" "$WORK/mnt"
bytes=$(numfmt --from=iec "$SIZE")
if [ ! -x "$WORK/gencorpus" ] || [ "$ROOT/tools/bench/gencorpus.c" -nt "$WORK/gencorpus" ]; then
	cc -O2 -o "$WORK/gencorpus" "$ROOT/tools/bench/gencorpus.c"
fi
if [ "$(cat "$IN/size" 2>/dev/null)" != "$bytes" ] || [ ! -s "$IN/x.tar.gz" ]; then
	echo "tar.sh: making $SIZE of logs into x.tar.gz" >&2
	rm -rf "$IN" && mkdir -p "$IN/tree/logs"
	# files of 1 to 8 MiB, named in tar order
	"$WORK/gencorpus" log "$bytes" 1 | python3 -c '
import random, sys
rnd, i, out = random.Random(34), 0, sys.argv[1]
while True:
    data = sys.stdin.buffer.read(rnd.randint(1, 8) << 20)
    if not data:
        break
    with open(f"{out}/app-{i:05d}.log", "wb") as f:
        f.write(data)
    i += 1
' "$IN/tree/logs"
	tar -C "$IN/tree" --format=gnu --sort=name -cf - logs | gzip -6 -n >"$IN/x.tar.gz"
	rm -rf "$IN/tree"
	echo "$bytes" >"$IN/size"
fi
LAST=$(tar -tzf "$IN/x.tar.gz" | tail -n 1)
ARC_BYTES=$(stat -c %s "$IN/x.tar.gz")
# the same tar as one xz Block, and a copy of it that shows as one file
if [ ! -s "$IN/xz/text.xz" ] || [ "$IN/x.tar.gz" -nt "$IN/xz/text.xz" ]; then
	echo "tar.sh: xz -6 -T1 of the tar" >&2
	rm -rf "$IN/xz" && mkdir -p "$IN/xz"
	gzip -dc "$IN/x.tar.gz" | xz -6 -T1 >"$IN/xz/x.tar.xz"
	cp "$IN/xz/x.tar.xz" "$IN/xz/text.xz.tmp" && mv "$IN/xz/text.xz.tmp" "$IN/xz/text.xz"
fi
# 20 bundles of SIZE/20 of log text, each of files of 1 to 4 MiB that end at a line's end, so
# that tar -xzO | grep (which joins a member's last line to the next one's first) counts the
# lines grep -r does (v2: until 2026-12-05 files were cut inside lines)
if [ "$(cat "$IN/bundles/size" 2>/dev/null)" != "$bytes v2" ]; then
	echo "tar.sh: making 20 .tar.gz bundles" >&2
	rm -rf "$IN/bundles" && mkdir -p "$IN/bundles"
	for b in $(seq -w 1 20); do
		mkdir -p "$IN/tree/b$b"
		"$WORK/gencorpus" log $((bytes / 20)) $((100 + 10#$b)) | python3 -c '
import random, sys
rnd, i, out = random.Random(int(sys.argv[2])), 0, sys.argv[1]
while True:
    data = sys.stdin.buffer.read(rnd.randint(1, 4) << 20)
    if not data:
        break
    if not data.endswith(b"\n"):
        data += sys.stdin.buffer.readline()
    with open(f"{out}/app-{i:03d}.log", "wb") as f:
        f.write(data)
    i += 1
' "$IN/tree/b$b" "$b"
		tar -C "$IN/tree" --format=gnu --sort=name -cf - "b$b" | gzip -6 -n >"$IN/bundles/bundle-$b.tar.gz"
		rm -rf "$IN/tree"
	done
	echo "$bytes v2" >"$IN/bundles/size"
fi

# ---- mounts and timings ---------------------------------------------------------
MNT="$WORK/mnt"
LOG="$WORK/tar.log"
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
PID=""
# start TOOL IDX [SRC]: a fresh mount of x.tar.gz (or of directory SRC) by TOOL, its index in IDX
start() {
	if [ "$1" = zmount ]; then
		local src=${3:-$WORK/src}
		# linked once: a new link moves the file's ctime, so a saved index would have
		# to prove it by a hash of the whole file (a renamed file's cost, not this row's)
		if [ -z "${3:-}" ] && ! [ "$WORK/src/x.tar.gz" -ef "$IN/x.tar.gz" ]; then
			rm -rf "$WORK/src" && mkdir -p "$WORK/src"
			ln "$IN/x.tar.gz" "$WORK/src/x.tar.gz"
		fi
		"$ZMOUNT" "$src" "$MNT" -f -o "tar,cache_size=${ZCACHE:-256M},index_dir=$2,log_file=$LOG" 2>>"$LOG" &
	else
		"$RATARMOUNT" -f --index-file "$2" "$IN/x.tar.gz" "$MNT" >>"$LOG" 2>&1 &
	fi
	PID=$!
	for _ in $(seq 60000); do # 5 ms steps: a 50 ms step added up to 50 ms to each first touch
		mountpoint -q "$MNT" && return 0
		kill -0 $PID 2>/dev/null || { echo "tar.sh: $1 died (see $LOG)" >&2; exit 1; }
		sleep 0.005
	done
	echo "tar.sh: $1 did not mount" >&2
	exit 1
}
stop() {
	umount "$MNT" || umount -l "$MNT"
	wait $PID || true
}
trap 'umount -l "$MNT" 2>/dev/null || true' EXIT
member() { # TOOL: the path of LAST in the mount
	if [ "$1" = zmount ]; then echo "$MNT/x.tar/$LAST"; else echo "$MNT/$LAST"; fi
}
stat_of() { # NAME: one counter of the mount's user.zmount.stats
	getfattr --only-values -n user.zmount.stats "$MNT" 2>/dev/null | sed -n "s/^$1=//p"
}
declare -A T
add() { T[$1]="${T[$1]:-} $2"; }
# one_round: every measure once
one_round() {
	local t0 t1 t2 zi ri
	drop
	t0=$(now)
	tar -xzOf "$IN/x.tar.gz" "$LAST" >/dev/null
	add tar "$(echo "$(now) - $t0" | bc -l)"
	zi="$WORK/idx-z"
	rm -rf "$zi" && mkdir -p "$zi"
	drop
	t0=$(now)
	start zmount "$zi"
	cat "$(member zmount)" >/dev/null
	t1=$(now)
	add cold "$(echo "$t1 - $t0" | bc -l)"
	add cold_dec "$(stat_of decoded_bytes)"
	add tbl_mem "$(stat_of tar_table_bytes)"
	stop
	add zmt "$(find "$zi" -name '*.zmt' -printf '%s\n' | head -n 1)"
	drop
	t0=$(now)
	start zmount "$zi"
	t1=$(now)
	cat "$(member zmount)" >/dev/null
	t2=$(now)
	add saved "$(echo "$t2 - $t0" | bc -l)"
	add saved_cat "$(echo "$t2 - $t1" | bc -l)"
	add saved_mount "$(echo "$t1 - $t0" | bc -l)"
	add saved_dec "$(stat_of decoded_bytes)"
	stop
	start zmount "$zi"
	sleep 1
	drop
	t1=$(now)
	cat "$(member zmount)" >/dev/null
	add saved_up "$(echo "$(now) - $t1" | bc -l)"
	add up_dec "$(stat_of decoded_bytes)"
	stop
	xz_rand "$r"
	grep_bundles
	[ $RATAR = 1 ] || return 0
	ri="$WORK/idx-r.index.sqlite"
	rm -f "$ri"
	drop
	t0=$(now)
	start ratar "$ri"
	cat "$(member ratar)" >/dev/null
	add rcold "$(echo "$(now) - $t0" | bc -l)"
	stop
	drop
	t0=$(now)
	start ratar "$ri"
	t1=$(now)
	cat "$(member ratar)" >/dev/null
	t2=$(now)
	add rsaved "$(echo "$t2 - $t0" | bc -l)"
	add rsaved_cat "$(echo "$t2 - $t1" | bc -l)"
	add ridx "$(stat -c %s "$ri")"
	stop
}
# pair_reads SEED: --reads pairs of random 4 KiB O_DIRECT reads, a page-cache drop before
# each: a random member of MNT/x.tar/ at a random offset k, and MNT/text at the same decoded
# offset (the member's data offset + k, from WORK/members.tsv), in turn first; stops after
# --rand-budget s; prints "tar-ms one-ms" per pair.  The same offsets, since how far an
# offset is from its checkpoint sets a read's cost, and members are picked by count, not size.
pair_reads() {
	python3 - "$MNT" "$WORK/members.tsv" "$READS" "$BUDGET" "$1" <<'PY'
import mmap, os, random, sys, time
mnt, tsv, n, budget, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
members = [ln.rstrip("\n").split("\t") for ln in open(tsv)]
members = [(int(d), int(s), name) for d, s, name in members if int(s) >= 4096]
rng = random.Random(seed)
buf = mmap.mmap(-1, 4096)
def read(path, off):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    with open("/proc/sys/vm/drop_caches", "w") as dc:
        dc.write("3")
    t0 = time.monotonic()
    if os.preadv(fd, [buf], off) != 4096:
        sys.exit("short read at %d in %s" % (off, path))
    t = (time.monotonic() - t0) * 1000
    os.close(fd)
    return t, bytes(buf)
start = time.monotonic()
for i in range(n):
    d, size, name = rng.choice(members)
    k = rng.randrange(0, size // 4096) * 4096
    reads = [(os.path.join(mnt, "x.tar", name), k), (os.path.join(mnt, "text"), d + k)]
    got = [read(*r) for r in (reads if i % 2 == 0 else reads[::-1])]
    if i % 2:
        got.reverse()
    if got[0][1] != got[1][1]:
        sys.exit("%s at %d differs from text at %d" % (name, k, d + k))
    print("%.3f %.3f" % (got[0][0], got[1][0]))
    if i >= 4 and time.monotonic() - start > budget:
        break
PY
}
# xz_prep: an index_dir for IN/xz filled by one full read of each file (checkpoints, table),
# and WORK/members.tsv: each regular member's data offset, size and name, from that read
xz_prep() {
	rm -rf "$WORK/idx-x" && mkdir -p "$WORK/idx-x"
	start zmount "$WORK/idx-x" "$IN/xz"
	python3 - "$MNT/text" >"$WORK/members.tsv" <<'PY'
import sys, tarfile
with open(sys.argv[1], "rb") as f, tarfile.open(fileobj=f, mode="r|") as tf:
    for m in tf:
        if m.isreg():
            print("%d\t%d\t%s" % (m.offset_data, m.size, m.name))
PY
	find "$MNT/x.tar" -type f -exec cat {} + >/dev/null
	stop
}
# xz_rand ROUND: paired random reads in x.tar.xz's members and in text.xz, over the saved index
xz_rand() {
	local pairs
	ZCACHE=$XZCACHE start zmount "$WORK/idx-x" "$IN/xz"
	ls -R "$MNT/x.tar" >/dev/null # the saved table, loaded before the timings
	pairs=$(pair_reads "$1")
	add xz_tar "$(cut -d' ' -f1 <<<"$pairs")"
	add xz_one "$(cut -d' ' -f2 <<<"$pairs")"
	add xz_loaded "$(stat_of indexes_loaded)"
	add xz_built "$(stat_of indexes_built)"
	stop
}
# grep_bundles: grep over the 20 bundles, the pipeline then a first mount
grep_bundles() {
	local t0 n1 n2
	drop
	t0=$(now)
	n1=$(for f in "$IN"/bundles/*.tar.gz; do tar -xzOf "$f" | grep -- "$PATTERN"; done | wc -l)
	add grep_pipe "$(echo "$(now) - $t0" | bc -l)"
	rm -rf "$WORK/idx-g" && mkdir -p "$WORK/idx-g"
	drop
	t0=$(now)
	start zmount "$WORK/idx-g" "$IN/bundles"
	n2=$(grep -r -- "$PATTERN" "$MNT" | wc -l)
	add grep_z "$(echo "$(now) - $t0" | bc -l)"
	add grep_dec "$(stat_of decoded_bytes)"
	stop
	[ "$n1" = "$n2" ] || echo "tar.sh: grep counts differ: pipeline $n1, zmount $n2" >&2
	add grep_lines "$n2"
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "tar.sh: filling the xz index_dir" >&2
xz_prep
for r in $(seq "$REPEAT"); do
	echo "tar.sh: round $r of $REPEAT" >&2
	one_round
done

# ---- report -----------------------------------------------------------------------
median() { sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
med() { tr ' ' '\n' <<<"${T[$1]:-}" | median; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && printf '%.2fx' "$(echo "$1 / $2" | bc -l)"; return 0; }
secs() { [ -n "$1" ] && printf '%.3f' "$1"; return 0; }
mib() { [ -n "$1" ] && printf '%.1f MiB' "$(echo "$1 / 1048576" | bc -l)"; return 0; }
members=$(tar -tzf "$IN/x.tar.gz" | wc -l)
printf '\ntar.sh: zmount %s, %s of logs in %s members (x.tar.gz %s bytes), repeat %s, %s\n' \
	"$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')" "$SIZE" "$members" \
	"$ARC_BYTES" "$REPEAT" "$(date -u +%Y-%m-%dT%H:%MZ)"
printf 'nproc %s, load at start %s, at end %s; LAST = %s\n' "$(nproc)" "$load0" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" "$LAST"
tarm=$(med tar)
printf '\n| case | seconds | tar -xzOf / it | bytes decoded |\n|---|--:|--:|--:|\n'
printf '| tar -xzOf x.tar.gz LAST | %s | 1.00x | |\n' "$(secs "$tarm")"
printf '| zmount cold: mount + cat LAST | %s | %s | %s |\n' "$(secs "$(med cold)")" \
	"$(ratio "$tarm" "$(med cold)")" "$(mib "$(med cold_dec)")"
printf '| zmount saved index: mount + cat LAST | %s | %s | %s |\n' "$(secs "$(med saved)")" \
	"$(ratio "$tarm" "$(med saved)")" "$(mib "$(med saved_dec)")"
printf '| zmount saved index: cat LAST alone | %s | %s | |\n' "$(secs "$(med saved_cat)")" \
	"$(ratio "$tarm" "$(med saved_cat)")"
printf '| zmount saved index: mount alone | %s | | |\n' "$(secs "$(med saved_mount)")"
printf '| zmount saved index, mount up 1 s: cat LAST alone | %s | %s | %s |\n' \
	"$(secs "$(med saved_up)")" "$(ratio "$tarm" "$(med saved_up)")" "$(mib "$(med up_dec)")"
if [ $RATAR = 1 ]; then
	printf '| ratarmount cold: mount + cat LAST | %s | %s | |\n' "$(secs "$(med rcold)")" \
		"$(ratio "$tarm" "$(med rcold)")"
	printf '| ratarmount saved index: mount + cat LAST | %s | %s | |\n' \
		"$(secs "$(med rsaved)")" "$(ratio "$tarm" "$(med rsaved)")"
	printf '| ratarmount saved index: cat LAST alone | %s | %s | |\n' \
		"$(secs "$(med rsaved_cat)")" "$(ratio "$tarm" "$(med rsaved_cat)")"
fi
pms() { [ -n "$1" ] && printf '%.1f ms' "$1"; return 0; }
count() { tr ' ' '\n' <<<"${T[$1]:-}" | sed '/^$/d' | wc -l; }
printf '\n| one-Block xz (xz -6 -T1), saved index | random 4 KiB O_DIRECT reads, paired (the same decoded offsets) | p50 | mean |\n'
printf '|---|--:|--:|--:|\n'
mean() { tr ' ' '\n' <<<"${T[$1]:-}" | sed '/^$/d' | awk '{s+=$1} END {if (NR) print s/NR}'; }
printf '| x.tar.xz: random members of x.tar/ | %s | %s | %s |\n' "$(count xz_tar)" \
	"$(pms "$(med xz_tar)")" "$(pms "$(mean xz_tar)")"
printf '| text.xz (the same bytes) as one file | %s | %s | %s |\n' "$(count xz_one)" \
	"$(pms "$(med xz_one)")" "$(pms "$(mean xz_one)")"
printf '(that mount: cache_size=%s; indexes_loaded %s, indexes_built %s)\n' "$XZCACHE" \
	"$(med xz_loaded)" "$(med xz_built)"
grepm=$(med grep_pipe)
printf '\n| grep %s over 20 .tar.gz bundles (%s lines) | seconds | pipeline / it | bytes decoded |\n' \
	"$PATTERN" "$(med grep_lines)"
printf '|---|--:|--:|--:|\n'
printf '| for f in *.tar.gz; do tar -xzOf $f \\| grep; done | %s | 1.00x | |\n' "$(secs "$grepm")"
printf '| zmount first mount (empty index_dir): mount + grep -r | %s | %s | %s |\n' \
	"$(secs "$(med grep_z)")" "$(ratio "$grepm" "$(med grep_z)")" "$(mib "$(med grep_dec)")"
zmt=$(med zmt)
printf '\n| member table | bytes | / archive |\n|---|--:|--:|\n'
printf '| zmount in memory (tar_table_bytes) | %s | |\n' "$(med tbl_mem)"
[ -n "$zmt" ] && printf '| zmount saved (.zmt) | %s | %.4f%% |\n' "$zmt" \
	"$(echo "100 * $zmt / $ARC_BYTES" | bc -l)"
[ $RATAR = 1 ] && printf '| ratarmount .index.sqlite | %s | %.4f%% |\n' "$(med ridx)" \
	"$(echo "100 * $(med ridx) / $ARC_BYTES" | bc -l)"
printf '(medians of %s rounds; page cache dropped before each timing)\n' "$REPEAT"

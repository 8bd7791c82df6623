#!/bin/bash
# tar.sh: a member of a compressed tar through -o tar, against tar and ratarmount (issue 34).
#
#   sudo tools/bench/tar.sh [--size SIZE] [--repeat N] [--workdir DIR] [--zmount PATH]
#                           [--prefix DIR] [--no-ratarmount]
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
while [ $# -gt 0 ]; do
	case "$1" in
	--size) SIZE=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--workdir) WORK=$2; shift 2 ;;
	--zmount) ZMOUNT=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-ratarmount) RATAR=0; shift ;;
	*) sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
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

# ---- mounts and timings ---------------------------------------------------------
MNT="$WORK/mnt"
LOG="$WORK/tar.log"
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
PID=""
# start TOOL IDX: a fresh mount of x.tar.gz by TOOL, its index in IDX
start() {
	if [ "$1" = zmount ]; then
		rm -rf "$WORK/src" && mkdir -p "$WORK/src"
		ln "$IN/x.tar.gz" "$WORK/src/x.tar.gz"
		"$ZMOUNT" "$WORK/src" "$MNT" -f -o "tar,cache_size=256M,index_dir=$2,log_file=$LOG" 2>>"$LOG" &
	else
		"$RATARMOUNT" -f --index-file "$2" "$IN/x.tar.gz" "$MNT" >>"$LOG" 2>&1 &
	fi
	PID=$!
	for _ in $(seq 6000); do
		mountpoint -q "$MNT" && return 0
		kill -0 $PID 2>/dev/null || { echo "tar.sh: $1 died (see $LOG)" >&2; exit 1; }
		sleep 0.05
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
load0=$(cut -d' ' -f1-3 /proc/loadavg)
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
if [ $RATAR = 1 ]; then
	printf '| ratarmount cold: mount + cat LAST | %s | %s | |\n' "$(secs "$(med rcold)")" \
		"$(ratio "$tarm" "$(med rcold)")"
	printf '| ratarmount saved index: mount + cat LAST | %s | %s | |\n' \
		"$(secs "$(med rsaved)")" "$(ratio "$tarm" "$(med rsaved)")"
	printf '| ratarmount saved index: cat LAST alone | %s | %s | |\n' \
		"$(secs "$(med rsaved_cat)")" "$(ratio "$tarm" "$(med rsaved_cat)")"
fi
zmt=$(med zmt)
printf '\n| member table | bytes | / archive |\n|---|--:|--:|\n'
printf '| zmount in memory (tar_table_bytes) | %s | |\n' "$(med tbl_mem)"
[ -n "$zmt" ] && printf '| zmount saved (.zmt) | %s | %.4f%% |\n' "$zmt" \
	"$(echo "100 * $zmt / $ARC_BYTES" | bc -l)"
[ $RATAR = 1 ] && printf '| ratarmount .index.sqlite | %s | %.4f%% |\n' "$(med ridx)" \
	"$(echo "100 * $(med ridx) / $ARC_BYTES" | bc -l)"
printf '(medians of %s rounds; page cache dropped before each timing)\n' "$REPEAT"

#!/bin/bash
# tail.sh: a fresh `tail -c 4096` of one-unit files through two zmount builds
# beside the pipeline (issue 32 item 3: one decode per byte on a first touch).
#
#   sudo tools/bench/tail.sh [--base ZMOUNT] [--size SIZE] [--repeat N] [--busy]
#                            [--workdir DIR] [--zmount ZMOUNT]
#
# Inputs are peer.sh's (made by it in WORKDIR/in if missing): SIZE of log
# text as one zstd -3 frame (z1) and one xz -6 Block (x1b).  Each timing is
# a fresh mount of a directory holding only that file, index_dir=none with
# the background indexer on, page cache dropped, and `tail -c 4096` at once:
# wall time of the tail; then, once the daemon is idle (its CPU time still
# for 1 s), the daemon's CPU time and decoded_bytes (user.zmount.stats:
# the tail's decode and the checkpoint pass together) as a multiple of the
# file.  The builds and the pipeline (`zstd -dc | tail`, `xz -dc | tail`)
# alternate inside each round.  --busy keeps one core busy (`yes`) through
# every timing, the pipeline's too.  Prints medians; pipeline/zmount above
# 1 means zmount is faster.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=/tmp/zmount-peer
SIZE=256M
REPEAT=3
BUSY=0
NEW="$ROOT/build/fs/zmount"
BASE=""
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--busy) BUSY=1; shift ;;
	--workdir) WORK=$2; shift 2 ;;
	--zmount) NEW=$2; shift 2 ;;
	*) echo "tail.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "tail.sh: run as root (drops the page cache)" >&2; exit 1; }
for z in "$NEW" ${BASE:+"$BASE"}; do
	[ -x "$z" ] || { echo "tail.sh: no $z" >&2; exit 1; }
done
PEER_PREPARE_ONLY=1 "$ROOT/tools/bench/peer.sh" --workdir "$WORK" --size "$SIZE" >/dev/null
SRC="$WORK/tail-src"
MNT="$WORK/mnt"
OUT="$WORK/tail.tsv"
: > "$OUT"
busy_pid=""
trap '[ -n "$busy_pid" ] && kill $busy_pid 2>/dev/null; fusermount3 -u "$MNT" 2>/dev/null || true' EXIT
[ "$BUSY" = 1 ] && { yes > /dev/null & busy_pid=$!; }

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }

pipeline() { # ROW FILE DECODER
	drop
	local t0; t0=$(now)
	"$3" -dc "$WORK/in/$2" | tail -c 4096 > /dev/null
	printf '%s\tpipeline\t%s\t\t\n' "$1" "$(echo "$(now) - $t0" | bc)" >> "$OUT"
}

zm() { # ROW FILE LABEL ZMOUNT
	local name=${2%.*} pid t0 t1 c prev=-1 dec cpu
	rm -rf "$SRC" && mkdir -p "$SRC" && ln "$WORK/in/$2" "$SRC/$2"
	drop
	"$4" "$SRC" "$MNT" -f -o cache_size=256M,index_dir=none 2>/dev/null &
	pid=$!
	for _ in $(seq 200); do mountpoint -q "$MNT" && break; sleep 0.05; done
	t0=$(now)
	tail -c 4096 "$MNT/$name" > /dev/null
	t1=$(now)
	for _ in $(seq 300); do
		c=$(awk '{print $14 + $15}' "/proc/$pid/stat")
		[ "$c" = "$prev" ] && break
		prev=$c
		sleep 1
	done
	dec=$(getfattr --absolute-names --only-values -n user.zmount.stats "$MNT" | sed -n 's/^decoded_bytes=//p')
	cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat")
	fusermount3 -u "$MNT"
	wait "$pid" || true
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$(echo "$t1 - $t0" | bc)" "$cpu" \
		"$(echo "scale=2; $dec / $(stat -c %s "$WORK/in/text")" | bc)" >> "$OUT"
}

for r in $(seq "$REPEAT"); do
	for row in "z1 z1.zst zstd" "x1b x1b.xz xz"; do
		set -- $row
		echo "tail.sh: $1 round $r" >&2
		pipeline "$1" "$2" "$3"
		zm "$1" "$2" new "$NEW"
		[ -n "$BASE" ] && zm "$1" "$2" base "$BASE"
	done
done

echo "tail.sh: new $NEW${BASE:+, base $BASE}, $SIZE, repeat $REPEAT, busy $BUSY, $(date -u +%FT%TZ)"
echo
echo "| row | tool | tail s | pipeline/tool | daemon CPU s | decoded / file |"
echo "|---|---|--:|--:|--:|--:|"
python3 - "$OUT" <<'EOF'
import statistics, sys
rows = {}
for ln in open(sys.argv[1]):
    row, tool, wall, cpu, dec = ln.rstrip('\n').split('\t')
    rows.setdefault((row, tool), []).append((float(wall), cpu, dec))
med = lambda xs: statistics.median(xs)
for row in ('z1', 'x1b'):
    pipe = med([w for w, _, _ in rows[(row, 'pipeline')]])
    for tool in ('pipeline', 'new', 'base'):
        if (row, tool) not in rows:
            continue
        v = rows[(row, tool)]
        wall = med([w for w, _, _ in v])
        cpu = f'{med([float(c) for _, c, _ in v]):.2f}' if v[0][1] else ''
        dec = f'{med([float(d) for _, _, d in v]):.2f}x' if v[0][2] else ''
        print(f'| {row} | {tool} | {wall:.2f} | {pipe / wall:.2f}x | {cpu} | {dec} |')
EOF

#!/bin/bash
# peer.sh: zmount beside ratarmount and the plain pipeline (issue #32).
#
#   sudo tools/bench/peer.sh --setup [--prefix DIR] [--git-mirror DIR]
#   sudo tools/bench/peer.sh [--workdir DIR] [--size SIZE] [--repeat N]
#                            [--reads N] [--rand-budget SECS] [--only ROW]
#                            [--zmount PATH] [--prefix DIR] [--no-ratarmount]
#
# --setup builds ratarmount 1.3.0 from its source tags into a private
# prefix (default /opt/peers: a venv over Debian's python3 with
# --system-site-packages), without any pip download: Debian packages come
# from apt, the Python sources from git tags (--git-mirror DIR holds bare
# repositories as DIR/owner+name/repo; without it they are cloned from
# GitHub).  rapidgzip is not built (its tag needs five git submodules);
# ratarmount then uses Debian's indexed_gzip for gzip.  Nothing in CI runs
# this script.
#
# The bench generates log text (tools/bench/gencorpus.c), stores it five
# ways and, for every row, in each of --repeat rounds (the tools' order
# rotating per round, page cache dropped before every timing), measures:
#   first  fresh mount, nothing saved: mount start to the whole file read
#          with 1 MiB reads (ratarmount builds its index inside its mount)
#   later  a fresh mount over the index a previous full read saved; the
#          page cache dropped after the mount, then the file read whole
#   tail   fresh mount, nothing saved: mount start to `tail -c 4096` done
#   rand   fresh mount over the saved index, page cache dropped: --reads
#          random 4 KiB O_DIRECT reads (the same offsets for every tool),
#          stopped after --rand-budget seconds; p50 pooled over the rounds
# The pipeline (`zstd -dc`, `xz -dc`, `gzip -dc` to /dev/null, and piped
# to `tail -c 4096`) runs in the same rounds.  Ratios are pipeline time /
# tool time: above 1 means faster than the pipeline.
#
# Rows (SIZE of text, default 256M):
#   z1    zstd -3, one frame
#   z4m   zstd -3, 4 MiB frames (split --filter, frames concatenated)
#   x1b   xz -6 -T1, one Block
#   x4m   xz -6 -T1 --block-size=4MiB
#   gz    gzip -6
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=/opt/peers
MIRROR=""
WORK=/tmp/zmount-peer
SIZE=256M
REPEAT=3
READS=40
BUDGET=15
ONLY=""
ZMOUNT="$ROOT/build/fs/zmount"
ZOPTS="cache_size=256M"
RATAR=1
SETUP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--setup) SETUP=1; shift ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--git-mirror) MIRROR=$2; shift 2 ;;
	--workdir) WORK=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--reads) READS=$2; shift 2 ;;
	--rand-budget) BUDGET=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--zmount) ZMOUNT=$2; shift 2 ;;
	--no-ratarmount) RATAR=0; shift ;;
	*) sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "peer.sh: needs root (apt, drop_caches, mounts)" >&2; exit 1; }

# ---- setup: ratarmount from source tags, no pip download ----------------
# name  owner/repo  tag-or-commit  subdir-to-install ("-" = none)  [paths]
# (paths: only these are taken; ratarmount's tree also holds large
# benchmark data that the install does not need)
PEER_SOURCES="
mfusepy mxmlnkn/mfusepy v3.1.0 .
python-xz Rogdham/python-xz v0.4.0 .
libzstd-seek martinellimarco/libzstd-seek ac9fb6479d9d3905fcb1af5e045cb3b6fb3100b6 -
indexed_zstd martinellimarco/indexed_zstd v1.7.1 -
ratarmount mxmlnkn/ratarmount v1.3.0 - core ratarmount pyproject.toml README.md LICENSE
"
# src_tree NAME OWNER/REPO REV [PATH...]: PREFIX/src/NAME holds REV's files
src_tree() {
	local dst="$PREFIX/src/$1" git
	[ -e "$dst/.peer-rev" ] && [ "$(cat "$dst/.peer-rev")" = "$3" ] && return 0
	rm -rf "$dst" && mkdir -p "$dst"
	if [ -n "$MIRROR" ]; then
		git="$MIRROR/${2/\//+}/repo"
	else
		git="$PREFIX/src/$1.git"
		[ -d "$git" ] || git clone -q --bare "https://github.com/$2" "$git"
	fi
	git --git-dir="$git" archive "$3" "${@:4}" | tar -x -C "$dst"
	echo "$3" > "$dst/.peer-rev"
}
setup() {
	apt-get install -y --no-install-recommends python3-venv python3-dev \
		python3-setuptools python3-setuptools-scm python3-wheel python3-pip cython3 g++ \
		libzstd-dev python3-indexed-gzip libfuse2 fuse3 zstd xz-utils >/dev/null
	mkdir -p "$PREFIX/src"
	[ -x "$PREFIX/venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$PREFIX/venv"
	local pip=("$PREFIX/venv/bin/pip" install -q --no-index --no-deps --no-build-isolation)
	while read -r name repo rev sub paths; do
		[ -n "$name" ] || continue
		# shellcheck disable=SC2086 # paths is a word list
		src_tree "$name" "$repo" "$rev" $paths
		# a git archive has no tags for setuptools_scm (python-xz) to read
		[ "$sub" = - ] || SETUPTOOLS_SCM_PRETEND_VERSION=${rev#v} "${pip[@]}" "$PREFIX/src/$name/$sub"
	done <<<"$PEER_SOURCES"
	# indexed_zstd's submodule, then the package
	rm -rf "$PREFIX/src/indexed_zstd/indexed_zstd/libzstd-seek"
	cp -a "$PREFIX/src/libzstd-seek" "$PREFIX/src/indexed_zstd/indexed_zstd/libzstd-seek"
	"${pip[@]}" "$PREFIX/src/indexed_zstd"
	# ratarmountcore lives in ratarmount's tree (core/)
	"${pip[@]}" "$PREFIX/src/ratarmount/core" "$PREFIX/src/ratarmount"
	"$PREFIX/venv/bin/ratarmount" --version
}
if [ $SETUP = 1 ]; then
	setup
	exit 0
fi

# ---- inputs ---------------------------------------------------------------
RATARMOUNT="$PREFIX/venv/bin/ratarmount"
if [ $RATAR = 1 ] && [ ! -x "$RATARMOUNT" ]; then
	echo "peer.sh: no $RATARMOUNT (run --setup, or --no-ratarmount)" >&2
	exit 1
fi
[ -x "$ZMOUNT" ] || { echo "peer.sh: no $ZMOUNT; build first" >&2; exit 1; }
IN="$WORK/in"
mkdir -p "$IN" "$WORK/mnt"
bytes=$(numfmt --from=iec "$SIZE")
if [ ! -x "$WORK/gencorpus" ] || [ "$ROOT/tools/bench/gencorpus.c" -nt "$WORK/gencorpus" ]; then
	cc -O2 -o "$WORK/gencorpus" "$ROOT/tools/bench/gencorpus.c"
fi
# the text, remade (and everything made from it) when SIZE changes
if [ "$(cat "$IN/size" 2>/dev/null)" != "$bytes" ]; then
	rm -f "$IN"/*
	"$WORK/gencorpus" log "$bytes" 1 > "$IN/text"
	echo "$bytes" > "$IN/size"
fi
make_in() { # NAME CMD...: IN/NAME from the command's stdout, once
	local n=$1; shift
	[ -s "$IN/$n" ] && return 0
	echo "peer.sh: making $n" >&2
	"$@" > "$IN/$n.tmp" && mv "$IN/$n.tmp" "$IN/$n"
}
make_in z1.zst zstd -q -3 -c "$IN/text"
make_in z4m.zst split -b 4M --filter='zstd -q -3 -c' "$IN/text"
# -n: no name in the header (ratarmount would show the file by that name)
make_in gz.gz gzip -6 -n -c "$IN/text"
make_in x4m.xz xz -6 -T1 --block-size=4MiB -c "$IN/text"
make_in x1b.xz xz -6 -T1 -c "$IN/text"
[ "${PEER_PREPARE_ONLY:-0}" = 1 ] && exit 0

# ---- mounts and timings ---------------------------------------------------
MNT="$WORK/mnt"
LOG="$WORK/peer.log"
now() { date +%s.%N; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
PID=""
# start TOOL FILE IDX: a fresh mount of IN/FILE by TOOL, its index in IDX
# (zmount: a directory; ratarmount: an .index.sqlite path)
start() {
	if [ "$1" = zmount ]; then
		rm -rf "$WORK/src" && mkdir -p "$WORK/src"
		ln "$IN/$2" "$WORK/src/$2"
		"$ZMOUNT" "$WORK/src" "$MNT" -f -o "$ZOPTS,index_dir=$3,log_file=$LOG" 2>>"$LOG" &
	else
		"$RATARMOUNT" -f --index-file "$3" "$IN/$2" "$MNT" >>"$LOG" 2>&1 &
	fi
	PID=$!
	for _ in $(seq 60000); do # 5 ms steps: a 50 ms step added up to 50 ms to each first touch
		mountpoint -q "$MNT" && return 0
		kill -0 $PID 2>/dev/null || { echo "peer.sh: $1 died on $2 (see $LOG)" >&2; exit 1; }
		sleep 0.005
	done
	echo "peer.sh: $1 did not mount $2" >&2
	exit 1
}
stop() {
	umount "$MNT" || umount -l "$MNT"
	wait $PID || true
}
trap 'umount -l "$MNT" 2>/dev/null || true' EXIT
idx_of() { # TOOL ROW: where TOOL keeps ROW's index
	if [ "$1" = zmount ]; then echo "$WORK/idx/z-$2"; else echo "$WORK/idx/r-$2.index.sqlite"; fi
}
fresh_idx() { # TOOL ROW: nothing saved
	local i
	i=$(idx_of "$1" "$2")
	rm -rf "$i"
	if [ "$1" = zmount ]; then mkdir -p "$i"; fi
	echo "$i"
}
# saved_idx TOOL FILE: a full read on a first mount, which saves the index
saved_idx() {
	local row=${2%.*} i
	i=$(fresh_idx "$1" "$row")
	start "$1" "$2" "$i"
	dd if="$MNT/$row" of=/dev/null bs=1M status=none
	stop
	if [ -z "$(ls -A "$i" 2>/dev/null || true)" ] && [ ! -s "$i" ]; then
		echo "peer.sh: warning: $1 saved no index for $2" >&2
	fi
}
# t_first/t_tail TOOL FILE: mount start to the whole read / the tail done
t_mounted() {
	local tool=$1 file=$2 how=$3 row=${2%.*} i t0 t1
	i=$(fresh_idx "$tool" "$row")
	drop
	t0=$(now)
	start "$tool" "$file" "$i"
	if [ "$how" = all ]; then
		dd if="$MNT/$row" of=/dev/null bs=1M status=none
	else
		tail -c 4096 "$MNT/$row" > /dev/null
	fi
	t1=$(now)
	stop
	echo "$t1 - $t0" | bc -l
}
# t_later TOOL FILE: the whole read on a mount over the saved index
t_later() {
	local row=${2%.*} t0 t1
	start "$1" "$2" "$(idx_of "$1" "$row")"
	drop
	t0=$(now)
	dd if="$MNT/$row" of=/dev/null bs=1M status=none
	t1=$(now)
	stop
	echo "$t1 - $t0" | bc -l
}
# rand TOOL FILE ROUND: one random pass; prints one ms figure per read
rand() {
	local row=${2%.*}
	start "$1" "$2" "$(idx_of "$1" "$row")"
	drop
	python3 - "$MNT/$row" "$READS" "$BUDGET" "$3" <<'PY'
import mmap, os, random, sys, time
path, n, budget, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
size = os.stat(path).st_size
rng = random.Random(seed)
offs = [rng.randrange(0, size // 4096) * 4096 for _ in range(n)]
try:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
except OSError:
    fd = os.open(path, os.O_RDONLY)
    print("no-odirect", file=sys.stderr)
buf = mmap.mmap(-1, 4096)
start = time.monotonic()
for i, off in enumerate(offs):
    t0 = time.monotonic()
    if os.preadv(fd, [buf], off) != 4096:
        sys.exit("short read at %d" % off)
    print("%.3f" % ((time.monotonic() - t0) * 1000))
    if i >= 4 and time.monotonic() - start > budget:
        break
PY
	stop
}
t_pipe() { # DECODER FILE all|tail
	local t0 t1
	drop
	t0=$(now)
	if [ "$3" = all ]; then
		"$1" -dc "$IN/$2" > /dev/null
	else
		"$1" -dc "$IN/$2" | tail -c 4096 > /dev/null
	fi
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
median() { sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# ---- the rounds -----------------------------------------------------------
ROWS="z1:z1.zst:zstd z4m:z4m.zst:zstd x1b:x1b.xz:xz x4m:x4m.xz:xz gz:gz.gz:gzip"
TOOLS="zmount pipe"
[ $RATAR = 1 ] && TOOLS="zmount ratarmount pipe"
: > "$LOG"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A T
for spec in $ROWS; do
	IFS=: read -r row file dec <<<"$spec"
	[ -n "$ONLY" ] && [ "$ONLY" != "$row" ] && continue
	for tool in $TOOLS; do
		[ "$tool" = pipe ] || saved_idx "$tool" "$file"
	done
	for r in $(seq "$REPEAT"); do
		# rotate the tools' order, so a busy spell does not hit one tool only
		order=$TOOLS
		for _ in $(seq $(((r - 1) % 3))); do order="${order#* } ${order%% *}"; done
		for tool in $order; do
			echo "peer.sh: $row round $r $tool" >&2
			if [ "$tool" = pipe ]; then
				T[$row.pipe.all]+=" $(t_pipe "$dec" "$file" all)"
				T[$row.pipe.tail]+=" $(t_pipe "$dec" "$file" tail)"
				continue
			fi
			T[$row.$tool.first]+=" $(t_mounted "$tool" "$file" all)"
			T[$row.$tool.tail]+=" $(t_mounted "$tool" "$file" tail)"
			saved_idx "$tool" "$file"
			T[$row.$tool.later]+=" $(t_later "$tool" "$file")"
			T[$row.$tool.rand]+=" $(rand "$tool" "$file" "$r" | tr '\n' ' ')"
		done
	done
done

# ---- the report -----------------------------------------------------------
med() { tr ' ' '\n' <<<"${T[$1]:-}" | median; }
mean() { tr ' ' '\n' <<<"${T[$1]:-}" | awk 'NF {s += $1; n++} END {if (n) print s / n}'; }
cnt() { tr ' ' '\n' <<<"${T[$1]:-}" | sed '/^$/d' | wc -l; }
ratio() { # A B: A/B, or "" when either is missing
	[ -n "$1" ] && [ -n "$2" ] && printf '%.2fx' "$(echo "$1 / $2" | bc -l)"
	return 0
}
secs() { [ -n "$1" ] && printf '%.2f' "$1"; return 0; }
rev=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . || echo +dirty)
printf '\npeer.sh: zmount %s (%s, -o %s), %s of text, repeat %s, %s reads/pass (budget %ss), %s\n' \
	"$rev" "$ZMOUNT" "$ZOPTS" "$SIZE" "$REPEAT" "$READS" "$BUDGET" "$(date -u +%FT%TZ)"
printf 'nproc %s, load at start %s, at end %s\n' "$(nproc)" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n| row | measure | pipeline s | zmount s | ratarmount s | zmount vs pipeline | ratarmount vs pipeline | zmount vs ratarmount |\n'
printf '|---|---|--:|--:|--:|--:|--:|--:|\n'
for spec in $ROWS; do
	IFS=: read -r row file dec <<<"$spec"
	[ -n "${T[$row.pipe.all]:-}" ] || continue
	pa=$(med "$row.pipe.all")
	pt=$(med "$row.pipe.tail")
	for m in first later tail; do
		p=$pa; [ $m = tail ] && p=$pt
		z=$(med "$row.zmount.$m")
		q=$(med "$row.ratarmount.$m")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$row" "$m" "$(secs "$p")" \
			"$(secs "$z")" "$(secs "$q")" "$(ratio "$p" "$z")" "$(ratio "$p" "$q")" "$(ratio "$q" "$z")"
	done
	z=$(med "$row.zmount.rand")
	q=$(med "$row.ratarmount.rand")
	printf '| %s | rand p50 ms (n=%s/%s) | | %s | %s | | | %s |\n' "$row" \
		"$(cnt "$row.zmount.rand")" "$(cnt "$row.ratarmount.rand")" "$(secs "$z")" "$(secs "$q")" "$(ratio "$q" "$z")"
	# the mean too: reads that hit a tool's own cache pull the p50 down
	z=$(mean "$row.zmount.rand")
	q=$(mean "$row.ratarmount.rand")
	printf '| %s | rand mean ms | | %s | %s | | | %s |\n' "$row" "$(secs "$z")" "$(secs "$q")" "$(ratio "$q" "$z")"
done
printf '(medians of %s; "vs" = the other'"'"'s time / this one'"'"'s: above 1 means faster)\n' "$REPEAT"
for k in "${!T[@]}"; do echo "raw $k:${T[$k]}"; done | sort

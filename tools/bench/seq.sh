#!/bin/bash
# seq.sh: cold sequential reads through two zmount builds side by side.
#
#   sudo tools/bench/seq.sh --base REV [--repeat N] [--only NAME[,NAME...]] [--workdir DIR]
#
# Builds REV (git archive into WORKDIR/base-REV, same CMake build type as
# build/) and measures it beside this tree's build/fs/zmount on the same
# inputs, alternating the two daemons (and the stock decoder) inside each
# repeat, so a busy machine slows all three alike.  Every timing is a fresh
# mount of a directory that holds only the file measured, page cache
# dropped, the file read whole with 1 MiB reads.  Prints medians and the
# ratios to the decoder measured in the same run (decoder time / zmount
# time: above 1 means zmount is faster).
#
# Inputs are generated at bench time (tools/bench/gencorpus.c log text) and
# kept in WORKDIR/in while their size and commands are unchanged:
#   z1    40 MiB, zstd -3, one frame                        cache_size=32M
#   z2    40 MiB, two zstd -3 frames of 20 MiB               cache_size=32M
#   x4m   128 MiB, xz -6 --block-size=4MiB                   cache_size=256M
#   x1b   128 MiB, xz -6 -T1, one Block                      cache_size=256M
#   x1bs  the same, its checkpoints saved                    cache_size=256M
#   gz    128 MiB, gzip -6, read through a saved index       cache_size=32M
#   z1s   128 MiB, zstd -3, one frame, index saved           cache_size=256M
#   zf4s  128 MiB, zstd -3 of 4 MiB pieces through a pipe (frames that
#         state no size), index saved                        cache_size=256M
# The saved rows' index (gz, z1s, zf4s, x1bs) is made once per build, by a read
# on a mount with an index_dir; the other xz and zstd rows mount with an
# empty index_dir, as a first mount.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE=""
REPEAT=3
ONLY=""
WORK=/tmp/zmount-seq
NEW="$ROOT/build/fs/zmount"
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=$2; shift 2 ;;
	--repeat) REPEAT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;; # one row's key, or several, comma-separated
	--workdir) WORK=$2; shift 2 ;;
	--zmount) NEW=$2; shift 2 ;;
	--base-zmount) BASEBIN=$2; shift 2 ;;
	*) echo "usage: $0 --base REV [--repeat N] [--only NAME] [--workdir DIR] [--zmount PATH] [--base-zmount PATH]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "seq.sh: needs root (drop_caches, mounts)" >&2; exit 1; }
[ -x "$NEW" ] || { echo "seq.sh: no $NEW; build first" >&2; exit 1; }
mkdir -p "$WORK/in" "$WORK/mnt"

# The base build: a tree of REV and its own build directory.
if [ -z "${BASEBIN:-}" ]; then
	[ -n "$BASE" ] || { echo "seq.sh: --base REV or --base-zmount PATH" >&2; exit 2; }
	sha=$(git -C "$ROOT" rev-parse --short "$BASE")
	bdir="$WORK/base-$sha"
	if [ ! -x "$bdir/build/fs/zmount" ]; then
		rm -rf "$bdir" && mkdir -p "$bdir"
		git -C "$ROOT" archive "$sha" | tar -x -C "$bdir"
		bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null || true)
		cmake -S "$bdir" -B "$bdir/build" ${bt:+-DCMAKE_BUILD_TYPE=$bt} >/dev/null
		cmake --build "$bdir/build" -j2 --target zmount >/dev/null
	fi
	BASEBIN="$bdir/build/fs/zmount"
	BASENAME=$sha
else
	BASENAME=$(basename "$(dirname "$(dirname "$(dirname "$BASEBIN")")")")
fi

# Inputs.
IN="$WORK/in"
if [ ! -x "$WORK/gencorpus" ] || [ "$ROOT/tools/bench/gencorpus.c" -nt "$WORK/gencorpus" ]; then
	cc -O2 -o "$WORK/gencorpus" "$ROOT/tools/bench/gencorpus.c"
fi
make_in() { # NAME CMD...: WORK/in/NAME from the command's stdout, once
	local n=$1; shift
	[ -s "$IN/$n" ] && return 0
	echo "seq.sh: making $n" >&2
	"$@" > "$IN/$n.tmp" && mv "$IN/$n.tmp" "$IN/$n"
}
[ -s "$IN/t40" ] || "$WORK/gencorpus" log 41943040 1 > "$IN/t40"
[ -s "$IN/t128" ] || "$WORK/gencorpus" log 134217728 1 > "$IN/t128"
make_row() { # the input of one row
	case $1 in
	z1.zst) make_in z1.zst zstd -q -3 -c "$IN/t40" ;;
	z2.zst) make_in z2.zst sh -c "head -c 20971520 '$IN/t40' | zstd -q -3 -c; tail -c 20971520 '$IN/t40' | zstd -q -3 -c" ;;
	z1s.zst) make_in z1s.zst zstd -q -3 -c "$IN/t128" ;;
	zf4s.zst) make_in zf4s.zst sh -c "for i in \$(seq 0 31); do dd if='$IN/t128' bs=4M skip=\$i count=1 status=none | zstd -q -3; done" ;;
	x4m.xz) make_in x4m.xz xz -6 -T1 --block-size=4MiB -c "$IN/t128" ;;
	x1b.xz) make_in x1b.xz xz -6 -T1 -c "$IN/t128" ;;
	x1bs.xz) make_row x1b.xz; [ -s "$IN/x1bs.xz" ] || ln "$IN/x1b.xz" "$IN/x1bs.xz" ;;
	gz.gz) make_in gz.gz gzip -6 -c "$IN/t128" ;;
	esac
}

now() { date +%s.%N; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
PID=""
mount_one() { # BIN FILE OPTS
	local src="$WORK/src"
	rm -rf "$src" && mkdir -p "$src"
	ln "$IN/$2" "$src/$2"
	"$1" "$src" "$WORK/mnt" -f -o "$3,log_file=$WORK/zmount.log" 2>>"$WORK/zmount.log" &
	PID=$!
	for _ in $(seq 2000); do # 5 ms steps: a 50 ms step added up to 50 ms to each first touch
		mountpoint -q "$WORK/mnt" && return 0
		kill -0 $PID 2>/dev/null || { echo "seq.sh: $1 died" >&2; exit 1; }
		sleep 0.005
	done
	echo "seq.sh: $1 did not mount" >&2; exit 1
}
umount_one() {
	fusermount3 -u "$WORK/mnt" || fusermount3 -uz "$WORK/mnt"
	wait $PID || true
}
trap 'fusermount3 -uz "$WORK/mnt" 2>/dev/null || true' EXIT

# time_zmount BIN FILE OPTS: seconds to read MNT/<name> whole, cold
time_zmount() {
	local name=${2%.*}
	# dropped first, and read as soon as the mount is up: the background
	# indexer starts at mount, as it does for a user's first cat
	drop
	mount_one "$1" "$2" "$3"
	local t0 t1
	t0=$(now)
	dd if="$WORK/mnt/$name" of=/dev/null bs=1M status=none
	t1=$(now)
	# the daemon's decoded bytes for this read (counted, not timed)
	echo "$CUR $(getfattr --only-values -n user.zmount.stats "$WORK/mnt" 2>/dev/null |
		grep -o 'decoded_bytes=[0-9]*')" >>"$WORK/decoded.log"
	umount_one
	echo "$t1 - $t0" | bc -l
}
time_dec() { # DECODER FILE
	drop
	local t0 t1
	t0=$(now)
	$1 -dc "$IN/$2" > /dev/null
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# key:file:decoder:options:first|saved
ROWS="z1:z1.zst:zstd:cache_size=32M:first z2:z2.zst:zstd:cache_size=32M:first
x4m:x4m.xz:xz:cache_size=256M:first x1b:x1b.xz:xz:cache_size=256M:first
x1bs:x1bs.xz:xz:cache_size=256M:saved
gz:gz.gz:gzip:cache_size=32M:saved z1s:z1s.zst:zstd:cache_size=256M:saved
zf4s:zf4s.zst:zstd:cache_size=256M:saved"
declare -A T
: >"$WORK/decoded.log"
for row in $ROWS; do
	IFS=: read -r key file dec opts mode <<<"$row"
	[ -n "$ONLY" ] && [[ ",$ONLY," != *",$key,"* ]] && continue
	make_row "$file"
	for b in new base; do
		bin=$NEW; [ $b = base ] && bin=$BASEBIN
		idx="$WORK/index-$key-$b"
		rm -rf "$idx" && mkdir -p "$idx"
		if [ "$mode" = saved ]; then
			# the saved index, built by this build
			mount_one "$bin" "$file" "$opts,index_dir=$idx"
			dd if="$WORK/mnt/${file%.*}" of=/dev/null bs=1M status=none
			umount_one
		fi
	done
	for r in $(seq "$REPEAT"); do
		# alternate: the order flips on every other repeat
		order="new base dec"; [ $((r % 2)) = 0 ] && order="dec base new"
		for b in $order; do
			if [ $b = dec ]; then
				t=$(time_dec "$dec" "$file")
			else
				bin=$NEW; [ $b = base ] && bin=$BASEBIN
				idx="$WORK/index-$key-$b"
				[ "$mode" = saved ] || { rm -rf "$idx" && mkdir -p "$idx"; }
				CUR="$key.$b"
				t=$(time_zmount "$bin" "$file" "$opts,index_dir=$idx")
			fi
			T[$key.$b]="${T[$key.$b]:-} $t"
		done
	done
done

size_of() { stat -c %s "$IN/$1"; }
printf '\nseq.sh: new = %s (%s), base = %s, repeat %s, %s, load %s\n' \
	"$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . || echo +dirty)" \
	"$NEW" "$BASENAME" "$REPEAT" "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| row | decoder s | base s | new s | base/decoder | new/decoder | new vs base |\n'
printf '|---|---|---|---|---|---|---|\n'
for row in $ROWS; do
	IFS=: read -r key file dec opts mode <<<"$row"
	[ -n "${T[$key.new]:-}" ] || continue
	d=$(tr ' ' '\n' <<<"${T[$key.dec]}" | sed '/^$/d' | median)
	b=$(tr ' ' '\n' <<<"${T[$key.base]}" | sed '/^$/d' | median)
	n=$(tr ' ' '\n' <<<"${T[$key.new]}" | sed '/^$/d' | median)
	printf '| %s (%s) | %.3f | %.3f | %.3f | %.2fx | %.2fx | %.2fx |\n' \
		"$key" "$opts" "$d" "$b" "$n" \
		"$(echo "$d / $b" | bc -l)" "$(echo "$d / $n" | bc -l)" "$(echo "$b / $n" | bc -l)"
done
printf '(times are medians of %s; ratios are decoder time / zmount time, and base time / new time)\n' "$REPEAT"
for k in "${!T[@]}"; do echo "raw $k:${T[$k]}"; done | sort
sort "$WORK/decoded.log" | awk '{print "decoded " $0}'

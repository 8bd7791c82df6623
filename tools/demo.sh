#!/usr/bin/env bash
# The README's first command: installs dependencies, builds zmount, generates
# a sample directory of rotated logs and archives, mounts it, and reads
# through it with unmodified tools.  Leaves nothing mounted.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
zmount=$PWD/build/fs/zmount

work=$(mktemp -d /tmp/zmount-demo.XXXXXX)
src=$work/src mnt=$work/mnt
mkdir -p "$src/logs" "$src/metrics" "$mnt"
cleanup() {
	mountpoint -q "$mnt" && fusermount3 -uz "$mnt"
	rm -rf "$work"
}
trap cleanup EXIT

echo "== generating a sample tree in $src"
# Rotated web logs: app.log (plain), app.log.1.gz .. app.log.4.gz
for i in 0 1 2 3 4; do
	awk -v day="$i" 'BEGIN {
		srand(42 + day)
		split("GET POST PUT DELETE", m, " ")
		split("/ /api/users /api/orders /static/app.js /login /metrics", p, " ")
		for (n = 0; n < 200000; n++)
			printf "2026-11-%02d %02d:%02d:%02d %s %s %d %d\n", 29 - day, n / 8334 % 24,
			       n / 139 % 60, n % 60, m[int(rand() * 4) + 1], p[int(rand() * 6) + 1],
			       (rand() < 0.02) ? 500 : 200, int(rand() * 5000)
	}' > "$work/app.log.$i"
done
cp "$work/app.log.0" "$src/logs/app.log"
for i in 1 2 3 4; do gzip -c "$work/app.log.$i" > "$src/logs/app.log.$i.gz"; done
# A metrics archive in 1 MiB xz Blocks, and a tarball.
seq 1 3000000 | awk '{ printf "%d cpu=%d mem=%d\n", $1, $1 * 7 % 100, $1 * 13 % 4096 }' > "$work/metrics.txt"
xz -T1 --block-size=1MiB -c "$work/metrics.txt" > "$src/metrics/node1.txt.xz"
# The same series as PCP 7 and others write it: zstd, in frames of 4 MiB (pzstd).
pzstd -q -p2 -c "$work/metrics.txt" > "$src/metrics/node2.txt.zst"
tar -C "$work" -cJf "$src/logs.txz" app.log.1 app.log.2
du -sh "$src" "$work"/app.log.* "$work/metrics.txt" | sed 's/^/   /'

echo "== zmount $src $mnt -o cache_size=64M,index_dir=$work/index"
"$zmount" "$src" "$mnt" -o cache_size=64M,index_dir="$work/index"
echo "\$ ls -l $mnt/logs $mnt/metrics $mnt"
ls -l "$mnt/logs" "$mnt/metrics" "$mnt"
echo "\$ grep -c ' 500 ' $mnt/logs/app.log.3"
grep -c ' 500 ' "$mnt/logs/app.log.3"
echo "\$ tail -n 2 $mnt/metrics/node1.txt"
tail -n 2 "$mnt/metrics/node1.txt"
echo "\$ dd if=$mnt/metrics/node1.txt bs=1 skip=40000000 count=60"
dd if="$mnt/metrics/node1.txt" bs=1 skip=40000000 count=60 status=none; echo
echo "\$ tail -c 60 $mnt/metrics/node2.txt  # from the .zst"
tail -c 60 "$mnt/metrics/node2.txt"
echo "\$ tar -tvf $mnt/logs.tar"
tar -tvf "$mnt/logs.tar"
echo "== checking every byte against the originals"
cmp "$mnt/metrics/node1.txt" "$work/metrics.txt"
cmp "$mnt/metrics/node2.txt" "$work/metrics.txt"
for i in 1 2 3 4; do cmp "$mnt/logs/app.log.$i" "$work/app.log.$i"; done
echo "all files identical"
fusermount3 -u "$mnt"
echo "== unmounted; demo OK"

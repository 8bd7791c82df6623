#!/usr/bin/env bash
# fuzz.sh -- runs one libFuzzer target with its limits; used by ctest and
# tools/ci-stages.sh, so both use the same flags.
#
#   fuzz.sh replay BIN TARGET INPUT...
#       runs every file given, and every file under each directory given,
#       once through BIN (no fuzzing); a missing directory is skipped.
#       Exit 0 when all ran clean, 1 on the first crash, leak or timeout.
#   fuzz.sh fuzz BIN TARGET SECONDS WORKDIR SEEDDIR...
#       fuzzes for SECONDS into WORKDIR/corpus (the seeds are read, never
#       written; a missing SEEDDIR is skipped), crash files go to
#       WORKDIR/artifacts/, the log to
#       WORKDIR/fuzz.log.  Prints one summary line:
#       "fuzz TARGET: N execs in S s (E/s), corpus C, crashes K"
#       Exit 0 when no crash was found, 1 otherwise.
#
# TARGET is xz, gz, idxfile, opts, zstd, lzma2, xzckpt, zstdckpt_blob or tarscan.  Per target:
#   max_len   the largest input fuzzing makes (replay runs files whole);
#   malloc    the largest single allocation allowed (-malloc_limit_mb): each
#             is what the code under test may legitimately need, with room:
#             xz: the Index memlimit is 64 MiB and the harness decodes small
#             Blocks; gz: the harness keeps 8 MiB of output; the others are
#             small.  Anything bigger is reported as a crash ("malloc limit").
#             zstd: the harness's window limit is 8 MiB, plus libzstd's buffers.
#             lzma2: three 256 KiB output buffers and two 1 MiB dictionaries.
#             xzckpt: a 64 KiB dictionary and a payload of at most 2 * 64 KiB.
#             zstdckpt_blob: a 128 KiB window; a blob's payload at most 9x that.
#             tarscan: the harness caps each table at 16 MiB of counted bytes.
# Every target: -rss_limit_mb=1024, -timeout=20 s per input (a hang is a crash).
set -euo pipefail

limits() { # limits TARGET -> "max_len malloc_mb"
	case $1 in
	xz) echo "65536 256" ;;
	gz) echo "65536 64" ;;
	idxfile) echo "65536 32" ;;
	opts) echo "8192 16" ;;
	zstd) echo "65536 64" ;;
	lzma2) echo "65536 64" ;;
	xzckpt) echo "65536 64" ;;
	zstdckpt_blob) echo "4096 64" ;;
	tarscan) echo "65536 64" ;;
	*) echo "fuzz.sh: unknown target '$1'" >&2; return 2 ;;
	esac
}

mode=${1:-}
case $mode in
replay)
	[ $# -ge 3 ] || { echo "usage: $0 replay BIN TARGET INPUT..." >&2; exit 2; }
	bin=$2 target=$3
	shift 3
	read -r _ malloc_mb < <(limits "$target")
	files=()
	for in in "$@"; do
		if [ -d "$in" ]; then
			while IFS= read -r -d '' f; do files+=("$f"); done \
				< <(find "$in" -type f ! -name '.*' -print0 | sort -z)
		elif [ -f "$in" ]; then
			files+=("$in")
		fi
	done
	if [ ${#files[@]} -eq 0 ]; then
		echo "replay $target: no inputs found in: $*" >&2
		exit 1
	fi
	log=$(mktemp "${TMPDIR:-/tmp}/zmount-replay.XXXXXX")
	trap 'rm -f "$log"' EXIT
	# batches keep the command line short; each file runs once, whole
	for ((i = 0; i < ${#files[@]}; i += 200)); do
		if ! "$bin" -rss_limit_mb=1024 -malloc_limit_mb="$malloc_mb" -timeout=20 \
			"${files[@]:i:200}" >"$log" 2>&1; then
			cat "$log"
			echo "replay $target: FAILED (crash above; input named in the 'Running:' line before it)"
			exit 1
		fi
	done
	echo "replay $target: ${#files[@]} inputs ran clean"
	;;
fuzz)
	[ $# -ge 6 ] || { echo "usage: $0 fuzz BIN TARGET SECONDS WORKDIR SEEDDIR..." >&2; exit 2; }
	bin=$2 target=$3 secs=$4 work=$5
	shift 5
	read -r max_len malloc_mb < <(limits "$target")
	mkdir -p "$work/corpus" "$work/artifacts"
	seeds=() # libFuzzer exits on a missing directory; regress/TARGET may not exist yet
	for d in "$@"; do
		[ -d "$d" ] && seeds+=("$d")
	done
	rc=0 start=$SECONDS
	"$bin" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=1024 \
		-malloc_limit_mb="$malloc_mb" -timeout=20 -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" "${seeds[@]}" \
		>"$work/fuzz.log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -1)
	corpus=$(find "$work/corpus" -type f | wc -l)
	crashes=$(find "$work/artifacts" -type f | wc -l)
	echo "fuzz $target: ${execs:-?} execs in $((SECONDS - start)) s (${speed:-?}/s), corpus $corpus, crashes $crashes"
	if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
		grep -E -A40 '^==[0-9]+==ERROR|^SUMMARY|broken promise|deadly signal|out-of-memory|timeout' \
			"$work/fuzz.log" | head -80 || true
		echo "fuzz $target: FAILED (exit $rc); inputs in $work/artifacts/, log $work/fuzz.log"
		exit 1
	fi
	;;
*)
	echo "usage: $0 replay|fuzz ..." >&2
	exit 2
	;;
esac

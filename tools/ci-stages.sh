#!/usr/bin/env bash
# ci-stages.sh STAGE -- the sanitizer and fuzzing stages of CI.
#
# The asan, tsan and fuzz builds are CMakePresets.json's presets of those
# names (`cmake --preset asan` etc.), so a developer's build-asan/ is CI's.
#
#   asan   build-asan/ (gcc, -DZMOUNT_SANITIZE=address,undefined, RelWithDebInfo);
#          the ctest suite but the long fault, conformance and install tests
#          (they run in the normal build), mount tests included, so the daemon itself
#          runs under ASan+UBSan and LeakSanitizer checks it when it exits
#          after its unmount.  Any report fails its test: the tests require
#          the daemon to exit 0, and abort_on_error makes a report an abort.
#          The slow unit tests (codec oracles) run only here in CI:
#          tools/test.sh leaves them out of the normal build's ctest when
#          this stage follows.
#   tsan   build-tsan/ (gcc, -DZMOUNT_SANITIZE=thread; only the programs its
#          tests run are built); the tests that share
#          the cache and the reader between threads, and two mount tests (the
#          daemon's multi-threaded FUSE loop and its read-ahead workers).
#   fuzz   build-fuzz/ (clang, libFuzzer + ASan + UBSan; installs clang and
#          libclang-rt-14-dev if missing); generates the seeds, fuzzes every
#          target for FUZZ_SECONDS (default 60) each, two at a time, then
#          replays the seeds and tests/fuzz/regress/ through every target.
#          Crash inputs are kept in build-fuzz/fuzz-runs/TARGET/artifacts/.
#   big    the >4 GiB conformance cases (2-4 minutes), in build/.
#   all    the four in sequence; runs them all and fails if any failed.
#
# The functions below run inside `||` (to time them and go on to the next
# stage), where bash ignores set -e: every step says `|| return 1` itself.
#
# Each stage prints what it runs and ends with one line
# "ci-stages: STAGE PASSED in N s" or "ci-stages: STAGE FAILED in N s",
# and exits nonzero on failure.  Environment: FUZZ_SECONDS, JOBS (default
# nproc), and CI's own variables pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
fuzz_targets=(xz gz idxfile opts zstd lzma2 xzckpt zstdckpt_blob tarscan)
# Under TSan: the tests that share the cache, the reader and the read-ahead
# pool between threads (of check_reader, its threaded case only: see
# tests/CMakeLists.txt), and two mount tests that drive the daemon's
# multi-threaded loop (2 to 4.5 minutes together on 2 cores, as measured).  The other
# mount tests check memory and timing, which TSan's overhead distorts, or
# install a package; ASan runs them.  check_s3src (windows that threads
# share) brings its RGW fixture up with it (ctest adds fixture setups).
tsan_tests='check_bgjob|check_xzckpt_preset0|check_xzckpt_damage|check_bcache|check_reader_threads|check_s3src|mount_generated|mount_xz_corpus'
# ... and the programs they run, the only targets built under TSan (about a
# third of the build's objects: the rest are other tests, the dummy-format
# copies of the libraries in tests/fmt, and benchmarks).  A test whose
# program is not built fails ("Could not find executable"), never passes.
tsan_targets='zmount zmount-cat zmount-info zmount-index zmount-stat check_bgjob check_xzckpt check_bcache check_reader check_s3src'
# Skipped under ASan: the S3 suites (a second RGW would cost a minute; the
# normal build runs them), the long ones (they run in the normal build), those
# that hold the daemon's VmHWM to the README's bound, which ASan's shadow
# memory and quarantine would break (memory, tree_trust, stress_short), and
# the checks of sources and docs that run no compiled code of ours (format,
# locking, labels, man_lint_*).  Whole names: check_s3tree, a unit test, runs.
# The dummy-format tests (tests/fmt) are not built here (ZMOUNT_DUMMY_FMT=OFF
# in the asan preset): they would compile the libraries twice more.
asan_skip='s3_rgw_up|s3_rgw_down|check_s3|check_s3src|tools_s3|mount_s3.*|stress_s3|mount_faults|mount_conformance|mount_install|mount_memory|mount_tar_million|mount_tree_trust|stress_short|format|locking|labels|man_lint_.*'

# Sanitizer runtime options for every process the tests start, the daemon
# included.  LeakSanitizer runs at every exit; a leak is a failure.  There is
# no suppressions file: libfuse 3.14 leaks nothing at the daemon's exit, and
# our own code is never suppressed.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

say() { printf '\n== %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

install_pkgs() { # install_pkgs PKG...: the missing ones, as tools/deps.sh does
	local missing=() sudo=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "installing: ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

configure_build() { # configure_build DIR CMAKE-ARGS...
	local dir=$1
	shift
	printf '+ %s\n' "cmake -S . -B $dir -DCMAKE_BUILD_TYPE=RelWithDebInfo $*"
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
}

configure_preset() { # configure_preset NAME: CMakePresets.json's NAME, in build-NAME/
	printf '+ %s\n' "cmake --preset $1"
	cmake --preset "$1" >/dev/null
}

stage_asan() {
	say "asan: build-asan with gcc -fsanitize=address,undefined; the whole ctest suite"
	configure_preset asan || return 1
	run cmake --build build-asan -j"$jobs" || return 1
	say "asan: ctest (ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS)"
	# The long fault, conformance and install tests run in the normal build;
	# under ASan the daemon still serves the generated, corpus and change tests.
	(cd build-asan && run ctest --output-on-failure -j"$jobs" --timeout 900 \
		-E "^($asan_skip)\$") || return 1
}

stage_tsan() {
	say "tsan: build-tsan with gcc -fsanitize=thread; threaded unit tests and mount tests"
	configure_preset tsan || return 1
	run cmake --build build-tsan -j"$jobs" --target $tsan_targets || return 1
	say "tsan: ctest (TSAN_OPTIONS=$TSAN_OPTIONS)"
	(cd build-tsan && run ctest --output-on-failure -j"$jobs" --timeout 900 \
		-R "^($tsan_tests)\$") || return 1
}

stage_fuzz() {
	local bin=build-fuzz/tests/fuzz seeds=build-fuzz/tests/fuzz/seeds runs=build-fuzz/fuzz-runs
	local pids=() failed=0 t

	say "fuzz: clang, libFuzzer + ASan + UBSan; $fuzz_seconds s per target (FUZZ_SECONDS)"
	install_pkgs clang libclang-rt-14-dev || return 1
	configure_preset fuzz || return 1
	if [ ! -f build-fuzz/tests/fuzz/CTestTestfile.cmake ]; then
		echo "tests/fuzz is not part of the build: tests/CMakeLists.txt needs"
		echo "  if(ZMOUNT_FUZZ) add_subdirectory(fuzz) endif()"
		return 1
	fi
	run cmake --build build-fuzz -j"$jobs" --target fuzzers || return 1
	say "fuzz: seeds (tests/fuzz/make-seeds.sh, from ../shared/corpus)"
	run bash tests/fuzz/make-seeds.sh "$bin/fuzz_seed_idx" "$root/../shared/corpus" "$seeds" ||
		return 1

	say "fuzz: ${fuzz_targets[*]}, $jobs at a time"
	for t in "${fuzz_targets[@]}"; do
		bash tests/fuzz/fuzz.sh fuzz "$bin/fuzz_$t" "$t" "$fuzz_seconds" "$runs/$t" \
			"$seeds/$t" "$root/tests/fuzz/regress/$t" &
		pids+=($!)
		if [ ${#pids[@]} -ge "$jobs" ]; then
			wait "${pids[0]}" || failed=1
			pids=("${pids[@]:1}")
		fi
	done
	for p in "${pids[@]}"; do
		wait "$p" || failed=1
	done

	say "fuzz: replay of the seeds and tests/fuzz/regress/ (ctest -L fuzz)"
	(cd build-fuzz && run ctest --output-on-failure -j"$jobs" -L fuzz) || failed=1
	return $failed
}

stage_big() {
	say "big: the >4 GiB gzip and xz conformance cases through the mount (ctest -L big)"
	configure_build build -DZMOUNT_BIG_TESTS=ON || return 1
	run cmake --build build -j"$jobs" || return 1
	(cd build && run ctest --output-on-failure -L big --timeout 3600) || return 1
}

stage() { # stage NAME: runs stage_NAME, timed, and prints its closing line
	local name=$1 start=$SECONDS rc=0
	"stage_$name" || rc=$?
	if [ $rc -eq 0 ]; then
		echo "ci-stages: $name PASSED in $((SECONDS - start)) s"
	else
		echo "ci-stages: $name FAILED in $((SECONDS - start)) s"
	fi
	return $rc
}

case ${1:-} in
asan | tsan | fuzz | big)
	bash tools/deps.sh
	stage "$1"
	;;
all)
	bash tools/deps.sh
	start=$SECONDS failed=()
	for s in asan tsan fuzz big; do
		stage "$s" || failed+=("$s")
	done
	if [ ${#failed[@]} -eq 0 ]; then
		echo "ci-stages: all PASSED in $((SECONDS - start)) s"
	else
		echo "ci-stages: all FAILED (${failed[*]}) in $((SECONDS - start)) s"
		exit 1
	fi
	;;
*)
	echo "usage: $0 asan|tsan|fuzz|big|all" >&2
	exit 2
	;;
esac

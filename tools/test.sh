#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DZMOUNT_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# The slow unit tests (codecs against their oracles over whole corpora, labelled
# slow: about 300 s of CPU) run once: in the ASan stage below, which runs the
# same programs and assertions at the same -O2, under ASan+UBSan.  With
# ZMOUNT_QUICK=1 (no sanitizer stages) they run here.
asan_reruns='check_gzdec|check_reader|check_ckpt|check_ckconf|check_lzma2dec|check_xzckpt|check_zstddec|check_zstdckpt'
skip=()
[ "${ZMOUNT_QUICK:-0}" = 1 ] || skip=(-E "^($asan_reruns)\$")
(cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 900 "${skip[@]}")
# Sanitizers (ASan+UBSan, TSan) and bounded fuzzing.  ZMOUNT_QUICK=1 skips them.
if [ "${ZMOUNT_QUICK:-0}" != 1 ]; then
	FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash tools/ci-stages.sh all
fi

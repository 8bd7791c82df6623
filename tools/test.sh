#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DZMOUNT_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
# Sanitizers (ASan+UBSan, TSan) and bounded fuzzing.  ZMOUNT_QUICK=1 skips them.
if [ "${ZMOUNT_QUICK:-0}" != 1 ]; then
	FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash tools/ci-stages.sh all
fi

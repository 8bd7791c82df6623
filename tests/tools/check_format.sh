#!/usr/bin/env bash
# The C sources follow .clang-format (issue 20 item 11): every .c and .h
# under the source directories, checked with clang-format --dry-run.
# Usage: check_format.sh SOURCE_DIR.  Exit 0: all formatted; 1: a file is
# not (clang-format names the lines) or clang-format is missing
# (tools/deps.sh installs it).
set -euo pipefail
cd "$1"
if ! command -v clang-format >/dev/null; then
	echo "check_format: clang-format is missing (bash tools/deps.sh installs it)" >&2
	exit 1
fi
mapfile -t files < <(find codec fs index source tools tests -name '*.[ch]' | sort)
if [ "${#files[@]}" -lt 50 ]; then
	echo "check_format: found only ${#files[@]} C files under $PWD" >&2
	exit 1
fi
if ! clang-format --dry-run --Werror "${files[@]}"; then
	echo "check_format: run clang-format -i on the files above" >&2
	exit 1
fi
echo "check_format: ${#files[@]} files follow .clang-format"

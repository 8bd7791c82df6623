#!/usr/bin/env bash
# Installs what zmount needs to build and test on Debian 12.  Idempotent.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libfuse3-dev fuse3 liblzma-dev zlib1g-dev check
      xz-utils gzip pigz tabix python3 coreutils perl dpkg-dev man-db util-linux attr
      libzstd-dev zstd
      logrotate # tests/mount/test_rotate.py --part tail
      clang-format # tests/tools/check_format.sh
      libcurl4-openssl-dev curl # source/s3.c
      ceph-mon ceph-osd radosgw) # the S3 tests' gateway (tests/s3/rgw.sh)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# CPack settings: `cpack -G DEB` in the build directory makes
# zmount_<version>_<arch>.deb from what `cmake --install` installs
# (binaries in /usr/bin, man pages in /usr/share/man/man1, and the copyright,
# README, its doc/ pages and the fstab and systemd examples in
# /usr/share/doc/zmount).
# Included from the top-level CMakeLists.txt, after every install() rule.
include(GNUInstallDirs)

# Documentation and examples: `cmake --install` puts them in
# PREFIX/share/doc/zmount, and so does the .deb (Debian wants a copyright file
# there).  The .mount unit is named for its mount point, as systemd requires.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${PROJECT_SOURCE_DIR}/README.md
              ${PROJECT_SOURCE_DIR}/packaging/fstab.example
              ${PROJECT_SOURCE_DIR}/packaging/srv-logs.mount
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The pages the README links to, at the same relative paths, so that its
# links work in the installed copy too.
install(FILES ${PROJECT_SOURCE_DIR}/doc/recipes.md ${PROJECT_SOURCE_DIR}/doc/design.md
              ${PROJECT_SOURCE_DIR}/doc/memory.md ${PROJECT_SOURCE_DIR}/doc/performance.md
              ${PROJECT_SOURCE_DIR}/doc/index-format.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/doc)
install(FILES ${PROJECT_SOURCE_DIR}/doc/results/benchmarks.md
              ${PROJECT_SOURCE_DIR}/doc/results/s3-bench.md
              ${PROJECT_SOURCE_DIR}/doc/results/zstd-checkpoints.md
              ${PROJECT_SOURCE_DIR}/doc/results/peer-2026-12-04.md
              ${PROJECT_SOURCE_DIR}/doc/results/peer-2026-12-05.md
              ${PROJECT_SOURCE_DIR}/doc/results/tar-1g-2026-12-05.md
              ${PROJECT_SOURCE_DIR}/doc/results/seq-2026-12-05.md
              ${PROJECT_SOURCE_DIR}/doc/results/turns-2026-12-05.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/doc/results)

# Who answers for the package: `cmake -DZMOUNT_DEB_MAINTAINER="Name <mail>"`.
# The default comes from DEBFULLNAME and DEBEMAIL, as with Debian's own
# tools, when they are set at configure time.
if(DEFINED ENV{DEBEMAIL} AND NOT "$ENV{DEBEMAIL}" STREQUAL "")
  if(DEFINED ENV{DEBFULLNAME} AND NOT "$ENV{DEBFULLNAME}" STREQUAL "")
    set(zmount_maintainer_default "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
  else()
    set(zmount_maintainer_default "$ENV{DEBEMAIL}")
  endif()
else()
  set(zmount_maintainer_default "zmount developers <zmount@localhost>")
endif()
set(ZMOUNT_DEB_MAINTAINER "${zmount_maintainer_default}" CACHE STRING
    "Maintainer field of the .deb (Name <address>)")
if(ZMOUNT_DEB_MAINTAINER MATCHES "@localhost>?$")
  message(STATUS "The .deb's Maintainer is ${ZMOUNT_DEB_MAINTAINER}: set -DZMOUNT_DEB_MAINTAINER=\"Name <mail>\" (or DEBFULLNAME and DEBEMAIL) for a package you hand out")
endif()

set(CPACK_PACKAGE_NAME zmount)
set(CPACK_PACKAGE_VENDOR "zmount developers")
set(CPACK_PACKAGE_CONTACT "${ZMOUNT_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "FUSE filesystem that shows .xz, .gz and .zst files decompressed, with random access")
set(CPACK_PACKAGE_DESCRIPTION
    "zmount mounts a directory read-only and shows every x.xz, x.gz and x.zst
in it as the plain file x, at its exact uncompressed size and readable at
any offset, so unmodified tools (grep, tail, dd, tar, sqlite3) work on
compressed logs and archives.  xz files are read Block by Block through
their own Index, zstd files frame by frame; gzip files get a checkpoint
index that is verified, saved and reused.  Decoded data lives in one
bounded LRU cache; nothing is written to disk.  zmount-cat, zmount-info
and zmount-index use the same reader without FUSE; zmount-stat shows a
mount's cache counters.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build/" "__pycache__")

# Debian
set(CPACK_DEBIAN_PACKAGE_NAME zmount)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # zmount_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ZMOUNT_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# fuse3 brings fusermount3 (unmounting as a user) and mount.fuse3, the
# helper that `mount -t fuse.zmount` and fstab lines go through.  libcurl4 is
# loaded at the first s3:// use (source/s3.c, dlopen), so dpkg-shlibdeps does
# not see it: 7.85 for CURLOPT_PROTOCOLS_STR.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3, libcurl4 (>= 7.85.0)")
find_program(ZMOUNT_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(ZMOUNT_DPKG_SHLIBDEPS)
  # Adds libc6, libfuse3-3, libgcc-s1, liblzma5, libzstd1 and zlib1g, with
  # the versions the build used.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "dpkg-shlibdeps not found (package dpkg-dev): listing shared library packages by hand")
  # What dpkg-shlibdeps computes on Debian 12.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "fuse3, libc6 (>= 2.34), libcurl4 (>= 7.85.0), libfuse3-3 (>= 3.12.0), libgcc-s1 (>= 3.0), liblzma5 (>= 5.4.0), libzstd1 (>= 1.5.2), zlib1g (>= 1:1.2.3.4)")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "attr, xz-utils, gzip, zstd")

include(CPack)

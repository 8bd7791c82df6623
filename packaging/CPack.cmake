# CPack settings: `cpack -G DEB` in the build directory makes
# zmount_<version>_<arch>.deb from what `cmake --install` installs
# (binaries in /usr/bin, man pages in /usr/share/man/man1).
# Included from the top-level CMakeLists.txt, after every install() rule.
include(GNUInstallDirs)

set(CPACK_PACKAGE_NAME zmount)
set(CPACK_PACKAGE_VENDOR "zmount developers")
set(CPACK_PACKAGE_CONTACT "zmount developers <zmount@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "FUSE filesystem that shows .xz and .gz files decompressed, with random access")
set(CPACK_PACKAGE_DESCRIPTION
    "zmount mounts a directory read-only and shows every x.xz and x.gz in it
as the plain file x, at its exact uncompressed size and readable at any
offset, so unmodified tools (grep, tail, dd, tar, sqlite3) work on
compressed logs and archives.  xz files are read Block by Block through
their own Index; gzip files get a checkpoint index that is verified, saved
and reused.  Decoded data lives in one bounded LRU cache; nothing is
written to disk.  zmount-cat, zmount-info and zmount-index use the same
reader without FUSE.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build/" "__pycache__")

# Debian
set(CPACK_DEBIAN_PACKAGE_NAME zmount)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # zmount_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "zmount developers <zmount@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# fuse3 brings fusermount3 (unmounting as a user) and mount.fuse3, the
# helper that `mount -t fuse.zmount` and fstab lines go through.
set(CPACK_DEBIAN_PACKAGE_DEPENDS fuse3)
find_program(ZMOUNT_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(ZMOUNT_DPKG_SHLIBDEPS)
  # Adds libc6, libfuse3-3, libgcc-s1, liblzma5 and zlib1g, with the versions
  # the build used.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "dpkg-shlibdeps not found (package dpkg-dev): listing shared library packages by hand")
  # What dpkg-shlibdeps computes on Debian 12.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "fuse3, libc6 (>= 2.34), libfuse3-3 (>= 3.12.0), libgcc-s1 (>= 3.0), liblzma5 (>= 5.4.0), zlib1g (>= 1:1.2.3.4)")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "attr, xz-utils, gzip")

include(CPack)

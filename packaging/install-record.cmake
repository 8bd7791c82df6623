# The install record: what `cmake --install` put where, for the uninstall
# target (packaging/uninstall.cmake).  Included from the top-level
# CMakeLists.txt twice: with ZMOUNT_RECORD_STEP "begin" before any install()
# rule, and "end" after the last one, so that their install(CODE) run first
# and last (policy CMP0082: install rules run in the order they are given).
#
# Why not build/install_manifest.txt: `cpack` runs the same install rules
# into its staging directory and rewrites that file with /usr/... paths, so
# an uninstall that reads it removes nothing it should, and with the .deb
# installed would remove that package's files behind dpkg's back.  cpack
# runs the rules inside its own process, `cmake --install` and `make
# install` in script mode (cmake -P), which sets CMAKE_SCRIPT_MODE_FILE:
# only those installs are recorded.
#
# The record, ${ZMOUNT_INSTALL_RECORD}, gets one line per path, appended by
# each install (whatever its --prefix or DESTDIR):
#   file PATH   a file this install wrote
#   dir PATH    a directory that did not exist before this install
include_guard(DIRECTORY)
include(GNUInstallDirs)

set(ZMOUNT_INSTALL_RECORD ${CMAKE_BINARY_DIR}/zmount-install-record.txt)

# Every directory an install() rule of ours writes into, relative to the
# prefix, with its parents.  A directory missing here is never recorded, so
# never removed: a new DESTINATION belongs in this list.
set(zmount_dest_dirs ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_MANDIR}/man1
    ${CMAKE_INSTALL_DOCDIR}/doc/results)
set(ZMOUNT_INSTALL_DIRS)
foreach(d ${zmount_dest_dirs})
  while(d AND NOT IS_ABSOLUTE "${d}" AND NOT d STREQUAL ".")
    list(APPEND ZMOUNT_INSTALL_DIRS ${d})
    get_filename_component(d "${d}" DIRECTORY)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES ZMOUNT_INSTALL_DIRS)

# Before the first rule: which of those directories are missing.  Inside the
# install script, so the variables are the install's (prefix, DESTDIR).
install(CODE "
set(zmount_record_dirs \"${ZMOUNT_INSTALL_DIRS}\")
set(zmount_missing_dirs)
if(DEFINED CMAKE_SCRIPT_MODE_FILE)
  foreach(d \${zmount_record_dirs})
    if(NOT EXISTS \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${d}\")
      list(APPEND zmount_missing_dirs \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${d}\")
    endif()
  endforeach()
endif()
")

# The end of the install record (packaging/install-record.cmake): included
# from the top-level CMakeLists.txt after every install() rule, so that this
# install(CODE) runs last and CMAKE_INSTALL_MANIFEST_FILES holds every file
# this install wrote.
install(CODE "
if(DEFINED CMAKE_SCRIPT_MODE_FILE)
  set(zmount_lines)
  foreach(f \${CMAKE_INSTALL_MANIFEST_FILES})
    string(APPEND zmount_lines \"file \${f}\\n\")
  endforeach()
  foreach(d \${zmount_missing_dirs})
    if(IS_DIRECTORY \"\${d}\")
      string(APPEND zmount_lines \"dir \${d}\\n\")
    endif()
  endforeach()
  file(APPEND \"${ZMOUNT_INSTALL_RECORD}\" \"\${zmount_lines}\")
  message(STATUS \"Recorded for `cmake --build ${CMAKE_BINARY_DIR} --target uninstall`: ${ZMOUNT_INSTALL_RECORD}\")
endif()
")

configure_file(${PROJECT_SOURCE_DIR}/packaging/uninstall.cmake.in
               ${CMAKE_BINARY_DIR}/zmount-uninstall.cmake @ONLY)
add_custom_target(uninstall
                  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_BINARY_DIR}/zmount-uninstall.cmake
                  COMMENT "Removing what cmake --install recorded in ${ZMOUNT_INSTALL_RECORD}"
                  VERBATIM)

# docs_generated: the man pages (build/man/oppx.1, oppxd.1) and the completion scripts
# (build/completions/oppx.bash, _oppx), written by the built programs themselves. Part of the
# full build; the quick one (`--target oppx oppxd`) leaves it out. Runs four commands, no compile.
set(OPPX_GENERATED_DOCS
  ${CMAKE_BINARY_DIR}/man/oppx.1 ${CMAKE_BINARY_DIR}/man/oppxd.1
  ${CMAKE_BINARY_DIR}/completions/oppx.bash ${CMAKE_BINARY_DIR}/completions/_oppx)
add_custom_command(
  OUTPUT ${OPPX_GENERATED_DOCS}
  # In a sanitizer build only the text matters here; leaks at exit are the tests' to report.
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          ${CMAKE_COMMAND} -DOPPX=$<TARGET_FILE:oppx> -DOPPXD=$<TARGET_FILE:oppxd> -DOUT=${CMAKE_BINARY_DIR}
          -P ${CMAKE_SOURCE_DIR}/cmake/generate_docs.cmake
  DEPENDS oppx oppxd ${CMAKE_SOURCE_DIR}/cmake/generate_docs.cmake
  COMMENT "Writing the man pages and completion scripts" VERBATIM)
add_custom_target(docs_generated ALL DEPENDS ${OPPX_GENERATED_DOCS})

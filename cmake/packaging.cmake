# What `cmake --install` puts where, and the .deb that CPack makes of it:
#   cmake --build build && cpack -G DEB --config build/CPackConfig.cmake
# Paths follow GNUInstallDirs under CMAKE_INSTALL_PREFIX (the .deb: /usr). oppx starts the oppxd
# beside it (cli/daemon_client.cpp, find_oppxd), so both go to bin/.
include(GNUInstallDirs)

install(TARGETS oppx oppxd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/man/oppx.1 ${CMAKE_BINARY_DIR}/man/oppxd.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_BINARY_DIR}/completions/oppx.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME oppx)
install(FILES ${CMAKE_BINARY_DIR}/completions/_oppx DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

# The systemd user units of packaging/systemd (whichever exist when installing), with ExecStart
# pointed at the installed oppxd: the files in the tree name ~/.local/bin, where a user copies
# them by hand. Done at install time, where CMAKE_INSTALL_PREFIX is the package's (/usr under
# CPack, which sets it with DESTDIR: CPACK_SET_DESTDIR below). They go where the systemd user
# manager looks: lib/systemd/user under /usr and /usr/local; under any other prefix (~/.local)
# share/systemd/user, which it searches as $XDG_DATA_HOME/systemd/user.
set(oppx_install_extras [[
  file(GLOB units "@OPPX_SOURCE@/packaging/systemd/*.service" "@OPPX_SOURCE@/packaging/systemd/*.socket")
  if(CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?/?$")
    set(unit_dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/user")
  else()
    set(unit_dir "${CMAKE_INSTALL_PREFIX}/@OPPX_DATADIR@/systemd/user")
  endif()
  foreach(unit IN LISTS units)
    get_filename_component(unit_name ${unit} NAME)
    file(READ ${unit} text)
    string(REGEX REPLACE "ExecStart=[^ \n]*oppxd" "ExecStart=${CMAKE_INSTALL_PREFIX}/@OPPX_BINDIR@/oppxd" text "${text}")
    file(WRITE "@OPPX_BINARY@/systemd/${unit_name}" "${text}")
    file(INSTALL "@OPPX_BINARY@/systemd/${unit_name}" DESTINATION "${unit_dir}")
  endforeach()
  # The Neovim plugin, when the tree has it.
  if(IS_DIRECTORY "@OPPX_SOURCE@/editors/nvim")
    file(INSTALL "@OPPX_SOURCE@/editors/nvim" DESTINATION "${CMAKE_INSTALL_PREFIX}/@OPPX_DATADIR@/oppx")
  endif()
]])
set(OPPX_SOURCE ${CMAKE_SOURCE_DIR})
set(OPPX_BINARY ${CMAKE_BINARY_DIR})
set(OPPX_BINDIR ${CMAKE_INSTALL_BINDIR})
set(OPPX_DATADIR ${CMAKE_INSTALL_DATADIR})
string(CONFIGURE "${oppx_install_extras}" oppx_install_extras @ONLY)
install(CODE "${oppx_install_extras}")

set(CPACK_PACKAGE_NAME oppx)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "oppx")
set(CPACK_PACKAGE_CONTACT "oppx maintainers <maintainers@oppx.invalid>" CACHE STRING "The .deb's Maintainer field")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "coding-agent client with a per-user daemon that keeps MCP connectors warm")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "oppxd is a per-user daemon that runs MCP servers (connectors), permission rules, sessions and\n"
  "the agent; oppx is its command-line client and terminal chat, for any OpenAI-compatible model\n"
  "server. Node.js runs the npm MCP servers and Playwright's browser server; bubblewrap sandboxes\n"
  "the agent's commands.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)  # the RelWithDebInfo programs are mostly debug information
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Boost, fmt, OpenSSL and libstdc++ are linked in (OPPX_STATIC_RUNTIME): libc is all it loads.
# A build that links them shared (the sanitizer presets) asks dpkg-shlibdeps for the rest.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36)")
if(NOT OPPX_STATIC_RUNTIME)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "nodejs, npm, chromium, bubblewrap")
include(CPack)

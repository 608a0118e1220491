// What the browser's tests share (tests/daemon/browser_test.cpp, the chat's browser tests): the
// test HOME's engine folder linked to the pinned server the bootstrap installed, a small page
// served on 127.0.0.1 (browser_page.js: a counter button and a console error), and the process
// tree below a pid, read from /proc, to check that no Chromium outlives its session.
#pragma once

#include "tests/support/harness.h"

#include <set>
#include <string>

#include <sys/types.h>

namespace oppx::test {

// $XDG_DATA_HOME/oppx/playwright of the test's HOME -> the bootstrap's build/playwright.
void link_engine(const TempHome& home);

// Every process below `root` (by parent pid).
std::set<pid_t> descendants(pid_t root);
bool is_chromium(pid_t pid);
bool all_gone(const std::set<pid_t>& pids);

// browser_page.js, started; `url` is empty when it did not start (see server.err()).
struct Page {
  Process server{{"node", OPPX_TEST_SUPPORT "/browser_page.js"}};
  std::string url;
  Page();
};

}  // namespace oppx::test

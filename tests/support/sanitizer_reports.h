// Test support: where the sanitizer runtimes of every process a test starts (oppxd, oppx, the fake
// servers) write their reports, and the check that finds them. A detached daemon has no stderr, so
// without this its reports and its leaks at exit would never be seen.
#pragma once

#include <string>

namespace oppx::test {

// Points ASAN/UBSAN/TSAN/LSAN_OPTIONS of this process's environment (seen by every child started
// afterwards, not by this process) at `dir`/report.<pid>, keeping the options already given.
void send_sanitizer_reports_to(const std::string& dir);

// The reports in `dir`: the text of every file there that holds a sanitizer report ("ERROR:
// AddressSanitizer", "runtime error:", "LeakSanitizer", "ThreadSanitizer"), each after its name;
// empty when there is none.
std::string sanitizer_reports(const std::string& dir);

}  // namespace oppx::test

// Test support: sanitizer reports of the test's child processes go to files, read back here.
#include "tests/support/sanitizer_reports.h"

#include <array>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string_view>

namespace oppx::test {

void send_sanitizer_reports_to(const std::string& dir) {
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS"}) {
    // What the caller (ctest's preset) set stays, except an earlier test's path.
    std::string value;
    std::stringstream before(std::getenv(name) ? std::getenv(name) : "");
    for (std::string option; std::getline(before, option, ':');) {
      if (!option.empty() && option.rfind("log_path=", 0) != 0) value += option + ":";
    }
    value += "log_path=" + dir + "/report";
    ::setenv(name, value.c_str(), 1);
  }
}

std::string sanitizer_reports(const std::string& dir) {
  static constexpr std::array<std::string_view, 4> kMarkers{"ERROR: AddressSanitizer",
                                                            "runtime error:", "LeakSanitizer", "ThreadSanitizer"};
  std::string found;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return found;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string path = dir + "/" + e->d_name;
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    for (auto marker : kMarkers) {
      if (text.find(marker) != std::string::npos) {
        found += "--- " + path + "\n" + text + "\n";
        break;
      }
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace oppx::test

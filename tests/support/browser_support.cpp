// The browser tests' shared helpers (browser_support.h).
#include "tests/support/browser_support.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {

// The engine folder of the test's HOME points at the pinned server the bootstrap installed.
void link_engine(const TempHome& home) {
  std::string data = home.root() + "/data";
  ::mkdir(data.c_str(), 0700);
  ::mkdir((data + "/oppx").c_str(), 0700);
  ASSERT_EQ(::symlink(OPPX_PLAYWRIGHT_DIR, (data + "/oppx/playwright").c_str()), 0);
}

// Every process below `root` (by parent pid), read from /proc.
std::set<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      int ppid = 0;
      char state = 0;
      if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2) children.emplace(ppid, pid);
    }
    ::closedir(d);
  }
  std::set<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      if (out.insert(it->second).second) todo.push_back(it->second);
    }
  }
  return out;
}

bool is_chromium(pid_t pid) {
  std::string cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  return cmd.find("chrom") != std::string::npos;
}

bool all_gone(const std::set<pid_t>& pids) {
  for (pid_t p : pids) {
    if (process_alive(p)) return false;
  }
  return true;
}

Page::Page() {
  if (!server.wait_for_stdout("\n", 10s)) return;
  url = "http://127.0.0.1:" + server.out().substr(5, server.out().find('\n') - 5) + "/";
}

}  // namespace oppx::test

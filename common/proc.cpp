// rss_kib: parses the VmRSS line of /proc/<pid>/status.
#include "common/proc.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace oppx {

long rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace oppx

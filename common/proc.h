// What /proc says about a process: its resident memory. Used by daemon/status (its own RSS),
// the benchmarks and the tests.
#pragma once

#include <sys/types.h>

namespace oppx {

// VmRSS of `pid` in KiB, or -1 when it cannot be read.
long rss_kib(pid_t pid);

}  // namespace oppx

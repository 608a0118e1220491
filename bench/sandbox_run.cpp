// bench/sandbox_run: what the sandbox costs the agent's `run`: `true` through run_contained in
// workspace-write (bubblewrap, its namespaces and mounts) beside the same command as a plain
// child (the baseline, measured in the same run), and the ratio. Prints figures; asserts nothing.
//   usage: sandbox_run [--runs N]
#include "bench/bench_support.h"
#include "chat/sandbox.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

oppx::bench::Stats time_runs(const oppx::chat::RunSpec& spec, int runs) {
  std::vector<double> ms;
  int failures = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    oppx::chat::RunOutcome o = oppx::chat::run_contained(spec);
    auto t1 = std::chrono::steady_clock::now();
    if (o.end != oppx::chat::RunOutcome::End::kExited || o.status != 0) {
      ++failures;
      continue;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return oppx::bench::summarize(std::move(ms), failures);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
  }
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const auto& support = oppx::chat::sandbox_support();
  oppx::chat::RunSpec spec;
  spec.argv = {"/bin/sh", "-c", "true"};
  spec.cwd = home.root();
  spec.limit = std::chrono::seconds(10);
  spec.policy.workspace = home.root();
  spec.use_bwrap = false;
  time_runs(spec, 5);  // warm the page cache
  oppx::bench::Stats plain = time_runs(spec, runs);
  fmt::print("sandbox_run: the agent's run of `true` ({} runs each)\n", runs);
  fmt::print("  plain child           median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms\n", plain.median, plain.p90,
             plain.min);
  oppx::bench::report({"sandbox_run", "run of true, plain child (no sandbox)", "ms", plain, "", 0, ""});
  if (!support.available) {
    fmt::print("  sandboxed             not available: {}\n", support.reason);
    return 0;
  }
  spec.use_bwrap = true;
  time_runs(spec, 5);
  oppx::bench::Stats boxed = time_runs(spec, runs);
  fmt::print("  workspace-write       median {:7.2f} ms   p90 {:7.2f} ms   min {:7.2f} ms   failures {}\n",
             boxed.median, boxed.p90, boxed.min, boxed.failures);
  fmt::print("  ratio sandboxed / plain {:.2f}\n", boxed.median / plain.median);
  oppx::bench::report({"sandbox_run", "run of true, workspace-write sandbox", "ms", boxed, "plain child", plain.median,
                       "the sandbox's cost per command"});
  return 0;
}

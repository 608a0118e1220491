// The CLI's face of the browser's install: common/playwright.h's, its lines on stderr.
#include "cli/browser.h"

#include "common/playwright.h"

#include <fmt/format.h>

#include <cstdio>

namespace oppx::cli {

namespace {

void to_stderr(std::string_view line) {
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

}  // namespace

int node_major() { return playwright::node_major(); }

boost::system::result<void, std::string> install_browser(bool update) { return playwright::install(update, to_stderr); }

std::string prepare_browser() { return playwright::prepare(to_stderr); }

}  // namespace oppx::cli

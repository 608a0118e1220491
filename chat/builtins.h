// The agent's built-in actions besides reply: read a file, grep (ripgrep when installed, else a
// search of our own), run a shell command. Each runs in the session's working folder and gives
// the text the model sees, cut like a tool result. Blocking, with time limits.
#pragma once

#include <chrono>
#include <string>

namespace oppx::chat {

struct BuiltinResult {
  bool ok = false;
  std::string text;  // the output, or the error in words
};

// A file, relative to `cwd` (or absolute): its text, at most `cap` characters with a marker.
BuiltinResult read_action(const std::string& cwd, const std::string& path, std::size_t cap);

// Lines matching `pattern` (an extended regular expression) under `path` (default: `cwd`), as
// `file:line:text`, at most 200 of them; .git, node_modules and binary files are skipped.
BuiltinResult grep_action(const std::string& cwd, const std::string& pattern, const std::string& path, std::size_t cap);

// `/bin/sh -c command` in `cwd`, stdin from /dev/null, stdout and stderr together; its process
// group is killed when `limit` passes. The text ends with the exit status when it is not 0.
BuiltinResult run_action(const std::string& cwd, const std::string& command, std::chrono::milliseconds limit,
                         std::size_t cap);

}  // namespace oppx::chat

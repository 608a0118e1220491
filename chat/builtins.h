// The agent's built-in actions besides reply: read a file, grep (ripgrep when installed, else a
// search of our own), run a shell command. Each runs in the session's working folder and gives
// the text the model sees, cut like a tool result. Blocking, with time limits.
#pragma once

#include "chat/sandbox.h"

#include <chrono>
#include <string>

namespace oppx::chat {

struct BuiltinResult {
  bool ok = false;
  std::string text;        // the output, or the error in words
  bool sandboxed = false;  // run: it ran confined by the sandbox policy (chat/sandbox.h)
};

// A file, relative to `cwd` (or absolute): its text, at most `cap` characters with a marker.
BuiltinResult read_action(const std::string& cwd, const std::string& path, std::size_t cap);

// Lines matching `pattern` (an extended regular expression) under `path` (default: `cwd`), as
// `file:line:text`, at most 200 of them; .git, node_modules and binary files are skipped.
BuiltinResult grep_action(const std::string& cwd, const std::string& pattern, const std::string& path, std::size_t cap);

// `/bin/sh -c command` in `cwd` through run_contained (chat/sandbox.h) under `policy` (its
// workspace defaults to `cwd`), stdin from /dev/null, stdout and stderr together. At `limit` or on
// `control`'s cancel the command and everything it started are ended. The text ends with the exit
// status when it is not 0, or with why it was stopped.
BuiltinResult run_action(const std::string& cwd, const std::string& command, std::chrono::milliseconds limit,
                         std::size_t cap, SandboxPolicy policy = {}, const RunControl* control = nullptr);

}  // namespace oppx::chat

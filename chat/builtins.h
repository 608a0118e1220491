// The agent's built-in actions besides reply: read a file, grep (ripgrep when installed, else a
// search of our own), run a shell command. Each runs in the session's working folder (read and
// grep confined to its workspace) and gives the text the model sees, cut like a tool result.
// Blocking, with time limits.
#pragma once

#include "chat/workspace.h"

#include "chat/sandbox.h"

#include <chrono>
#include <string>

namespace oppx::chat {

struct BuiltinResult {
  bool ok = false;
  std::string text;  // the output, or the error in words
  // read and grep: what was read looks secret (looks_sensitive: a key, a .env, a token).
  bool sensitive = false;
  std::string resolved;    // read and grep: the real path asked for (links followed)
  bool outside = false;    // read and grep: that path is outside the workspace (read only when allowed)
  bool sandboxed = false;  // run: it ran confined by the sandbox policy (chat/sandbox.h)
};

// A file or folder (a list of its entries) of the workspace, relative to its folder, absolute or
// ~/…: its text, at most `cap` characters with a marker. Outside the workspace only when
// `outside_allowed` (the user said yes; else it fails with `outside` set); never a denied place
// (workspace.h); regular files only, at most 4 MiB read.
// `offset`: the first character shown (a long file is read a part at a time; the marker says
// where the next part starts).
BuiltinResult read_action(const Workspace& ws, const std::string& path, std::size_t cap, bool outside_allowed = false,
                          std::size_t offset = 0);
// A file in which oppxd kept the whole of a tool result it cut (tools/call's text_file), read a
// part at a time as read_action does: only a regular file, never through a link. The caller lets
// the model read only the files its own calls were given.
BuiltinResult read_kept_result(const std::string& path, std::size_t cap, std::size_t offset);

// Lines matching `pattern` (an extended regular expression) under `path` (default: the session's
// folder), confined as read is, as `file:line:text`, at most 200 of them; .git, node_modules,
// binary files, links and anything not a regular file are skipped.
BuiltinResult grep_action(const Workspace& ws, const std::string& pattern, const std::string& path, std::size_t cap,
                          bool outside_allowed = false);

// `/bin/sh -c command` in `cwd` through run_contained (chat/sandbox.h) under `policy` (its
// workspace defaults to `cwd`), stdin from /dev/null, stdout and stderr together. At `limit` or on
// `control`'s cancel the command and everything it started are ended. The text ends with the exit
// status when it is not 0, or with why it was stopped.
BuiltinResult run_action(const std::string& cwd, const std::string& command, std::chrono::milliseconds limit,
                         std::size_t cap, SandboxPolicy policy = {}, const RunControl* control = nullptr);

}  // namespace oppx::chat

// Running `oppx <args>` (this same program) from the chat, with the terminal as it is: the
// slash commands that are the CLI's own commands.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace oppx::cli {

// Starts it; its pid, or -1. With `out`, its stdout is a pipe whose reading end `out` gets (its
// stderr stays the terminal's).
pid_t spawn_self(const std::string& self, std::vector<std::string> args, int* out = nullptr);
int exit_status(int status);  // of waitpid: the exit code, or 128 + the signal
// Runs it and waits; its exit status. With `output`, its stdout is read into it.
int run_self(const std::string& self, std::vector<std::string> args, std::string* output = nullptr);

// Runs it while reading keys (the terminal raw): Ctrl-C ends it; other keys go to `typed`.
enum class SelfRun { kEnded, kInterrupted, kNotStarted };
SelfRun run_self_interruptible(const std::string& self, const std::vector<std::string>& args,
                               const std::function<void(std::string)>& typed);

}  // namespace oppx::cli

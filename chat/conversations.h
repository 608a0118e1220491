// Conversations saved per working folder in user state
// ($XDG_STATE_HOME/oppx/conversations/<folder>-<hash>/<time>.json, folders 0700, files 0600,
// written atomically), so that `oppx -p -c` (and the chat's `-c`) continues the last one there.
#pragma once

#include <boost/json/array.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace oppx::chat {

struct Conversation {
  std::string path;  // its file; empty for a new one until it is saved
  std::string cwd;
  boost::json::array messages;
};

// The folder holding the conversations of `cwd`.
std::string conversations_dir(const std::string& cwd);

// The newest conversation of `cwd`; an error when there is none or it cannot be read.
boost::system::result<Conversation, std::string> last_conversation(const std::string& cwd);

// One conversation file (for --resume).
boost::system::result<Conversation, std::string> load_conversation(const std::string& path, const std::string& cwd);

// One saved conversation, as a list of them shows it.
struct ConversationSummary {
  std::string path;
  std::string first;  // the first message, its first line cut at 80 bytes
  std::size_t messages = 0;
};
// The conversations of `cwd`, the newest first, at most `limit`; none when there are none.
std::vector<ConversationSummary> list_conversations(const std::string& cwd, std::size_t limit);

// Writes it (a new file when `path` is empty, then set); "" or why not. The first new one a
// process saves first prunes those older than retention() (common/retention.h).
std::string save_conversation(Conversation& c);

// Removes the conversations of every folder older than `age`, and the folders left empty; how
// many conversations went.
int prune_conversations(std::chrono::hours age);

// Removes all the conversations of `cwd` (`oppx chat --forget`): how many, or why not.
boost::system::result<int, std::string> forget_conversations(const std::string& cwd);

}  // namespace oppx::chat

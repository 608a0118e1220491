// One JSON file per conversation: {"cwd", "updated", "messages"}. The newest by name (a
// sortable UTC time) is the last one.
#include "chat/conversations.h"

#include "chat/agent.h"

#include "common/fs.h"
#include "common/paths.h"
#include "common/retention.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <unistd.h>

namespace oppx::chat {

namespace json = boost::json;

std::string conversations_dir(const std::string& cwd) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: a short stable name for the folder
  for (unsigned char c : cwd) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  std::string base = basename_of(cwd);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  if (base.empty()) base = "root";
  return fmt::format("{}/conversations/{}-{:016x}", paths::state_dir(), base.substr(0, 40), h);
}

boost::system::result<Conversation, std::string> last_conversation(const std::string& cwd) {
  std::string dir = conversations_dir(cwd);
  std::error_code ec;
  std::string newest;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() > 5 && name.substr(name.size() - 5) == ".json" && name > newest)
      newest = name;
  }
  if (newest.empty()) return {boost::system::in_place_error, "there is no conversation to continue in " + cwd};
  return load_conversation(dir + "/" + newest, cwd);
}

boost::system::result<Conversation, std::string> load_conversation(const std::string& path, const std::string& cwd) {
  Conversation c{path, cwd, {}};
  std::ifstream f(c.path);
  std::stringstream ss;
  ss << f.rdbuf();
  boost::system::error_code jec;
  json::value v = json::parse(ss.str(), jec);
  if (jec || !v.is_object())
    return {boost::system::in_place_error, "the last conversation (" + c.path + ") is not readable JSON"};
  if (const json::value* m = v.as_object().if_contains("messages"); m && m->is_array()) c.messages = m->as_array();
  return c;
}

std::vector<ConversationSummary> list_conversations(const std::string& cwd, std::size_t limit) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(conversations_dir(cwd), ec)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() > 5 && name.substr(name.size() - 5) == ".json")
      files.push_back(e.path().string());
  }
  std::sort(files.rbegin(), files.rend());  // named by the time they began
  if (files.size() > limit) files.resize(limit);
  std::vector<ConversationSummary> out;
  for (const auto& f : files) {
    ConversationSummary s{f, "(empty)", 0};
    if (auto c = load_conversation(f, cwd)) {
      s.messages = c->messages.size();
      const json::value* first = c->messages.empty() ? nullptr : c->messages[0].as_object().if_contains("content");
      if (first && first->is_string()) {
        std::string_view text = first->get_string();
        text = text.substr(0, text.find('\n'));
        std::size_t cut = 80;
        while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole characters
        s.first = text.size() > 80 ? std::string(text.substr(0, cut)) + "…" : std::string(text);
      }
    } else {
      s.first = "(not readable)";
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string save_conversation(Conversation& c) {
  std::string dir = conversations_dir(c.cwd);
  if (c.path.empty()) {
    static std::once_flag pruned;
    std::call_once(pruned, [] { prune_conversations(retention()); });
  }
  if (auto ok = ensure_private_dir(dir); !ok) return ok.error();
  auto now = std::chrono::system_clock::now();
  if (c.path.empty()) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
    c.path = fmt::format("{}/{:%Y%m%dT%H%M%S}.{:06d}-{}.json", dir, std::chrono::floor<std::chrono::seconds>(now), us,
                         ::getpid());
  }
  json::object o{{"cwd", c.cwd},
                 {"updated", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(now))},
                 {"messages", c.messages}};
  auto w = atomic_write(c.path, proto::json_text(o), 0600);
  return w ? std::string() : w.error();
}

int prune_conversations(std::chrono::hours age) {
  if (age.count() <= 0) return 0;
  int removed = 0;
  std::error_code ec;
  std::string all = paths::state_dir() + "/conversations";
  for (std::filesystem::directory_iterator it(all, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_symlink() || !it->is_directory()) continue;
    int n = prune_older_than(it->path().string(), age);
    removed += n;
    std::error_code rm;
    if (n > 0) std::filesystem::remove(it->path(), rm);  // only when it is empty now
  }
  return removed;
}

boost::system::result<int, std::string> forget_conversations(const std::string& cwd) {
  std::string dir = conversations_dir(cwd);
  std::error_code ec;
  int removed = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") ++removed;
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return {boost::system::in_place_error, fmt::format("cannot read {}: {}", dir, ec.message())};
  std::filesystem::remove_all(dir, ec);
  if (ec) return {boost::system::in_place_error, fmt::format("cannot remove {}: {}", dir, ec.message())};
  return removed;
}

// The agent's conversation as it is saved and restored (`-c`): its messages with their marks.
json::array Agent::conversation() const {
  json::array a;
  for (const auto& m : messages_) {
    json::object o{{"role", m.role}, {"content", m.content}};
    if (m.result) o["result"] = true;
    if (m.shortened) o["shortened"] = true;
    if (!m.exposed.empty()) o["exposed"] = m.exposed;
    a.push_back(std::move(o));
  }
  return a;
}

void Agent::restore(const json::array& messages) {
  messages_.clear();
  for (const auto& v : messages) {
    if (!v.is_object()) continue;
    const json::object& o = v.as_object();
    auto str = [&o](std::string_view k) {
      const json::value* v = o.if_contains(k);
      return v && v->is_string() ? std::string(v->as_string()) : std::string();
    };
    std::string role = str("role");
    if (role != "user" && role != "assistant") continue;
    auto flag = [&](std::string_view k) {
      const json::value* b = o.if_contains(k);
      return b && b->is_bool() && b->as_bool();
    };
    messages_.push_back({role, str("content"), flag("result"), flag("shortened"), str("exposed")});
  }
}

}  // namespace oppx::chat

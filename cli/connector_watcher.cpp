#include "cli/connector_watcher.h"

#include "cli/daemon_client.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace oppx::cli {

namespace json = boost::json;

ConnectorWatcher::ConnectorWatcher(const std::string& socket) {
  auto c = connect_daemon(socket, Start::kNever);
  if (!c) return;
  client_.emplace(std::move(c->client));
  auto r = client_->call(proto::kMcpSubscribe, json::object{}, kCallTimeout);
  if (!r) return;
  if (auto list = proto::decode<proto::McpListResult>(*r)) {
    for (const auto& e : list->connectors) state_[e.name] = e.state;
  }
  thread_ = std::thread([this] { run(); });
}

ConnectorWatcher::~ConnectorWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string ConnectorWatcher::Notice::shown() const {
  return down ? warning_text(text, terminal_columns()) : "  " + escape_controls(text);
}

std::vector<ConnectorWatcher::Notice> ConnectorWatcher::take() {
  std::lock_guard l(m_);
  return std::exchange(notices_, {});
}

void ConnectorWatcher::said(const std::vector<std::string>& names) {
  std::lock_guard l(m_);
  for (const auto& name : names) {
    auto queued =
        std::find_if(notices_.begin(), notices_.end(), [&](const Notice& n) { return n.name == name && !n.down; });
    if (queued != notices_.end()) {
      notices_.erase(queued);
    } else {
      said_.insert(name);
    }
  }
}

void ConnectorWatcher::run() {
  while (!stop_) {
    auto line = client_->read_line(std::chrono::milliseconds(200));
    if (!line) {
      if (line.error() == SyncClient::ReadFailure::kTimeout) continue;
      return;  // the daemon went away; the chat's next request says so
    }
    boost::system::error_code ec;
    json::value v = json::parse(*line, ec);
    const json::object* o = ec ? nullptr : v.if_object();
    const json::value* method = o ? o->if_contains("method") : nullptr;
    if (!method || !method->is_string() || method->get_string() != proto::kMcpChanged || !o->contains("params"))
      continue;
    if (auto entry = proto::decode<proto::ConnectorEntry>(o->at("params"))) note(*entry);
  }
}

void ConnectorWatcher::note(const proto::ConnectorEntry& c) {
  std::string was = state_[c.name];
  const std::string& name = c.name;
  const std::string& state = c.state;
  state_[name] = state;
  std::string text;
  bool down = state == "failed" || state == "stopped" || state == "login";
  if (down) {
    if (was == state) return;
    text = fmt::format("{} {}: {}", name, state == "login" ? "needs a login" : "is down", c.reason);
    int i = 0;
    for (const auto& step : c.steps) text += fmt::format("\n    {}. {}", ++i, step);
  } else if (state == "running" && was != "running") {
    text =
        fmt::format("{} is {} ({})", name, was == "failed" || was == "stopped" || was == "login" ? "back" : "running",
                    counted(c.tool_count, "tool", "tools"));
  } else if (state == "running" && c.tools_changed.value_or(false)) {
    text = fmt::format("{} changed its tool list ({})", name, counted(c.tool_count, "tool", "tools"));
  } else if (state == "removed") {
    text = fmt::format("{} was removed", name);
  } else {
    return;
  }
  changed_ = true;
  std::lock_guard l(m_);
  if (said_.erase(name) == 0) notices_.push_back({name, down, text});
}

}  // namespace oppx::cli

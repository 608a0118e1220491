// OfferCompletion: the word's kind, the connector it names, and the daemon's lists.
#include "cli/chat_complete.h"

#include "cli/daemon_client.h"
#include "proto/resources_api.h"

#include <boost/json.hpp>

#include <chrono>

namespace oppx::cli {

namespace json = boost::json;

const std::vector<std::string>& OfferCompletion::offers(bool prompts, const std::string& connector) {
  std::string key = (prompts ? "p:" : "r:") + connector;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::vector<std::string>& out = cache_[key];
  auto conn = connect_daemon(socket_, Start::kNever);
  if (!conn) return out;
  auto r = conn->client.call(prompts ? proto::kMcpPrompts : proto::kMcpResources,
                             json::value_from(proto::McpOffersParams{connector, ""}), std::chrono::seconds(1));
  if (!r) return out;
  auto field = [](const json::value& v, std::string_view k) {
    const json::value* s = v.is_object() ? v.as_object().if_contains(k) : nullptr;
    return s && s->is_string() ? std::string(s->as_string()) : std::string();
  };
  if (prompts) {
    if (auto p = proto::decode<proto::McpPromptsResult>(*r))
      for (const auto& item : p->prompts) out.push_back(field(item, "name"));
  } else if (auto res = proto::decode<proto::McpResourcesResult>(*r)) {
    for (const auto& item : res->resources) out.push_back(field(item, "uri"));
  }
  std::erase(out, std::string());
  return out;
}

std::vector<std::string> OfferCompletion::complete(std::string_view before, const std::set<std::string>& connectors) {
  std::vector<std::string> out;
  auto sp = before.find_last_of(" \t\n");
  std::string word(sp == std::string_view::npos ? before : before.substr(sp + 1));
  bool prompt = !word.empty() && word[0] == '/' && sp == std::string_view::npos;
  if (word.empty() || (word[0] != '@' && !prompt)) return out;
  std::string sign(1, word[0]);
  auto colon = word.find(':');
  if (colon == std::string::npos) {
    // The connector first: "@ev" → "@everything:".
    for (const auto& c : connectors)
      if ((sign + c).rfind(word, 0) == 0) out.push_back(sign + c + ":");
    return out;
  }
  std::string connector = word.substr(1, colon - 1);
  if (!connectors.count(connector)) return out;
  std::string typed = word.substr(colon + 1);
  for (const auto& item : offers(prompt, connector))
    if (item.rfind(typed, 0) == 0) out.push_back(sign + connector + ":" + item);
  return out;
}

}  // namespace oppx::cli

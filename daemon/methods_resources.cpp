// mcp/resources, mcp/read, mcp/prompts and mcp/prompt: each a request (or a few pages of one) to
// the connector's server through ScopedConnector::request.
#include "daemon/methods_resources.h"

#include "daemon/connector_scope.h"
#include "daemon/methods_config.h"
#include "daemon/server.h"
#include "daemon/tool_result.h"

#include <boost/json.hpp>

#include <chrono>
#include <memory>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kLimit{30'000};
constexpr int kMaxPages = 20;

using SharedReply = std::shared_ptr<Reply>;

// Every page of a list (`key` of each answer, following nextCursor, at most kMaxPages); a server
// without the method (-32601) has none. Kept until the server says the list changed.
void all_pages(const ScopedConnector& c, const std::string& method, const std::string& key,
               std::function<void(boost::system::result<json::array, proto::RpcError>)> done) {
  if (const json::array* kept = c.offers(method)) return done(*kept);
  std::uint64_t epoch = c.offers_epoch();  // a change announced meanwhile: the pages read are not kept
  struct Acc {
    json::array items;
    int pages = 0;
  };
  auto acc = std::make_shared<Acc>();
  auto next = std::make_shared<std::function<void(std::string)>>();
  *next = [c, method, key, acc, next, done, epoch](std::string cursor) {
    json::value params = cursor.empty() ? json::value(json::object{}) : json::value(json::object{{"cursor", cursor}});
    c.request(method, std::move(params), kLimit, [c, method, key, acc, next, done, epoch](Connector::CallResult r) {
      if (!r) {
        *next = nullptr;  // breaks the cycle (this callback holds its own copies)
        if (r.error().code == -32601) return done(json::array{});
        return done(r.error());
      }
      const json::object* o = r->if_object();
      if (const json::value* list = o ? o->if_contains(key) : nullptr; list && list->is_array())
        for (const auto& item : list->as_array()) acc->items.push_back(item);
      const json::value* cursor = o ? o->if_contains("nextCursor") : nullptr;
      if (cursor && cursor->is_string() && !cursor->as_string().empty() && ++acc->pages < kMaxPages)
        return (*next)(std::string(cursor->as_string()));
      *next = nullptr;  // breaks the cycle
      c.keep_offers(method, acc->items, epoch);
      done(std::move(acc->items));
    });
  };
  (*next)("");
}

std::optional<ScopedConnector> found(Server& s, const std::string& name, const std::string& cwd, Client& client,
                                     Reply& reply) {
  auto c = ConnectorLookup(s, client, request_root(cwd, client)).refresh_and_find(name, Connectors::Restart::kNever);
  if (!c) reply.fail(unknown_connector(name));
  return c;
}

}  // namespace

void mcp_resources(Server& s, const proto::McpOffersParams& p, Reply reply, Client& client) {
  auto c = found(s, p.name, p.cwd, client, reply);
  if (!c) return;
  auto shared = std::make_shared<Reply>(std::move(reply));
  all_pages(*c, "resources/list", "resources", [c = *c, shared, name = p.name](auto resources) {
    if (!resources) return shared->fail(resources.error());
    all_pages(
        c, "resources/templates/list", "resourceTemplates",
        [shared, name, resources = std::move(*resources)](auto templates) mutable {
          if (!templates) return shared->fail(templates.error());
          shared->ok(json::value_from(proto::McpResourcesResult{name, std::move(resources), std::move(*templates)}));
        });
  });
}

void mcp_read(Server& s, const proto::McpReadParams& p, Reply reply, Client& client) {
  auto c = found(s, p.name, p.cwd, client, reply);
  if (!c) return;
  auto shared = std::make_shared<Reply>(std::move(reply));
  std::size_t limit = c->result_limit();
  c->request("resources/read", json::object{{"uri", p.uri}}, kLimit, [shared, p, limit](Connector::CallResult r) {
    if (!r) return shared->fail(r.error());
    std::string text;
    const json::object* o = r->if_object();
    if (const json::value* contents = o ? o->if_contains("contents") : nullptr; contents && contents->is_array()) {
      for (const auto& item : contents->as_array()) {
        if (!item.is_object()) continue;
        if (!text.empty()) text += "\n";
        const json::object& content = item.as_object();
        // A text content of the address asked for is its text alone; others say where they are from.
        const json::value* uri = content.if_contains("uri");
        bool same = uri && uri->is_string() && uri->as_string() == p.uri && content.contains("text");
        text += same && content.at("text").is_string()
                    ? std::string(content.at("text").as_string())
                    : part_text(json::object{{"type", "resource"}, {"resource", content}});
      }
    }
    std::string whole;
    std::size_t chars = cut_keeping(text, whole, limit);
    proto::McpReadResult out{p.name, p.uri, text, !whole.empty(), true};
    if (out.truncated) out.text += cut_marker(limit, chars, "");
    shared->ok(json::value_from(out));
  });
}

void mcp_prompts(Server& s, const proto::McpOffersParams& p, Reply reply, Client& client) {
  auto c = found(s, p.name, p.cwd, client, reply);
  if (!c) return;
  auto shared = std::make_shared<Reply>(std::move(reply));
  all_pages(*c, "prompts/list", "prompts", [shared, name = p.name](auto prompts) {
    if (!prompts) return shared->fail(prompts.error());
    shared->ok(json::value_from(proto::McpPromptsResult{name, std::move(*prompts)}));
  });
}

void mcp_prompt(Server& s, const proto::McpPromptParams& p, Reply reply, Client& client) {
  auto c = found(s, p.name, p.cwd, client, reply);
  if (!c) return;
  auto shared = std::make_shared<Reply>(std::move(reply));
  json::object args;
  for (const auto& [k, v] : p.arguments) args[k] = v;
  c->request("prompts/get", json::object{{"name", p.prompt}, {"arguments", std::move(args)}}, kLimit,
             [shared, p](Connector::CallResult r) {
               if (!r) return shared->fail(r.error());
               proto::McpPromptResult out{p.name, p.prompt, "", {}, true};
               const json::object* o = r->if_object();
               if (const json::value* d = o ? o->if_contains("description") : nullptr; d && d->is_string())
                 out.description = d->as_string();
               const json::value* messages = o ? o->if_contains("messages") : nullptr;
               for (const auto& m : messages && messages->is_array() ? messages->as_array() : json::array{}) {
                 const json::object* mo = m.if_object();
                 if (!mo) continue;
                 const json::value* role = mo->if_contains("role");
                 const json::value* content = mo->if_contains("content");
                 std::string text = content && content->is_object() ? part_text(content->as_object()) : "";
                 out.messages.push_back({role && role->is_string() ? std::string(role->as_string()) : "user", text});
               }
               shared->ok(json::value_from(out));
             });
}

}  // namespace oppx::daemon

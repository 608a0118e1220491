// Encoding and decoding of tools/search's params and result.
#include "proto/tool_search_api.h"

#include <boost/json/object.hpp>

namespace oppx::proto {

namespace json = boost::json;

Decoded<ToolsSearchParams> decode(const json::value& v, std::type_identity<ToolsSearchParams>) {
  FieldReader r(v, "params");
  ToolsSearchParams p;
  p.query = r.string("query", true).value_or("");
  p.context = r.string("context", false).value_or("");
  p.cwd = r.absolute_path("cwd");
  p.limit = r.integer("limit", false).value_or(kSearchLimit);
  if (p.limit < 1 || p.limit > kMaxSearchLimit) r.fail("limit", "expected 1 to 50");
  return finish(r, std::move(p));
}

Decoded<ToolsSearchHit> decode(const json::value& v, std::type_identity<ToolsSearchHit>) {
  FieldReader r(v, "result.tools[]");
  ToolsSearchHit h;
  h.connector = r.string("connector", true).value_or("");
  h.name = r.string("name", true).value_or("");
  h.line = r.string("line", false).value_or("");
  if (const json::object* o = r.object(); o && o->contains("score")) {
    boost::system::error_code ec;
    h.score = o->at("score").to_number<double>(ec);
    if (ec) r.fail("score", "expected number");
  }
  h.exact = r.boolean("exact", false).value_or(false);
  return finish(r, std::move(h));
}

Decoded<ToolsSearchResult> decode(const json::value& v, std::type_identity<ToolsSearchResult>) {
  FieldReader r(v, "result");
  ToolsSearchResult out;
  out.searched = r.integer("searched", true).value_or(0);
  out.tools = r.list<ToolsSearchHit>("tools");
  return finish(r, std::move(out));
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsSearchParams& v) {
  json::object o{{"query", v.query}, {"limit", v.limit}};
  if (!v.context.empty()) o["context"] = v.context;
  if (!v.cwd.empty()) o["cwd"] = v.cwd;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsSearchHit& v) {
  json::object o{{"connector", v.connector}, {"name", v.name}, {"line", v.line}, {"score", v.score}};
  if (v.exact) o["exact"] = true;
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const ToolsSearchResult& v) {
  json::array tools;
  for (const auto& t : v.tools) tools.push_back(json::value_from(t));
  jv = json::object{{"searched", v.searched}, {"tools", std::move(tools)}};
}

}  // namespace oppx::proto

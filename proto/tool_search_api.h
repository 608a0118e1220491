// Wire structs of tools/search (docs/protocol.md, "Tool search"): a query over the tools of the
// connectors a folder sees, answered from the lists the daemon holds (running and cached), best
// first. Decoders in proto/decode.h's form, encoders as tag_invoke for boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

inline constexpr std::int64_t kSearchLimit = 5;      // tools found when the request names no limit
inline constexpr std::int64_t kMaxSearchLimit = 50;  // the most it may name
inline constexpr std::size_t kMaxSearchContext = 2000;

struct ToolsSearchParams {
  std::string query;
  // The words around the query (an agent's: the user's message it works on); they count half and
  // name the service a short query may leave out. At most kMaxSearchContext characters are read.
  std::string context;
  std::string cwd;  // the repository whose connectors are searched too (else hello's cwd)
  std::int64_t limit = kSearchLimit;
};

struct ToolsSearchHit {
  std::string connector, name;
  std::string line;    // the tool as the model sees it (common/tool_text.h)
  double score = 0;    // BM25; larger is better
  bool exact = false;  // the query is its name
};

struct ToolsSearchResult {
  std::int64_t searched = 0;  // tools searched (a deny rule's are not)
  std::vector<ToolsSearchHit> tools;
};

Decoded<ToolsSearchParams> decode(const boost::json::value& v, std::type_identity<ToolsSearchParams>);
Decoded<ToolsSearchHit> decode(const boost::json::value& v, std::type_identity<ToolsSearchHit>);
Decoded<ToolsSearchResult> decode(const boost::json::value& v, std::type_identity<ToolsSearchResult>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsSearchParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsSearchHit& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const ToolsSearchResult& v);

inline constexpr std::string_view kToolsSearch = "tools/search";

}  // namespace oppx::proto

// Tool search over the connectors' tool lists (tools/search): a ranked lookup for an agent whose
// model cannot hold every tool in its context. BM25 over each tool's name, its connector's name,
// its description and its arguments' names and descriptions, with a few everyday synonyms; a
// query that is a tool's exact name finds that tool first. Pure: no I/O, built per request from
// the lists the daemon holds (the running connectors' and the cached ones').
#pragma once

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace oppx::daemon {

// The words a text is searched by: split at anything not a letter or digit and at camelCase,
// lower-cased, a few common words dropped, plurals and -ing/-ed endings cut.
std::vector<std::string> search_terms(std::string_view text);

class ToolIndex {
 public:
  // Adds the tools of `connector` (the server's tool objects; those without a name are skipped).
  void add(std::string_view connector, const boost::json::array& tools);

  struct Hit {
    std::string connector, name;
    double score = 0;
    bool exact = false;  // the query named it
  };
  // The best `limit` tools for `query`, best first: those it names exactly, then by score; none
  // that shares no word with the query or the context. `context` (the user's words around the
  // query: the message the agent works on) counts half: it names the service a query may not.
  std::vector<Hit> search(std::string_view query, std::size_t limit, std::string_view context = {}) const;

  std::size_t size() const { return docs_.size(); }

 private:
  struct Doc {
    std::string connector, name;
    std::unordered_map<std::string, double> weight;  // term → weighted count
    double length = 0;
  };
  std::vector<Doc> docs_;
  std::unordered_map<std::string, std::size_t> df_;  // term → tools that have it
  double total_length_ = 0;
};

}  // namespace oppx::daemon

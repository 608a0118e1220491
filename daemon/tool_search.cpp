// ToolIndex: BM25 (k1 1.2, b 0.75) over weighted fields, a query widened by a short table of
// everyday synonyms, and exact names first.
#include "daemon/tool_search.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <unordered_set>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;
// What a word is worth by where it stands: a tool's name says most about it.
constexpr double kName = 3.0, kConnector = 1.5, kDescription = 1.0, kArgName = 1.5, kArgDescription = 0.5;
constexpr double kSynonym = 0.5;  // a synonym of a query word counts half
constexpr double kContext = 0.5;  // a word of the context (the user's message) counts half

bool is_stopword(std::string_view w) {
  static const std::unordered_set<std::string_view> words{
      "a",    "an",    "the",   "of",   "to",   "in",    "on",   "for",    "and",   "or",     "with", "from",  "by",
      "is",   "are",   "be",    "it",   "its",  "this",  "that", "these",  "those", "my",     "me",   "i",     "we",
      "our",  "you",   "your",  "as",   "at",   "into",  "can",  "do",     "does",  "please", "what", "which", "all",
      "any",  "some",  "using", "use",  "tool", "tools", "will", "should", "if",    "than",   "then", "so",    "there",
      "here", "about", "via",   "when", "how",  "who",   "was",  "were",   "been"};
  return words.count(w) > 0;
}

bool vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

// Plurals and -ing/-ed cut, so that "files", "file" and "filing" meet; a doubled last letter
// left by the cut is undone ("running" → "run").
std::string stem(std::string w) {
  auto ends = [&w](std::string_view s) {
    return w.size() > s.size() && w.compare(w.size() - s.size(), s.size(), s) == 0;
  };
  auto undouble = [&w] {
    std::size_t n = w.size();
    if (n >= 3 && w[n - 1] == w[n - 2] && !vowel(w[n - 1]) && w[n - 1] != 'l' && w[n - 1] != 's' && w[n - 1] != 'z')
      w.pop_back();
  };
  if (w.size() <= 3) return w;
  if (ends("ies") && w.size() > 4) {
    w.replace(w.size() - 3, 3, "y");
  } else if (ends("sses")) {
    w.resize(w.size() - 2);
  } else if (ends("xes") || ends("ches") || ends("shes")) {
    w.resize(w.size() - 2);
  } else if (ends("s") && !ends("ss") && !ends("us") && !ends("is")) {
    w.pop_back();
  } else if (ends("ing") && w.size() > 5) {
    w.resize(w.size() - 3);
    undouble();
  } else if (ends("ed") && w.size() > 4) {
    w.resize(w.size() - 2);
    undouble();
  }
  // A final e goes too, so that "resolve", "resolved" and "resolving" meet.
  if (w.size() > 3 && w.back() == 'e') w.pop_back();
  return w;
}

// Everyday words for the same thing, as stemmed terms; a query word brings the others of its
// group in at half weight.
const std::unordered_map<std::string, std::vector<std::string>>& synonyms() {
  static const auto table = [] {
    const std::vector<std::vector<std::string_view>> groups{
        // what is done
        {"delete", "remove", "erase", "drop", "destroy", "forget", "purge", "discard"},
        {"create", "make", "new", "add", "insert", "register"},
        {"list", "show", "enumerate", "all", "overview"},
        {"get", "fetch", "retrieve", "read", "obtain", "view", "load", "display", "see", "contents"},
        {"search", "find", "query", "lookup", "locate", "look", "filter"},
        {"update", "edit", "modify", "change", "set", "patch", "alter", "rename", "relabel"},
        {"write", "save", "store", "persist", "put", "replace", "overwrite"},
        {"run", "execute", "exec", "invoke", "evaluate", "eval", "perform"},
        {"move", "rename", "relocate"},
        {"wait", "until", "pause", "sleep", "appear"},
        {"upload", "attach"},
        {"close", "resolve", "done", "finish", "archive"},
        {"approve", "review", "lgtm"},
        {"merge", "land"},
        {"fork", "copy", "clone"},
        {"send", "post", "message", "say", "tell", "notify"},
        {"comment", "reply", "respond", "note"},
        {"react", "reaction", "emoji"},
        {"navigate", "open", "visit", "goto", "browse", "go", "url"},
        {"click", "press", "tap"},
        {"type", "fill", "enter", "input", "keyboard", "key"},
        {"describe", "detail", "inspect", "explain", "info", "information", "metadata"},
        {"sum", "add", "plus", "total"},
        {"echo", "repeat", "back"},
        // what it is done to
        {"file", "document"},
        {"folder", "directory", "dir"},
        {"tree", "nested", "hierarchy", "structure", "layout", "recursive"},
        {"repo", "repository"},
        {"pr", "pull", "request"},
        {"mr", "merge", "request"},
        {"issue", "ticket", "bug", "error", "exception", "crash", "problem"},
        {"screenshot", "capture"},
        {"image", "picture", "photo", "png", "jpg", "media", "icon"},
        {"page", "tab", "website", "site", "web", "browser"},
        {"snapshot", "accessibility", "structure", "content"},
        {"javascript", "js", "script", "code"},
        {"channel", "room"},
        {"thread", "conversation", "replies"},
        {"user", "member", "person", "people", "account", "profile", "identity", "who"},
        {"whoami", "me", "self", "current", "authenticated", "identity"},
        {"label", "tag"},
        {"database", "db", "sql", "table", "row", "column", "select", "schema"},
        {"address", "location", "place", "street", "coordinate", "latitude", "longitude", "point", "geocode"},
        {"direction", "route", "drive", "travel", "distance", "commute", "trip"},
        {"elevation", "altitude", "height", "sea"},
        {"remember", "memory", "recall", "knowledge", "know", "fact", "observation", "stored"},
        {"entity", "node", "thing", "item", "record"},
        {"relation", "link", "connect", "relationship", "edge"},
        {"log", "logs", "output", "console"},
        {"pod", "container", "deployment", "cluster", "k8s", "kubernetes", "kubectl", "namespace"},
        {"tunnel", "forward", "port"},
        {"context", "switch", "cluster"},
        {"environment", "env", "variable"},
        {"doc", "docs", "documentation", "library", "reference", "manual"},
        {"release", "version"},
        {"commit", "history"},
        {"status", "state", "progress"},
        {"size", "byte", "large", "big"},
        {"nearby", "local", "near", "around", "shop", "restaurant", "business"},
        {"internet", "web", "online"},
    };
    std::unordered_map<std::string, std::vector<std::string>> t;
    for (const auto& g : groups) {
      for (std::string_view w : g) {
        auto& others = t[stem(std::string(w))];
        for (std::string_view o : g)
          if (o != w) others.push_back(stem(std::string(o)));
      }
    }
    return t;
  }();
  return table;
}

// A name as the exact match compares it: lower case, with `-`, ` ` and `.` read as `_`.
std::string name_key(std::string_view s) {
  std::string k;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    k += (c == '-' || c == ' ' || c == '.') ? '_' : static_cast<char>(std::tolower(u));
  }
  while (!k.empty() && k.back() == '_') k.pop_back();
  while (!k.empty() && k.front() == '_') k.erase(k.begin());
  return k;
}

std::string_view field_view(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

}  // namespace

std::vector<std::string> search_terms(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && !is_stopword(word)) out.push_back(stem(std::move(word)));
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (!std::isalnum(c)) {
      flush();
      continue;
    }
    // camelCase: a capital after a lower-case letter or a digit starts a word, as does the last
    // capital of a run followed by a lower-case letter ("HTTPServer" → http, server).
    if (std::isupper(c) && !word.empty()) {
      auto prev = static_cast<unsigned char>(text[i - 1]);
      bool next_lower = i + 1 < text.size() && std::islower(static_cast<unsigned char>(text[i + 1]));
      if (std::islower(prev) || std::isdigit(prev) || (std::isupper(prev) && next_lower)) flush();
    }
    word += static_cast<char>(std::tolower(c));
  }
  flush();
  return out;
}

void ToolIndex::add(std::string_view connector, const json::array& tools) {
  std::vector<std::string> connector_terms = search_terms(connector);
  for (const json::value& v : tools) {
    if (!v.is_object()) continue;
    const json::object& tool = v.as_object();
    std::string_view name = field_view(tool, "name");
    if (name.empty()) continue;
    Doc d{std::string(connector), std::string(name), {}, 0};
    auto put = [&d](const std::vector<std::string>& terms, double w) {
      for (const auto& t : terms) {
        d.weight[t] += w;
        d.length += w;
      }
    };
    put(search_terms(name), kName);
    put(search_terms(field_view(tool, "title")), kName / 2);
    put(connector_terms, kConnector);
    put(search_terms(field_view(tool, "description")), kDescription);
    const json::value* schema = tool.if_contains("inputSchema");
    const json::value* props = schema && schema->is_object() ? schema->as_object().if_contains("properties") : nullptr;
    if (props && props->is_object()) {
      for (const auto& [arg, spec] : props->as_object()) {
        put(search_terms(arg), kArgName);
        if (spec.is_object()) put(search_terms(field_view(spec.as_object(), "description")), kArgDescription);
      }
    }
    for (const auto& [term, w] : d.weight) ++df_[term];
    total_length_ += d.length;
    docs_.push_back(std::move(d));
  }
}

std::vector<ToolIndex::Hit> ToolIndex::search(std::string_view query, std::size_t limit,
                                              std::string_view context) const {
  std::vector<Hit> hits;
  if (docs_.empty() || limit == 0) return hits;
  // The words asked with their weights: the query's at 1, the context's at kContext, their
  // synonyms at half of that; a word keeps the largest weight it is given.
  std::unordered_map<std::string, double> asked;
  auto ask = [&asked](const std::string& t, double w) {
    double& slot = asked[t];
    slot = std::max(slot, w);
  };
  for (auto [text, weight] : {std::pair{query, 1.0}, std::pair{context, kContext}}) {
    for (const auto& t : search_terms(text)) {
      ask(t, weight);
      auto syn = synonyms().find(t);
      if (syn == synonyms().end()) continue;
      for (const auto& s : syn->second) ask(s, weight * kSynonym);
    }
  }
  // A word no tool has may still begin one ("config" in "configuration"): those count half.
  for (const auto& t : search_terms(query)) {
    if (t.size() < 4 || df_.count(t)) continue;
    for (const auto& [term, count] : df_)
      if (term.size() > t.size() && term.compare(0, t.size(), t) == 0) ask(term, kSynonym);
  }
  std::string key = name_key(query);
  double n = static_cast<double>(docs_.size());
  double avg = total_length_ / n;
  for (const Doc& d : docs_) {
    Hit h{d.connector, d.name, 0, false};
    std::string name = name_key(d.name);
    h.exact = !key.empty() &&
              (key == name || key == name_key(d.connector) + "_" + name || key == name_key(d.connector) + "__" + name);
    for (const auto& [term, qw] : asked) {
      auto it = d.weight.find(term);
      if (it == d.weight.end()) continue;
      double df = static_cast<double>(df_.at(term));
      double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
      double tf = it->second;
      h.score += qw * idf * tf * (kK1 + 1) / (tf + kK1 * (1 - kB + kB * d.length / avg));
    }
    if (h.exact || h.score > 0) hits.push_back(std::move(h));
  }
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    if (a.exact != b.exact) return a.exact;
    if (a.score != b.score) return a.score > b.score;
    return std::tie(a.connector, a.name) < std::tie(b.connector, b.name);
  });
  if (hits.size() > limit) hits.resize(limit);
  return hits;
}

}  // namespace oppx::daemon

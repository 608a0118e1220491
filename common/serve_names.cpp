// The tool names of `oppx mcp serve`: see serve_names.h for the form.
#include "common/serve_names.h"

#include <fmt/format.h>

#include <cstdint>

namespace oppx {

namespace {

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// FNV-1a over the pair with a separator no name holds, so `a.b`+`c` and `a`+`b.c` differ.
std::uint32_t pair_hash(std::string_view connector, std::string_view tool) {
  std::uint32_t h = 2166136261u;
  auto mix = [&](unsigned char c) {
    h ^= c;
    h *= 16777619u;
  };
  for (char c : connector) mix(static_cast<unsigned char>(c));
  mix(0);
  for (char c : tool) mix(static_cast<unsigned char>(c));
  return h;
}

std::string hashed(std::string_view plain, std::string_view connector, std::string_view tool) {
  constexpr std::size_t kKeep = kMaxToolName - 9;
  return fmt::format("{}_{:08x}", plain.substr(0, kKeep), pair_hash(connector, tool));
}

// The plain form, and whether it kept every character.
std::pair<std::string, bool> plain_name(std::string_view connector, std::string_view tool) {
  std::string out;
  bool lossless = true;
  auto add = [&](std::string_view part) {
    for (char c : part) {
      lossless = lossless && allowed(c);
      out += allowed(c) ? c : '_';
    }
  };
  add(connector);
  out += "__";
  add(tool);
  return {out, lossless && out.size() <= kMaxToolName};
}

}  // namespace

std::string served_name(std::string_view connector, std::string_view tool) {
  auto [plain, kept] = plain_name(connector, tool);
  return kept ? plain : hashed(plain, connector, tool);
}

ServedNames::ServedNames(const std::vector<ServedTool>& tools) {
  std::map<std::string, int, std::less<>> uses;
  for (const ServedTool& t : tools) {
    names_.push_back(served_name(t.connector, t.tool));
    ++uses[names_.back()];
  }
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const ServedTool& t = tools[i];
    if (uses[names_[i]] > 1) names_[i] = hashed(plain_name(t.connector, t.tool).first, t.connector, t.tool);
    // A hashed name that meets another tool's name (or hash) is hashed again with a count.
    for (int n = 1; !by_name_.emplace(names_[i], t).second; ++n)
      names_[i] = hashed(plain_name(t.connector, t.tool).first, t.connector, fmt::format("{}#{}", t.tool, n));
  }
}

std::optional<ServedTool> ServedNames::find(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

}  // namespace oppx

// The names `oppx mcp serve` gives its connectors' tools. Clients accept tool names of
// `[A-Za-z0-9_-]`, at most 64 characters (Claude Code, VS Code and the OpenAI-compatible model
// servers behind them), so `<connector>.<tool>` becomes `<connector>__<tool>`, each other
// character turned into `_`. A name that had to change that way, or is over 64 characters, or
// that two tools would share, ends in `_` and 8 hex digits of a hash of the original pair
// (after its first 55 characters), so that it stays the same from one listing to the next and
// never names two tools.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oppx {

struct ServedTool {
  std::string connector;
  std::string tool;
};

inline constexpr std::size_t kMaxToolName = 64;

// The name of one tool, as listed alone (without a clash with another).
std::string served_name(std::string_view connector, std::string_view tool);

// Names for a whole listing: clashing names are all given the hashed form, whatever their order.
class ServedNames {
 public:
  explicit ServedNames(const std::vector<ServedTool>& tools);
  const std::string& name_of(std::size_t index) const { return names_[index]; }
  std::optional<ServedTool> find(std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::map<std::string, ServedTool, std::less<>> by_name_;
};

}  // namespace oppx

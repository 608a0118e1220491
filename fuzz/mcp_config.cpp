// Fuzz target: an mcp.json (daemon/mcp_config): parsed, then every definition expanded with
// ${VAR} and ${VAR:-default} against a fixed environment, its variables listed and its values
// masked for display. Properties: a parse error starts with the file's name; an expansion error
// never holds a variable's value; a value that reaches the output was read through a variable
// referenced_variables names (the log masks those values); a reference to a set variable, plain or
// in a default, becomes its value whatever follows it. (The output may still read "${TOKEN}": "$${EMPTY}{TOKEN}" makes
// it from pieces, and expansion is one pass, as in the shell.)
#include "daemon/mcp_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace {

using namespace oppx::daemon;

const EnvMap kEnv{
    {"HOME", "/home/fuzz"}, {"TOKEN", "tok-Secret-Value-1234"}, {"MULTI", "line1\nSecond-Secret-Line"}, {"EMPTY", ""}};

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "mcp_config: %s\n", what.c_str());
  std::abort();
}

// `file`: the whole input; a value the file itself holds (in a variable's name, say) is no leak.
// `names`: what referenced_variables says the definition reads.
void check_expand(std::string_view s, std::string_view file, const std::vector<std::string>& names) {
  auto r = oppx::daemon::expand(s, kEnv);
  if (!r) {
    std::string told = r.error().describe() + " " + r.error().variable;
    for (std::string_view value : {"tok-Secret-Value-1234", "Second-Secret-Line"}) {
      if (told.find(value) != std::string::npos && file.find(value) == std::string_view::npos)
        broken("an expansion error shows a variable's value: " + told);
    }
    return;
  }
  bool read_token = std::find(names.begin(), names.end(), "TOKEN") != names.end();
  if (r->find("tok-Secret-Value-1234") != std::string::npos &&
      file.find("tok-Secret-Value-1234") == std::string_view::npos && !read_token)
    broken("a value reached the output through a variable that referenced_variables does not name");
  for (std::string_view ref : {"${TOKEN}", "${NOPE:-${TOKEN}}", "${NOPE:-${EMPTY:-${TOKEN}}}"}) {
    auto before = oppx::daemon::expand(std::string(ref) + std::string(s), kEnv);
    if (!before || *before != "tok-Secret-Value-1234" + *r)
      broken("a reference to a set variable was not replaced by its value: " + std::string(ref));
  }
  if (s.find('$') == std::string_view::npos && *r != s) broken("text without references changed");
  (void)oppx::daemon::mask_value(s);
  (void)oppx::daemon::mask_url(*r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = parse_mcp_config(text, "mcp.json");
  if (!config) {
    if (config.error().rfind("mcp.json", 0) != 0)
      broken("an error that does not start with the file: " + config.error());
    return 0;
  }
  for (const ConnectorDef& def : config->connectors) {
    if (!valid_name(def.name) && def.unsupported.empty()) broken("a connector with an invalid name is usable");
    const std::vector<std::string> names = referenced_variables(def);
    check_expand(def.command, text, names);
    for (auto& a : def.args) check_expand(a, text, names);
    for (auto& [k, v] : def.env) check_expand(v, text, names);
    check_expand(def.url, text, names);
    for (auto& [k, v] : def.headers) check_expand(v, text, names);
    check_expand(def.cwd, text, names);
    (void)mask_args(def.args);
    (void)file_name_of(def);
  }
  return 0;
}

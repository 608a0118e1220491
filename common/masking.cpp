// Masking a definition's values for display. See common/masking.h.
#include "common/masking.h"

#include "common/text.h"

#include <algorithm>
#include <cctype>

namespace oppx {

bool variable_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<Reference> reference_at(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open + 2; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      ++depth;
      ++i;
    } else if (s[i] == '}' && depth-- == 0) {
      Reference ref;
      std::string_view inner = s.substr(open + 2, i - open - 2);
      ref.name = inner;
      if (auto d = inner.find(":-"); d != std::string_view::npos) {
        ref.name = inner.substr(0, d);
        ref.fallback = inner.substr(d + 2);
        ref.has_default = true;
      }
      ref.end = i + 1;
      return ref;
    }
  }
  return std::nullopt;
}

namespace {

// A literal piece of a value without references: the scheme word kept ("Bearer "), at most four
// characters of a long secret, the rest hidden.
std::string mask_literal(std::string_view v) {
  std::string_view prefix;
  if (auto sp = v.find(' '); sp != std::string_view::npos) {  // "Bearer xyz": keep the scheme
    prefix = v.substr(0, sp + 1);
    v.remove_prefix(sp + 1);
  }
  std::size_t keep = v.size() >= 12 ? 4 : 0;
  return std::string(prefix) + std::string(v.substr(0, keep)) + (keep ? "…***" : "***");
}

bool only_separators(std::string_view s) { return s.find_first_not_of(" :/.,;=-_@") == std::string_view::npos; }

}  // namespace

bool secret_word(std::string_view name) {
  std::string n = lower(name);
  for (std::string_view w :
       {"token", "key", "secret", "password", "passwd", "auth", "bearer", "credential", "cookie"}) {
    if (n.find(w) != std::string::npos) return true;
  }
  return false;
}

std::string mask_value(std::string_view v) {
  if (v.find("${") == std::string_view::npos) return mask_literal(v);
  // References are shown as written (they are not secrets); literal text beside them is not:
  // "Bearer ${T}" stays, "Bearer sk-live-1 ${T}" becomes "Bearer ***${T}".
  std::string out;
  bool first = true;
  while (!v.empty()) {
    auto open = v.find("${");
    auto ref = open == std::string_view::npos ? std::nullopt : reference_at(v, open);
    std::string_view literal = ref ? v.substr(0, open) : v;
    if (!literal.empty()) {
      if (only_separators(literal)) {
        out += literal;
      } else if (auto sp = literal.find(' '); first && sp != std::string_view::npos && sp + 1 == literal.size()) {
        out += literal;  // a scheme word alone: "Bearer "
      } else if (first && sp != std::string_view::npos) {
        out += std::string(literal.substr(0, sp + 1)) + "***";
      } else {
        out += "***";
      }
    }
    if (!ref) break;
    if (!variable_name(ref->name)) {
      out += "${***}";  // not a variable's name ("${X${Y}sk-live-1}"): it is never read, and may be a secret
    } else if (!ref->fallback.empty()) {
      out += "${" + std::string(ref->name) + ":-***}";  // ${T:-default}: the default may be literal text
    } else {
      out += v.substr(open, ref->end - open);
    }
    v.remove_prefix(ref->end);
    first = false;
  }
  return out;
}

std::string mask_url(std::string_view url) {
  std::string out(url);
  // user:password@ before the host
  if (auto scheme = out.find("://"); scheme != std::string::npos) {
    auto host_end = out.find_first_of("/?#", scheme + 3);
    auto at = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
    if (at != std::string::npos && at > scheme) {
      auto colon = out.find(':', scheme + 3);
      if (colon != std::string::npos && colon < at)
        out.replace(colon + 1, at - colon - 1, mask_value(out.substr(colon + 1, at - colon - 1)));
    }
  }
  // query values: ?api_key=… (a reference stays as written)
  auto q = out.find('?');
  if (q == std::string::npos) return out;
  auto frag = out.find('#', q);
  std::string query = out.substr(q + 1, frag == std::string::npos ? std::string::npos : frag - q - 1);
  std::string masked;
  std::size_t pos = 0;
  while (pos <= query.size()) {
    auto amp = query.find('&', pos);
    std::string pair = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (auto eq = pair.find('='); eq != std::string::npos && eq + 1 < pair.size()) {
      pair = pair.substr(0, eq + 1) + mask_value(pair.substr(eq + 1));
    }
    masked += pair;
    if (amp == std::string::npos) break;
    masked += '&';
    pos = amp + 1;
  }
  return out.substr(0, q + 1) + masked + (frag == std::string::npos ? "" : out.substr(frag));
}

std::vector<std::string> mask_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool next_is_secret = false;
  for (const auto& a : args) {
    if (next_is_secret) {
      out.push_back(mask_value(a));
      next_is_secret = false;
      continue;
    }
    if (a.starts_with("-")) {
      if (auto eq = a.find('='); eq != std::string::npos) {  // --token=…
        out.push_back(secret_word(a.substr(0, eq)) ? a.substr(0, eq + 1) + mask_value(a.substr(eq + 1)) : a);
      } else {
        out.push_back(a);
        next_is_secret = secret_word(a);
      }
    } else if (auto colon = a.find(':'); colon != std::string::npos && colon > 0 && colon + 1 < a.size() &&
                                         a.find_first_of(" /", 0) >= colon && secret_word(a.substr(0, colon))) {
      // "Authorization: Bearer …", as given to mcp-remote's --header
      std::size_t v = a.find_first_not_of(' ', colon + 1);
      out.push_back(a.substr(0, v) + mask_value(a.substr(v == std::string::npos ? a.size() : v)));
    } else if (a.find("://") != std::string::npos) {
      out.push_back(mask_url(a));
    } else {
      out.push_back(a);
    }
  }
  return out;
}

}  // namespace oppx

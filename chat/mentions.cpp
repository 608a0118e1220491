// expand_message: a connector's prompt in place of the message, its resources below it.
#include "chat/mentions.h"

#include "chat/workspace.h"
#include "common/text.h"

#include <fmt/format.h>

#include <cctype>

namespace oppx::chat {

namespace {

// "name=value" words after a prompt's name; a word without "=" is kept in `rest`.
proto::StringMap prompt_arguments(const std::string& words, std::string& rest) {
  proto::StringMap args;
  std::size_t i = 0;
  while (i < words.size()) {
    std::size_t start = words.find_first_not_of(" \t\n", i);
    if (start == std::string::npos) break;
    std::size_t end = words.find_first_of(" \t\n", start);
    std::string w = words.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto eq = w.find('=');
    if (eq != std::string::npos && eq > 0) {
      args[w.substr(0, eq)] = w.substr(eq + 1);
    } else {
      rest += (rest.empty() ? "" : " ") + w;
    }
    i = end == std::string::npos ? words.size() : end;
  }
  return args;
}

// Where a connector's name starting at `from` ends: the first character that is not a letter,
// a digit, '-' or '_'.
std::size_t name_end(const std::string& s, std::size_t from) {
  std::size_t i = from;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '_')) ++i;
  return i;
}

}  // namespace

ExpandedMessage expand_message(const std::string& message, const std::set<std::string>& connectors,
                               DaemonTools& daemon) {
  ExpandedMessage out{message, {}, {}, false};
  // /<connector>:<prompt> [name=value …], read by hand (a regular expression recurses once per
  // character, and a long paste would take the stack).
  if (std::size_t colon = name_end(message, 1);
      message.size() > 1 && message[0] == '/' && colon > 1 && colon < message.size() && message[colon] == ':') {
    std::string name = message.substr(1, colon - 1);
    std::size_t end = message.find_first_of(" \t\n", colon + 1);
    std::string prompt = message.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
    if (connectors.count(name) && !prompt.empty()) {
      std::string rest;
      proto::StringMap args = prompt_arguments(end == std::string::npos ? "" : message.substr(end), rest);
      std::string text;
      if (std::string why = daemon.get_prompt(name, prompt, args, text); !why.empty()) {
        out.error = fmt::format("The prompt {}:{} could not be fetched: {}", name, prompt, why);
        return out;
      }
      out.notices.push_back(fmt::format("The prompt {}:{} ({} characters) is the message.", name, prompt, text.size()));
      out.content = rest.empty() ? text : text + "\n\n" + rest;
    }
  }
  // @<connector>:<uri> at a word's start, with the punctuation that ends a sentence left out.
  std::string attached;
  std::set<std::string> seen;
  for (std::size_t at = message.find('@'); at != std::string::npos; at = message.find('@', at + 1)) {
    if (at > 0 && !std::isspace(static_cast<unsigned char>(message[at - 1])) && message[at - 1] != '(') continue;
    std::size_t colon = name_end(message, at + 1);
    if (colon == at + 1 || colon >= message.size() || message[colon] != ':') continue;
    std::string name = message.substr(at + 1, colon - at - 1);
    std::size_t end = message.find_first_of(" \t\n\r", colon + 1);
    std::string uri = message.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
    while (!uri.empty() && std::string_view(".,;:!?)'\"").find(uri.back()) != std::string_view::npos) uri.pop_back();
    if (!connectors.count(name) || uri.empty() || !seen.insert(name + ":" + uri).second) continue;
    std::string text;
    if (std::string why = daemon.read_resource(name, uri, text); !why.empty()) {
      out.notices.push_back(fmt::format("@{}:{} was not attached: {}", name, uri, why));
      continue;
    }
    out.notices.push_back(fmt::format("Attached @{}:{} ({} characters).", name, uri, text.size()));
    out.sensitive = out.sensitive || looks_sensitive("", text);
    attached += fmt::format("\n\nThe resource @{}:{} ({}):\n{}", name, uri, kUntrusted, text);
  }
  out.content += attached;
  return out;
}

}  // namespace oppx::chat

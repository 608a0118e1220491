#include "cli/elicit_form.h"

#include "cli/mcp_login.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

std::string shown(std::string_view s, std::size_t cap = 300) {
  std::string out = escape_controls(valid_utf8(std::string(s.substr(0, cap))));
  return s.size() > cap ? out + "…" : out;
}

std::string who(const proto::ElicitQuestion& q) {
  if (q.connector.empty()) return "A connector";
  return q.tool.empty() ? shown(q.connector, 60) : shown(q.connector, 60) + " (" + shown(q.tool, 60) + ")";
}

// A field's default as the user would type it: a choice by its title, several joined by commas.
std::string default_text(const proto::FormField& f, const json::value& v) {
  auto choice = [&f](const json::value& c) {
    for (std::size_t i = 0; i < f.choices.size(); ++i)
      if (c.is_string() && c.as_string() == f.choices[i] && !f.choice_titles[i].empty()) return f.choice_titles[i];
    return c.is_string() ? std::string(c.as_string()) : json::serialize(c);
  };
  if (v.is_array()) {
    std::string out;
    for (const json::value& c : v.as_array()) out += (out.empty() ? "" : ", ") + choice(c);
    return shown(out, 80);
  }
  if (v.is_string()) return shown(choice(v), 80);
  if (v.is_bool()) return v.as_bool() ? "yes" : "no";
  if (v.is_double()) return fmt::format("{}", v.as_double());
  return shown(json::serialize(v), 80);
}

// The line that asks one field: its title, what it takes, and its default.
std::string field_prompt(const proto::FormField& f) {
  std::string kind;
  if (f.type == "boolean") kind = "y/n";
  if (f.type == "integer") kind = "a whole number";
  if (f.type == "number") kind = "a number";
  if (f.type == "choice") kind = "a number from the list";
  if (f.type == "choices") kind = "numbers from the list, separated by commas";
  std::string p = "    " + shown(f.title.empty() ? f.name : f.title, 80);
  if (!kind.empty()) p += " (" + kind + ")";
  if (f.required) p += " *";
  if (f.default_value) p += " [" + default_text(f, *f.default_value) + "]";
  return p + ": ";
}

bool yes(const std::string& a) { return a == "y" || a == "Y" || a == "yes"; }

}  // namespace

proto::ElicitAnswer ask_elicitation(const proto::ElicitQuestion& q, const AskLine& ask, const Say& say) {
  proto::ElicitAnswer cancel{"cancel", {}};
  if (q.mode == "url") {
    say(fmt::format("\n  ? {} asks you to open this address in your browser:\n      {}\n    {}\n", who(q),
                    shown(q.url, 2000), shown(q.message)));
    say("    [y] yes, open it · [N] no\n");
    auto a = ask("  answer › ");
    if (!a) return cancel;
    if (!yes(*a)) return {};
    // Only a web address is handed to a browser: another scheme could start any program that
    // claims it (the address is the server's, and a server may be hostile).
    bool web = q.url.rfind("https://", 0) == 0 || q.url.rfind("http://", 0) == 0;
    std::string how = web ? open_browser(q.url) : "";
    if (!web) {
      say("    Not opened: only http and https addresses are opened. Open it yourself if you trust it.\n");
    } else {
      say(how.empty() ? "    Open it yourself (nothing here can open a browser).\n" : "    Opened " + how + ".\n");
    }
    return {"accept", {}};
  }
  say(fmt::format("\n  ? {} asks:\n    {}\n", who(q), shown(q.message, 1000)));
  std::vector<proto::FormField> fields = proto::form_fields(q.schema);
  if (!fields.empty()) say("    (Enter keeps the [default]; * is required; Ctrl-C cancels)\n");
  json::object content;
  for (const proto::FormField& f : fields) {
    if (!f.description.empty()) say("    " + shown(f.description) + "\n");
    for (std::size_t i = 0; i < f.choices.size(); ++i) {
      std::string title = f.choice_titles[i].empty() ? shown(f.choices[i], 80) : shown(f.choice_titles[i], 80);
      say(fmt::format("      {}) {}\n", i + 1, title));
    }
    for (;;) {
      auto typed = ask(field_prompt(f));
      if (!typed) return cancel;
      std::string error;
      auto v = proto::field_value(f, *typed, error);
      if (v && error.empty()) error = proto::field_problem(q.schema, f, *v);
      if (!error.empty()) {
        say("      " + error + "\n");
        continue;
      }
      if (!v && f.required && !f.default_value) {
        say("      this one is required\n");
        continue;
      }
      if (v) content[f.name] = std::move(*v);
      break;
    }
  }
  content = proto::with_defaults(q.schema, std::move(content));
  if (std::string why = proto::form_problem(q.schema, content); !why.empty()) {
    say("    It cannot be sent: " + shown(why) + "\n");
    return {};
  }
  say("    Send it? [Y] yes · [n] no, decline\n");
  auto a = ask("  answer › ");
  if (!a) return cancel;
  if (!a->empty() && !yes(*a)) return {};
  return {"accept", std::move(content)};
}

std::string unasked_note(const proto::ElicitQuestion& q, const proto::ElicitAnswer& a, proto::ElicitPolicy policy) {
  std::string what = q.mode == "url" ? "asked you to open an address" : "asked you: " + shown(q.message, 200);
  if (a.action == "accept")
    return fmt::format("{} {}; accepted with its defaults (--elicit accept-defaults)", who(q), what);
  if (policy == proto::ElicitPolicy::kAcceptDefaults && q.mode == "form") {
    std::string why = proto::form_problem(q.schema, proto::with_defaults(q.schema, {}));
    return fmt::format("{} {}; declined, as its defaults do not complete the form ({})", who(q), what, shown(why));
  }
  if (policy == proto::ElicitPolicy::kAcceptDefaults)
    return fmt::format("{} {}; declined (it is no form)", who(q), what);
  return fmt::format(
      "{} {}; declined, as nothing here can ask you (run it on a terminal, or --elicit accept-defaults accepts a "
      "form's defaults)",
      who(q), what);
}

}  // namespace oppx::cli

// roff for the man pages: see roff.h. The layouts read here are the help texts' own (two spaces
// or more between an option and its text), so a help text that keeps to them needs no second copy.
#include "common/roff.h"

#include <fmt/format.h>

#include <vector>

namespace oppx::roff {

namespace {

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    auto nl = s.find('\n');
    out.push_back(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::size_t indent_of(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return i;
}

// "- item" or "12. step": a line of its own even in a filled paragraph.
bool starts_item(std::string_view line) {
  if (line.starts_with("- ")) return true;
  std::size_t i = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  return i > 0 && line.substr(i).starts_with(". ");
}

}  // namespace

std::string escape(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 8);
  if (!line.empty() && (line[0] == '.' || line[0] == '\'')) out += "\\&";
  for (char c : line) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return out;
}

std::string head(std::string_view title, std::string_view name, std::string_view version, std::string_view what) {
  // The first line tells man-db's preconv that the page is UTF-8 (the help texts hold "…" and "→").
  return fmt::format(
      "'\\\" -*- coding: UTF-8 -*-\n"
      ".TH {} 1 \"\" \"{} {}\" \"User Commands\"\n"
      ".nh\n"
      ".ad l\n"
      ".SH NAME\n"
      "{} \\- {}\n",
      title, name, version, escape(name), escape(what));
}

std::string text(std::string_view prose) {
  std::string out;
  bool nofill = false, paragraph_started = false;
  for (std::string_view line : lines_of(prose)) {
    if (trim(line).empty()) {
      if (nofill) out += ".fi\n";
      nofill = false;
      if (paragraph_started) out += ".PP\n";
      paragraph_started = false;
      continue;
    }
    bool indented = indent_of(line) > 0;
    if (indented && !nofill) out += ".nf\n";
    if (!indented && nofill) out += ".fi\n";
    if (!indented && !nofill && paragraph_started && starts_item(line)) out += ".br\n";
    nofill = indented;
    out += escape(line) + "\n";
    paragraph_started = true;
  }
  if (nofill) out += ".fi\n";
  return out;
}

std::string columns(std::string_view list) {
  std::string out;
  for (std::string_view line : lines_of(list)) {
    if (trim(line).empty()) continue;
    std::size_t indent = indent_of(line);
    std::string_view body = line.substr(indent);
    auto gap = body.find("  ");
    if (indent > 4 && !out.empty()) {  // the text of the item above, continued
      out += escape(trim(line)) + "\n";
      continue;
    }
    std::string_view tag = trim(body.substr(0, gap));
    std::string_view rest = gap == std::string_view::npos ? std::string_view() : trim(body.substr(gap));
    out += fmt::format(".TP\n\\fB{}\\fR\n", escape(tag));
    if (!rest.empty()) out += escape(rest) + "\n";
  }
  return out;
}

std::string page_from_usage(std::string_view usage, std::string_view version, std::string_view what,
                            std::string_view see_also) {
  std::vector<std::string_view> lines = lines_of(usage);
  if (lines.empty()) return {};
  std::string_view first = lines[0];
  if (first.starts_with("usage: ")) first.remove_prefix(7);
  auto space = first.find(' ');
  std::string name(first.substr(0, space));
  std::string_view synopsis = space == std::string_view::npos ? std::string_view() : first.substr(space + 1);
  std::string description, options, exit_status, files;
  bool in_options = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    std::size_t indent = indent_of(line);
    if ((indent > 0 && line.substr(indent).starts_with("-")) || (in_options && indent > 4)) {
      in_options = true;
      options += std::string(line) + "\n";
      continue;
    }
    in_options = false;
    if (line.starts_with("Exit codes: ")) {
      // "0 started, 1 failed, …." as items: each ", " before a digit starts one.
      std::string_view codes = trim(line.substr(12));
      if (codes.ends_with('.')) codes.remove_suffix(1);
      std::string list;
      while (!codes.empty()) {
        std::size_t end = 0;
        for (end = codes.find(", "); end != std::string_view::npos; end = codes.find(", ", end + 1))
          if (end + 2 < codes.size() && codes[end + 2] >= '0' && codes[end + 2] <= '9') break;
        std::string_view item = codes.substr(0, end);
        auto sp = item.find(' ');
        list += fmt::format("  {}  {}\n", item.substr(0, sp), sp == std::string_view::npos ? "" : item.substr(sp + 1));
        codes = end == std::string_view::npos ? std::string_view() : codes.substr(end + 2);
      }
      exit_status += columns(list);
    } else if (line.starts_with("Log: ")) {
      std::string_view log = trim(line.substr(5));
      auto sp = log.find(' ');
      files += fmt::format(".TP\n\\fB{}\\fR\n{}\n", escape(log.substr(0, sp)),
                           escape(sp == std::string_view::npos ? "its log" : trim(log.substr(sp + 1))));
    } else {
      description += std::string(line) + "\n";
    }
  }
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  std::string out = head(upper, name, version, what);
  out += fmt::format(".SH SYNOPSIS\n.B {}\n{}\n", escape(name), escape(synopsis));
  out += ".SH DESCRIPTION\n" + text(description);
  if (!options.empty()) out += ".SH OPTIONS\n" + columns(options);
  if (!exit_status.empty()) out += ".SH EXIT STATUS\n" + exit_status;
  if (!files.empty()) out += ".SH FILES\n" + files;
  if (!see_also.empty()) out += ".SH SEE ALSO\n" + escape(see_also) + "\n";
  return out;
}

}  // namespace oppx::roff

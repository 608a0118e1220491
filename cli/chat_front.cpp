// ChatFront (chat_front.h). The reply is drawn through the markdown renderer, which holds a line
// until it ends: the spinner stays until then, and a reply's first drawn line brings the blank
// line before it. What goes around the output filter (write_styled) is the renderer's output and
// the spinner only, both escaped where they hold text from elsewhere.
#include "cli/chat_front.h"

#include "cli/browser.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string first_line(std::string_view text, std::size_t cap) {
  std::string s(text.substr(0, text.find('\n')));
  if (s.size() > cap) s = s.substr(0, cap) + "…";
  return escape_controls(s);
}

ChatFront::ChatFront()
    : to_terminal_(::isatty(STDOUT_FILENO) == 1 && env("TERM") != "dumb"), colour_(env("NO_COLOR").empty()) {}

void ChatFront::reply_text(std::string_view piece) {
  std::lock_guard l(print_);
  if (!to_terminal_) {  // stdout is a file: the text as it came (the filter escapes it)
    if (!in_reply_) std::fputs("\n", stdout);
    in_reply_ = true;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    ends_newline_ = !piece.empty() && piece.back() == '\n';
    return;
  }
  // Markdown drawn at the width the terminal has now, a line at a time (markdown.h); the
  // spinner stays until a line is whole.
  if (!markdown_) markdown_.emplace(MarkdownStyle{terminal_columns(), colour_});
  std::string drawn = markdown_->feed(piece);
  if (drawn.empty()) return;
  quiet();
  write_styled((in_reply_ ? "" : "\n") + drawn);
  in_reply_ = true;
}

void ChatFront::notice(std::string_view text) {
  std::lock_guard l(print_);
  end_line();
  fmt::print("{}\n", warning_text(text, to_terminal_ ? terminal_columns() : SIZE_MAX));
}

void ChatFront::action_started(const std::string& name, const json::object& arguments) {
  std::lock_guard l(print_);
  end_line();
  waiting_from_.reset();
  started_ = Clock::now();
  acting_ = true;
  acting_name_ = name;
  next_tick_ = 10;
  std::string args = arguments.empty() ? "" : " " + proto::json_text(arguments);
  fmt::print("  > {}{}\n", name, first_line(args, 160));
}

void ChatFront::action_done(const chat::ActionRecord& r) {
  std::lock_guard l(print_);
  end_line();
  acting_ = false;
  double s = std::chrono::duration<double>(Clock::now() - started_).count();
  std::string said = sectioned_result_summary(r.name, r.text);  // "### Page…" as what happened
  print_wrapped(fmt::format("    {} ({:.1f} s): {}", r.status, r.status == "ran" || r.status == "failed" ? s : 0.0,
                            first_line(said.empty() ? r.text : said, 200)),
                "      ");
  wait_for_model();
}

void ChatFront::progress(double p, std::optional<double> total, const std::string& message) {
  std::lock_guard l(print_);
  end_line();
  std::string of = total ? fmt::format("{:g}/{:g}", p, *total) : fmt::format("{:g}", p);
  fmt::print("    … {}{}{}\n", of, message.empty() ? "" : " ", first_line(message, 120));
}

void ChatFront::still_running() {
  std::lock_guard l(print_);
  if (!acting_) return;
  auto s = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count();
  if (s < next_tick_) return;
  next_tick_ = s + 10;
  end_line();
  fmt::print("    … {} still running ({} s; Ctrl-C cancels)\n", acting_name_, s);
}

void ChatFront::tick() {
  std::lock_guard l(print_);
  if (!to_terminal_ || !waiting_from_) return;
  auto now = Clock::now();
  if (now - last_output_ < (output_seen_ ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(100))) return;
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - *waiting_from_);
  write_styled(spinner_draw(thinking_line(elapsed, terminal_columns())));
  spinner_shown_ = true;
}

void ChatFront::begin_turn() {
  std::lock_guard l(print_);
  wait_for_model();
}

void ChatFront::say(std::string_view text) {
  std::lock_guard l(print_);
  quiet();
  waiting_from_.reset();
  fmt::print("{}", text);
}

std::string ChatFront::prepare_browser() {
  {
    std::lock_guard l(print_);
    end_line();
    waiting_from_.reset();
  }
  std::string why = cli::prepare_browser();  // npm's progress, when it installs, goes to the terminal
  std::lock_guard l(print_);
  wait_for_model();
  return why;
}

chat::Answer ChatFront::ask(const chat::Question& q) {
  Given a = asked(q);
  auto* given = std::get_if<chat::Answer>(&a);
  return given ? *given : chat::Answer{};
}

proto::ElicitAnswer ChatFront::elicit(const proto::ElicitQuestion& q) {
  Given a = asked(q);
  auto* given = std::get_if<proto::ElicitAnswer>(&a);
  return given ? *given : proto::ElicitAnswer{};
}

ChatFront::Given ChatFront::asked(Asked q) {
  {
    std::lock_guard l(print_);
    end_line();
    waiting_from_.reset();
  }
  Given a;
  {
    std::unique_lock l(ask_);
    question_ = std::move(q);
    asking_ = true;
    answered_ = false;
    cv_.notify_all();
    cv_.wait(l, [&] { return answered_; });
    asking_ = false;
    a = answer_;
  }
  std::lock_guard l(print_);
  wait_for_model();
  return a;
}

std::optional<ChatFront::Asked> ChatFront::pending() {
  std::lock_guard l(ask_);
  if (asking_ && !answered_) return question_;
  return std::nullopt;
}

void ChatFront::answer(Given a) {
  std::lock_guard l(ask_);
  answer_ = std::move(a);
  answered_ = true;
  cv_.notify_all();
}

void ChatFront::end_turn() {
  std::lock_guard l(print_);
  end_line();
  waiting_from_.reset();
}

// `text` (several lines; from the model or a server) escaped, then broken at the terminal's
// width; lines after the first of each start with `hang`.
void ChatFront::print_wrapped(std::string_view text, std::string_view hang) {
  std::string shown;
  for (char c : escape_controls(valid_utf8(std::string(text)), true))
    shown += c == '\t' ? std::string(4, ' ') : std::string(1, c);
  fmt::print("{}\n", to_terminal_ ? wrap_text(shown, terminal_columns(), hang) : shown);
}

// Before anything is printed: the spinner erased (its line is then empty, the cursor at its start).
void ChatFront::quiet() {
  if (spinner_shown_) write_styled(spinner_erase());
  spinner_shown_ = false;
  last_output_ = Clock::now();
  output_seen_ = true;
}

void ChatFront::wait_for_model() {
  waiting_from_ = last_output_ = Clock::now();
  output_seen_ = false;
}

void ChatFront::end_line() {
  quiet();
  if (markdown_) {
    std::string rest = markdown_->finish();
    if (!rest.empty()) write_styled((in_reply_ ? "" : "\n") + rest);
  }
  markdown_.reset();
  if (in_reply_ && !to_terminal_ && !ends_newline_) std::fputs("\n", stdout);
  in_reply_ = false;
}

}  // namespace oppx::cli

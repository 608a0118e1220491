// The terminal chat's face (chat::FrontEnd): what a turn prints, as the terminal shows it — the
// reply drawn from its markdown a line at a time (cli/markdown.h), the actions' lines, warnings,
// the spinner while the model thinks — and the questions handed to the keyboard thread. Printing
// comes from the turn's thread, the spinner and Ctrl-C's line from the keyboard thread: one mutex
// orders them, and everything printed first erases the spinner. Nothing here blocks but ask().
#pragma once

#include "chat/agent.h"
#include "cli/markdown.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <variant>
#include <string>
#include <string_view>

namespace oppx::cli {

// The first line of `text`, cut at `cap` bytes ("…" when cut), escaped.
std::string first_line(std::string_view text, std::size_t cap);

class ChatFront : public chat::FrontEnd {
 public:
  using Clock = std::chrono::steady_clock;
  ChatFront();

  // The turn's thread.
  void reply_text(std::string_view piece) override;
  void notice(std::string_view text) override;
  void action_started(const std::string& name, const boost::json::object& arguments) override;
  void action_done(const chat::ActionRecord& r) override;
  void progress(double p, std::optional<double> total, const std::string& message) override;
  bool can_ask() const override { return true; }
  std::string prepare_browser() override;
  // Hands the question (or a connector's form) to the keyboard thread and waits for its answer.
  chat::Answer ask(const chat::Question& q) override;
  proto::ElicitAnswer elicit(const proto::ElicitQuestion& q) override;
  using Asked = std::variant<chat::Question, proto::ElicitQuestion>;
  using Given = std::variant<chat::Answer, proto::ElicitAnswer>;

  // The keyboard thread.
  void begin_turn();     // the model thinks: the spinner may show
  void end_turn();       // the reply's last line drawn, the spinner gone
  void still_running();  // every so often: a line for a call that has run a while
  // Every 50 ms: the spinner while the model thinks, drawn when nothing was printed for a moment
  // (at once before the first output, after a second in a reply).
  void tick();
  void say(std::string_view text);  // a line of its own (Ctrl-C's), in place of the spinner
  std::optional<Asked> pending();   // a question waiting
  void answer(Given a);             // its answer

 private:
  Given asked(Asked q);
  void print_wrapped(std::string_view text, std::string_view hang);
  void quiet();
  void wait_for_model();
  void end_line();

  // Styles only on a terminal that has them; colours unless NO_COLOR (no-color.org) is set.
  const bool to_terminal_;
  const bool colour_;
  std::optional<MarkdownRenderer> markdown_;  // the reply being drawn
  // The spinner: since when the model has been thought to think (none while a call runs or a
  // question waits), when anything was last printed, and whether the spinner is on the screen.
  std::optional<Clock::time_point> waiting_from_;
  Clock::time_point last_output_;
  bool output_seen_ = false, spinner_shown_ = false;
  std::mutex print_, ask_;
  std::condition_variable cv_;
  bool in_reply_ = false, ends_newline_ = true;
  bool acting_ = false;
  std::string acting_name_;
  long next_tick_ = 10;
  Clock::time_point started_;
  Asked question_;
  Given answer_;
  bool asking_ = false, answered_ = false;
};

}  // namespace oppx::cli

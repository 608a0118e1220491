// Terminal (terminal.h): the chat in a tmux pane of the test's own tmux server.
#include "tests/support/terminal.h"

#include <unistd.h>

namespace oppx::test {

Terminal::Terminal(const TempHome& home, const std::string& server_url, const std::vector<std::string>& args,
                   const std::string& program)
    : name_("oppx-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count_)) {
  const std::string& h = home.root();
  std::string cmd = "env HOME=" + h + " XDG_RUNTIME_DIR=" + h + "/run XDG_STATE_HOME=" + h +
                    "/state XDG_CONFIG_HOME=" + h + "/config XDG_CACHE_HOME=" + h + "/cache XDG_DATA_HOME=" + h +
                    "/data OPPX_SERVER=" + server_url + " " + program;
  for (const auto& a : args) cmd += " " + a;
  cmd += "; echo oppx-exited-$?";
  // The pane stays when oppx has exited, so that its last screen can still be read; what the pane
  // sends to the clipboard (OSC 52) becomes a paste buffer, so that a test can see none did.
  started_ = tmux({"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";", "new-session", "-d", "-s",
                   name_, "-x", "120", "-y", "50", cmd})
                 .exit_code == 0;
  // What the pane prints also goes to a file, whose changes wake wait_for.
  output_ = h + "/" + name_ + ".pane";
  if (started_) tmux({"set-option", "-g", "set-clipboard", "on"});
  if (started_) tmux({"pipe-pane", "-t", name_, "-o", "cat >> '" + output_ + "'"});
}

Terminal::~Terminal() { tmux({"kill-server"}); }

void Terminal::keys(const std::vector<std::string>& k) {
  std::vector<std::string> a{"send-keys", "-t", name_};
  a.insert(a.end(), k.begin(), k.end());
  tmux(a);
}

void Terminal::type(const std::string& text) { tmux({"send-keys", "-t", name_, "-l", text}); }

void Terminal::paste(const std::string& text) {
  tmux({"set-buffer", "--", text});
  tmux({"paste-buffer", "-p", "-t", name_});
}

std::string Terminal::screen() { return tmux({"capture-pane", "-p", "-J", "-S", "-500", "-t", name_}).out; }

std::string Terminal::title() { return tmux({"display-message", "-p", "-t", name_, "#{pane_title}"}).out; }

std::string Terminal::buffers() { return tmux({"list-buffers"}).out; }

int Terminal::count(const std::string& text) {
  std::string s = screen();
  int seen = 0;
  for (auto at = s.find(text); at != std::string::npos; at = s.find(text, at + 1)) ++seen;
  return seen;
}

bool Terminal::wait_for(const std::string& text, int nth, std::chrono::milliseconds timeout) {
  return when_file_changes(
      output_, [&] { return count(text) >= nth; }, timeout);
}

Result Terminal::tmux(std::vector<std::string> args) {
  args.insert(args.begin(), {"tmux", "-L", name_, "-f", "/dev/null"});
  return run(args, std::chrono::seconds(10));
}

}  // namespace oppx::test

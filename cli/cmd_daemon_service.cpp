// oppx daemon install-service: the units of packaging/systemd (generated/systemd_units.h, made by
// CMake from those files) written to $XDG_CONFIG_HOME/systemd/user with ExecStart set to the oppxd
// beside this oppx, then `systemctl --user daemon-reload` and `enable --now oppxd.socket`.
// Blocks on systemctl; a machine without it, or without a user bus, is told what to run by hand.
#include "cli/daemon_service.h"

#include "cli/daemon_client.h"
#include "common/fs.h"
#include "common/paths.h"
#include "common/text.h"
#include "systemd_units.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::cli {

namespace {

constexpr std::string_view kByHand = "systemctl --user daemon-reload && systemctl --user enable --now oppxd.socket";

// A path as systemd reads the program of ExecStart= (systemd.service(5), "Command lines"): quoted
// when it holds anything but plain characters, with % doubled so that it is no specifier. ($ stays:
// variables are expanded in the arguments only.) "" for a path systemd refuses as a program
// ("Executable name contains special characters"): a control character, \, " or '.
std::string unit_word(const std::string& path) {
  std::string out;
  bool plain = true;
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '"' || c == '\'') return {};
    if (c == '%') out += '%';
    out += static_cast<char>(c);
    plain = plain && (std::isalnum(c) || std::strchr("/._+-@", c));
  }
  return plain ? out : "\"" + out + "\"";
}

// The folder this oppx runs from (resolved /proc/self/exe) with oppxd; "" when there is none.
std::string oppxd_beside_us() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  self[n] = '\0';
  return dirname_of(self) + "/oppxd";
}

// $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user (the folder above config_dir()).
std::string unit_folder() { return dirname_of(paths::config_dir()) + "/systemd/user"; }

// The socket the units serve: %t, the user manager's $XDG_RUNTIME_DIR; "" when this shell has none.
std::string unit_socket() {
  const char* rt = std::getenv("XDG_RUNTIME_DIR");
  return rt && rt[0] == '/' ? std::string(rt) + "/oppx/oppxd.sock" : std::string();
}

boost::system::result<void, std::string> make_folders(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return fmt::format("{} is not a folder; move it away and run this again", dir);
  }
  if (std::string parent = dirname_of(dir); parent != dir) {
    if (auto r = make_folders(parent); !r) return r;
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fmt::format("cannot create {}: {}", dir, std::strerror(errno));
  return {};
}

struct Ran {
  int spawn_error = 0;  // posix_spawnp's error (ENOENT: no systemctl on PATH)
  int status = -1;      // the exit code, 128 + a signal
  std::string output;   // its stdout and stderr
};

Ran systemctl(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("systemctl"), const_cast<char*>("--user")};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Ran ran;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Ran{errno};
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
  pid_t pid = -1;
  ran.spawn_error = ::posix_spawnp(&pid, "systemctl", &fa, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ran.output = read_and_close(out[0], 64 * 1024);
  if (ran.spawn_error != 0) return ran;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ran.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return ran;
}

// Why systemctl could not do it, and what to run instead; the exit code of a failed command.
int not_enabled(const std::string& step, const Ran& ran) {
  if (ran.spawn_error == ENOENT) {
    fmt::print(stderr,
               "oppx: systemctl was not found, so the units are written but not enabled. On a machine with "
               "systemd, run:\n  {}\nWithout it, oppx keeps starting oppxd by itself.\n",
               kByHand);
    return kExitFailed;
  }
  std::string said = escape_controls(ran.output, true);
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  bool no_bus = said.find("Failed to connect to bus") != std::string::npos ||
                said.find("$DBUS_SESSION_BUS_ADDRESS") != std::string::npos;
  if (ran.spawn_error != 0) said = std::strerror(ran.spawn_error);
  fmt::print(stderr, "oppx: `systemctl --user {}` failed{}: {}\n", step,
             ran.status > 0 ? fmt::format(" (exit {})", ran.status) : "", said);
  fmt::print(stderr,
             "oppx: {}the units are written but not enabled. From a login session of this user, run:\n  {}\n"
             "Until then oppx keeps starting oppxd by itself.\n",
             no_bus ? "there is no systemd user bus here (a shell without a login session, e.g. su or a "
                      "container): "
                    : "",
             kByHand);
  return kExitFailed;
}

int install_service(Context& ctx) {
  const Command& self = *find_command("daemon", "install-service");
  const bool no_enable = take_flag(ctx.args, "--no-enable");
  const bool print = take_flag(ctx.args, "--print");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);

  const std::string oppxd = oppxd_beside_us();
  if (oppxd.empty() || ::access(oppxd.c_str(), X_OK) != 0) {
    fmt::print(stderr, "oppx: there is no oppxd beside this oppx ({}); install both in one folder first\n",
               escape_controls(oppxd.empty() ? "/proc/self/exe unreadable" : oppxd));
    return kExitFailed;
  }
  ServiceUnits units = service_units(oppxd);
  if (!units.error.empty()) {
    fmt::print(stderr, "oppx: {}\n", units.error);
    return kExitFailed;
  }
  const std::string dir = unit_folder();
  if (print) {
    fmt::print("# {}/oppxd.socket\n{}\n# {}/oppxd.service\n{}", escape_controls(dir), units.socket,
               escape_controls(dir), units.service);
    return kExitOk;
  }
  if (auto r = make_folders(dir); !r) {
    fmt::print(stderr, "oppx: {}\n", escape_controls(r.error()));
    return kExitFailed;
  }
  for (auto [name, text] : {std::pair{"oppxd.socket", &units.socket}, std::pair{"oppxd.service", &units.service}}) {
    if (auto w = atomic_write(dir + "/" + name, *text, 0644); !w) {
      fmt::print(stderr, "oppx: {}\n", escape_controls(w.error()));
      return kExitFailed;
    }
  }
  fmt::print("wrote {0}/oppxd.socket and {0}/oppxd.service (ExecStart={1})\n", escape_controls(dir),
             escape_controls(oppxd));
  const std::string served = unit_socket();
  if (served != ctx.socket) {
    fmt::print(stderr,
               "oppx: note: the socket unit listens on $XDG_RUNTIME_DIR/oppx/oppxd.sock, but this oppx uses {} "
               "($OPPX_SOCKET, --socket, or no XDG_RUNTIME_DIR here); oppx and your plugins must use the unit's "
               "path for systemd to start oppxd\n",
               escape_controls(ctx.socket));
  }
  if (no_enable) {
    fmt::print("not enabled (--no-enable); to enable:\n  {}\n", kByHand);
    return kExitOk;
  }
  if (Ran r = systemctl({"daemon-reload"}); r.spawn_error != 0 || r.status != 0) return not_enabled("daemon-reload", r);
  // A daemon that oppx started holds the socket's path and lock: systemd would bind the path anew
  // and every oppxd it started would find the lock taken. It stops first; the next command's
  // connection starts oppxd through systemd.
  if (served == ctx.socket && lock_holder(ctx.socket) != 0) {
    fmt::print("stopping the running oppxd, so that systemd serves {}\n", escape_controls(ctx.socket));
    if (int rc = stop_daemon(ctx.socket, true); rc != kExitOk) return rc;
  }
  if (Ran r = systemctl({"enable", "--now", "oppxd.socket"}); r.spawn_error != 0 || r.status != 0)
    return not_enabled("enable --now oppxd.socket", r);
  fmt::print(
      "enabled oppxd.socket: systemd now starts oppxd on the first connection (`systemctl --user status "
      "oppxd`; `oppx daemon stop` ends it until the next one)\n");
  return kExitOk;
}

}  // namespace

ServiceUnits service_units(const std::string& oppxd) {
  std::string word = unit_word(oppxd);
  if (word.empty()) {
    return {{},
            {},
            fmt::format("the path of oppxd ({}) holds a character systemd refuses in a program's path (a "
                        "control character, \\, \" or '); install oppx in another folder",
                        escape_controls(oppxd))};
  }
  std::string service = kServiceUnit;
  auto at = service.find("\nExecStart=");
  if (at == std::string::npos) return {{}, {}, "the built-in oppxd.service has no ExecStart= line"};
  auto end = service.find('\n', at + 1);
  service.replace(at + 1, end - at - 1, "ExecStart=" + word);
  return {kSocketUnit, service, {}};
}

std::vector<Command> daemon_service_commands() {
  return {
      {"daemon", "install-service", "[--no-enable] [--print]",
       "Have systemd start the daemon: write its user units and enable oppxd.socket.",
       "Writes oppxd.socket and oppxd.service (0644) to $XDG_CONFIG_HOME/systemd/user (default\n"
       "~/.config/systemd/user), with ExecStart= the oppxd beside this oppx, then runs\n"
       "`systemctl --user daemon-reload` and `systemctl --user enable --now oppxd.socket` (a daemon\n"
       "oppx started is stopped first). The socket is $XDG_RUNTIME_DIR/oppx/oppxd.sock; its first\n"
       "connection starts oppxd. Without systemctl or a user bus the units stay written and the\n"
       "commands to run are printed (exit 1). Without systemd, oppx starts oppxd by itself.\n"
       "  --no-enable   write the units only\n"
       "  --print       print the units; write nothing",
       install_service},
  };
}

}  // namespace oppx::cli

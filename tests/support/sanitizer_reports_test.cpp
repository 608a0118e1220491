// tests/support/sanitizer_reports: the harness sees what the sanitizers of the test's processes
// report, on planted logs in every build and, in an AddressSanitizer build, from a real detached
// daemon's leak at exit.
#include "tests/support/sanitizer_reports.h"

#include "tests/support/harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace oppx::test {
namespace {

void plant(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

TEST(SanitizerReports, FindsEveryKindOfReportAndNamesItsFile) {
  TempHome home;
  const std::string dir = home.sanitizer_dir();
  EXPECT_EQ(sanitizer_reports(dir), "");
  plant(dir + "/report.11", "nothing wrong here\n");
  EXPECT_EQ(sanitizer_reports(dir), "") << "a file without a report is not one";
  const std::pair<const char*, const char*> kinds[] = {
      {"report.12", "==12==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010\n"},
      {"report.13", "daemon/router.cpp:40:7: runtime error: signed integer overflow\n"},
      {"report.14", "==14==ERROR: LeakSanitizer: detected memory leaks\n"},
      {"report.15", "WARNING: ThreadSanitizer: data race (pid=15)\n"},
  };
  for (auto [name, text] : kinds) {
    plant(dir + "/" + name, text);
    std::string found = sanitizer_reports(dir);
    EXPECT_NE(found.find(dir + "/" + name), std::string::npos) << found;
    EXPECT_NE(found.find(text), std::string::npos) << found;
    EXPECT_EQ(found.find("nothing wrong here"), std::string::npos) << found;
    std::remove((dir + "/" + name).c_str());  // the destructor of home would fail the test otherwise
  }
}

TEST(SanitizerReports, ChildrenGetTheFolderAndKeepTheOtherOptions) {
  const char* before = std::getenv("UBSAN_OPTIONS");
  const std::string saved = before ? before : "";
  ::setenv("UBSAN_OPTIONS", "print_stacktrace=1:log_path=/nowhere/x:halt_on_error=1", 1);
  {
    TempHome home;
    Result r = run({"sh", "-c", "printf %s \"$UBSAN_OPTIONS\""});
    EXPECT_EQ(r.out, "print_stacktrace=1:halt_on_error=1:log_path=" + home.sanitizer_dir() + "/report");
  }
  if (before) {
    ::setenv("UBSAN_OPTIONS", saved.c_str(), 1);
  } else {
    ::unsetenv("UBSAN_OPTIONS");
  }
}

// Most tests (the browser's among them) start their daemon through the CLI, as users do: the
// daemon that `oppx daemon start` spawns must still write its reports where the harness reads.
TEST(SanitizerReports, ADaemonTheCliStartsWritesToTheFolder) {
  TempHome home;
  ASSERT_TRUE(hello_client(home));
  auto pid = daemon_pid(home.socket());
  ASSERT_TRUE(pid);
  // Each entry after a NUL, the first one too.
  std::string environ_text = '\0' + read_file("/proc/" + std::to_string(*pid) + "/environ");
  for (const char* name : {"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS="}) {
    auto at = environ_text.find('\0' + std::string(name));
    ASSERT_NE(at, std::string::npos) << name;
    std::string value(environ_text.c_str() + at + 1);
    EXPECT_NE(value.find("log_path=" + home.sanitizer_dir() + "/report"), std::string::npos) << value;
  }
}

#if defined(__SANITIZE_ADDRESS__)
// A leak planted in oppxd (daemon/main.cpp, AddressSanitizer builds only) is reported once the
// harness has stopped the detached daemon, in a file the harness reads.
TEST(SanitizerReports, SeesTheLeakOfADetachedDaemonAtItsExit) {
  TempHome home;
  ::setenv("OPPXD_TEST_PLANT_LEAK", "1", 1);
  {
    Result start = run({OPPXD_BIN, "--socket", home.socket()});
    ::unsetenv("OPPXD_TEST_PLANT_LEAK");
    ASSERT_EQ(start.exit_code, 0) << start.err;
  }
  ASSERT_TRUE(daemon_pid(home.socket()));
  home.stop_daemon();
  std::string found = sanitizer_reports(home.sanitizer_dir());
  EXPECT_NE(found.find("ERROR: LeakSanitizer"), std::string::npos) << found;
  EXPECT_NE(found.find("plant_leak_for_the_harness_test"), std::string::npos) << found;
  ASSERT_EQ(std::system(("rm -f '" + home.sanitizer_dir() + "'/report.*").c_str()), 0);
}

// The same leak in a daemon that the CLI started, as hello_client does for most tests.
TEST(SanitizerReports, SeesTheLeakOfADaemonTheCliStarted) {
  TempHome home;
  ::setenv("OPPXD_TEST_PLANT_LEAK", "1", 1);
  auto c = hello_client(home);
  ::unsetenv("OPPXD_TEST_PLANT_LEAK");
  ASSERT_TRUE(c);
  home.stop_daemon();
  std::string found = sanitizer_reports(home.sanitizer_dir());
  EXPECT_NE(found.find("plant_leak_for_the_harness_test"), std::string::npos) << found;
  ASSERT_EQ(std::system(("rm -f '" + home.sanitizer_dir() + "'/report.*").c_str()), 0);
}
#endif

}  // namespace
}  // namespace oppx::test

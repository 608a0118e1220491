// Transcript tests of the socket API: each tests/transcripts/*.txt is a conversation with a fresh
// oppxd. "> line" is sent as it is; each following "< json" is the next reply, matched loosely:
// objects need the keys shown (more are allowed), the string "<any>" matches any value, arrays
// and other values must be equal. "< closed" expects the daemon to end the connection.
#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace oppx::test {
namespace {

namespace json = boost::json;

bool matches(const json::value& want, const json::value& got, std::string& why, const std::string& path) {
  if (want.is_string() && want.as_string() == "<any>") return true;
  if (want.is_object()) {
    if (!got.is_object()) return why = path + ": expected an object", false;
    for (auto& [k, v] : want.as_object()) {
      const json::value* g = got.as_object().if_contains(k);
      if (!g) return why = path + "." + std::string(k) + ": missing", false;
      if (!matches(v, *g, why, path + "." + std::string(k))) return false;
    }
    return true;
  }
  if (want.is_array() && got.is_array() && want.as_array().size() == got.as_array().size()) {
    for (std::size_t i = 0; i < want.as_array().size(); ++i) {
      if (!matches(want.as_array()[i], got.as_array()[i], why, path + "[" + std::to_string(i) + "]")) return false;
    }
    return true;
  }
  if (want != got) return why = path + ": expected " + json::serialize(want) + ", got " + json::serialize(got), false;
  return true;
}

class Transcript : public ::testing::TestWithParam<std::string> {};

TEST_P(Transcript, Replays) {
  TempHome home;
  DaemonProcess d(home);
  ASSERT_GT(d.pid(), 0) << d.start_result().err;
  auto c = SyncClient::connect(home.socket());
  ASSERT_TRUE(c);
  std::ifstream in(GetParam());
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("> ", 0) == 0) {
      ASSERT_TRUE(c->write_raw(line.substr(2) + "\n")) << "line " << n;
    } else if (line == "< closed") {
      auto got = c->read_line(5s);
      EXPECT_FALSE(got) << "line " << n << ": expected the connection to close, got " << *got;
    } else if (line.rfind("< ", 0) == 0) {
      auto got = c->read_line(5s);
      ASSERT_TRUE(got) << "line " << n << ": no reply";
      std::string why;
      EXPECT_TRUE(matches(json::parse(line.substr(2)), json::parse(*got), why, "reply"))
          << "line " << n << ": " << why << "\n  got " << *got;
    }
  }
  EXPECT_GT(n, 0);
}

std::vector<std::string> transcripts() {
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(OPPX_TRANSCRIPTS)) {
    if (e.path().extension() == ".txt") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

INSTANTIATE_TEST_SUITE_P(Socket, Transcript, ::testing::ValuesIn(transcripts()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace oppx::test

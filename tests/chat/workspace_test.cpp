// read and grep confined to the workspace (chat/workspace.h), on real files, links, a FIFO and a
// device in a temp HOME: a path out of the repository is outside, a credential or oppx's own file
// is denied whatever the workspace, and nothing but a regular file or a folder is opened.
#include "chat/builtins.h"
#include "chat/workspace.h"
#include "common/paths.h"
#include "tests/support/harness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::test {
namespace {

namespace fs = std::filesystem;
using chat::Place;

constexpr std::size_t kCap = 100000;
const std::string kKey =
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

struct WorkspaceTest : ::testing::Test {
  TempHome home;
  std::string repo = home.root() + "/repo";
  std::string elsewhere = home.root() + "/elsewhere";

  void SetUp() override {
    fs::create_directories(repo + "/.git");
    write(repo + "/a.txt", "hello needle\n");
    write(repo + "/sub/b.txt", "second needle\n");
    write(elsewhere + "/secret.txt", "needle from elsewhere\n");
    write(home.root() + "/.ssh/id_rsa", kKey);
    home.write_mcp_config("");
  }

  chat::Workspace ws() const { return chat::Workspace::of(repo); }
};

// A call that must come back at once, never blocking on a FIFO: run on a thread with a deadline;
// on a timeout the FIFO gets a writer (and EOF), so that the test fails instead of hanging.
template <class F>
chat::BuiltinResult within(F f, const std::string& fifo) {
  auto fut = std::async(std::launch::async, f);
  if (fut.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
    ADD_FAILURE() << "it blocked on the FIFO";
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  return fut.get();
}

TEST_F(WorkspaceTest, ReadsInsideTheRepositoryFromASubfolder) {
  auto w = chat::Workspace::of(repo + "/sub");
  ASSERT_EQ(w.roots().size(), 1u);
  EXPECT_EQ(w.roots()[0], repo);
  auto r = chat::read_action(w, "../a.txt", kCap);
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.text, "hello needle\n");
  EXPECT_FALSE(r.outside);
  EXPECT_EQ(r.resolved, repo + "/a.txt");
  EXPECT_FALSE(r.sensitive);
}

TEST_F(WorkspaceTest, APathOutOfTheWorkspaceIsOutsideAndNotRead) {
  for (const std::string& p : std::vector<std::string>{"../../../../../../etc/passwd", "/etc/passwd",
                                                       elsewhere + "/secret.txt", "../elsewhere"}) {
    EXPECT_EQ(ws().check(p).place, Place::kOutside) << p;
    auto r = chat::read_action(ws(), p, kCap);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_TRUE(r.outside) << p;
    EXPECT_NE(r.text.find("outside the workspace"), std::string::npos) << r.text;
  }
  // Once the user said yes.
  auto r = chat::read_action(ws(), "../elsewhere/secret.txt", kCap, true);
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_TRUE(r.outside);
  EXPECT_EQ(r.resolved, elsewhere + "/secret.txt");
}

TEST_F(WorkspaceTest, CredentialsAreDeniedEvenWhenTheWorkspaceIsHomeAndAfterAYes) {
  chat::Workspace at_home(home.root(), {home.root()});
  for (const std::string& p : std::vector<std::string>{"~/.ssh/id_rsa", ".ssh/id_rsa", home.root() + "/.ssh",
                                                       home.root() + "/.ssh/../.ssh/id_rsa"}) {
    EXPECT_EQ(at_home.check(p).place, Place::kDenied) << p;
    auto r = chat::read_action(at_home, p, kCap, true);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_EQ(r.text.find("BEGIN"), std::string::npos);
    EXPECT_NE(r.text.find("never reads"), std::string::npos) << r.text;
    auto g = chat::grep_action(at_home, "PRIVATE", p, kCap, true);
    EXPECT_FALSE(g.ok) << p;
    EXPECT_EQ(g.text.find("b3Bl"), std::string::npos);
  }
  EXPECT_EQ(ws().check("~/.ssh/id_rsa").place, Place::kDenied);
  // A grep over the whole of HOME skips the keys.
  auto g = chat::grep_action(at_home, "BEGIN|needle", "", kCap);
  EXPECT_TRUE(g.ok) << g.text;
  EXPECT_NE(g.text.find("repo/a.txt:1:"), std::string::npos) << g.text;
  EXPECT_EQ(g.text.find("PRIVATE"), std::string::npos) << g.text;
}

TEST_F(WorkspaceTest, OppxsOwnFilesAreDenied) {
  std::string mcp = paths::user_mcp_config();
  ASSERT_TRUE(fs::exists(mcp));
  for (const auto& w : {chat::Workspace(home.root(), {home.root()}), ws()}) {
    auto r = chat::read_action(w, mcp, kCap, true);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.text.find("never reads"), std::string::npos) << r.text;
  }
  EXPECT_EQ(ws().check(paths::state_dir() + "/permissions.json").place, Place::kDenied);
}

TEST_F(WorkspaceTest, ALinkInTheRepositoryToAKeyIsDenied) {
  fs::create_symlink(home.root() + "/.ssh/id_rsa", repo + "/innocent.txt");
  fs::create_symlink("../.ssh", repo + "/keys");
  for (const std::string& p : std::vector<std::string>{"innocent.txt", "keys/id_rsa"}) {
    EXPECT_EQ(ws().check(p).place, Place::kDenied) << p;
    auto r = chat::read_action(ws(), p, kCap, true);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_EQ(r.text.find("BEGIN"), std::string::npos) << r.text;
  }
  // grep neither follows it nor names what is behind it.
  auto g = chat::grep_action(ws(), "PRIVATE", "", kCap);
  EXPECT_EQ(g.text, "no match");
}

TEST_F(WorkspaceTest, ALinkInTheRepositoryToAFileElsewhereIsOutside) {
  fs::create_symlink(elsewhere + "/secret.txt", repo + "/link.txt");
  fs::create_symlink("../../etc/passwd", repo + "/passwd");
  auto c = ws().check("link.txt");
  EXPECT_EQ(c.place, Place::kOutside);
  EXPECT_EQ(c.real, elsewhere + "/secret.txt");
  EXPECT_NE(c.why.find("leads to"), std::string::npos) << c.why;
  auto r = chat::read_action(ws(), "link.txt", kCap);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.outside);
  EXPECT_EQ(r.text.find("from elsewhere"), std::string::npos);
  EXPECT_EQ(ws().check("passwd").place, Place::kOutside);
  r = chat::read_action(ws(), "link.txt", kCap, true);
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_TRUE(r.outside);
}

TEST_F(WorkspaceTest, ALinkInsideToInsideIsRead) {
  fs::create_symlink("sub/b.txt", repo + "/b-link.txt");
  fs::create_symlink("sub", repo + "/sub-link");
  auto r = chat::read_action(ws(), "b-link.txt", kCap);
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_FALSE(r.outside);
  EXPECT_EQ(r.resolved, repo + "/sub/b.txt");
  EXPECT_TRUE(chat::read_action(ws(), "sub-link/b.txt", kCap).ok);
}

TEST_F(WorkspaceTest, AFifoIsRefusedAtOnce) {
  std::string fifo = repo + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = within([&] { return chat::read_action(ws(), "pipe", kCap); }, fifo);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("FIFO"), std::string::npos) << r.text;
  auto g = within([&] { return chat::grep_action(ws(), "x", "pipe", kCap); }, fifo);
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.text.find("FIFO"), std::string::npos) << g.text;
}

TEST_F(WorkspaceTest, ADeviceIsRefused) {
  fs::create_symlink("/dev/zero", repo + "/zero");
  EXPECT_EQ(ws().check("zero").place, Place::kOutside);
  for (const std::string& p : std::vector<std::string>{"/dev/zero", "zero"}) {
    auto r = chat::read_action(ws(), p, kCap, true);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_NE(r.text.find("character device"), std::string::npos) << r.text;
  }
}

TEST_F(WorkspaceTest, GrepSkipsLinksOutAndFifosAndKeepsRelativeNames) {
  std::string fifo = repo + "/sub/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(elsewhere + "/secret.txt", repo + "/out.txt");
  fs::create_symlink(elsewhere, repo + "/out-dir");
  auto g = within([&] { return chat::grep_action(ws(), "needle", "", kCap); }, fifo);
  EXPECT_TRUE(g.ok) << g.text;
  EXPECT_NE(g.text.find("a.txt:1:hello needle"), std::string::npos) << g.text;
  EXPECT_NE(g.text.find("sub/b.txt:1:second needle"), std::string::npos) << g.text;
  EXPECT_EQ(g.text.find("elsewhere"), std::string::npos) << g.text;
  EXPECT_FALSE(g.outside);
  // A folder out of the workspace, by name or through the link.
  for (const std::string& p : std::vector<std::string>{"../elsewhere", "out-dir"}) {
    auto o = chat::grep_action(ws(), "needle", p, kCap);
    EXPECT_FALSE(o.ok) << p;
    EXPECT_TRUE(o.outside) << p;
  }
}

TEST_F(WorkspaceTest, AFileIsReadUpToFourMiB) {
  write(repo + "/big.txt", std::string(5 << 20, 'x'));
  auto r = chat::read_action(ws(), "big.txt", 8 << 20);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.text.size(), std::size_t{4 << 20});
}

TEST_F(WorkspaceTest, FoldersFromConfigAndAddFolderAreInside) {
  write(paths::config_dir() + "/config.json", R"({"workspace_folders": [")" + elsewhere + R"(", "~/.ssh"]})");
  auto w = ws();
  EXPECT_EQ(w.check(elsewhere + "/secret.txt").place, Place::kInside);
  EXPECT_EQ(w.roots().size(), 2u);  // ~/.ssh is never one
  EXPECT_EQ(w.check("~/.ssh/id_rsa").place, Place::kDenied);
  chat::Workspace plain(repo, {repo});
  EXPECT_EQ(plain.check(elsewhere + "/secret.txt").place, Place::kOutside);
  EXPECT_EQ(plain.add_folder(elsewhere), "");
  EXPECT_EQ(plain.check(elsewhere + "/secret.txt").place, Place::kInside);
  EXPECT_NE(plain.add_folder("~/.ssh").find("never reads"), std::string::npos);
}

TEST_F(WorkspaceTest, SecretLookingReadsAreMarked) {
  write(repo + "/.env", "DEBUG=1\n");
  write(repo + "/notes.txt", "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n");
  write(repo + "/deploy/key.pem", kKey);
  for (const std::string& p : std::vector<std::string>{".env", "notes.txt", "deploy/key.pem"}) {
    auto r = chat::read_action(ws(), p, kCap);
    EXPECT_TRUE(r.ok) << p;
    EXPECT_TRUE(r.sensitive) << p;
  }
  EXPECT_FALSE(chat::read_action(ws(), "a.txt", kCap).sensitive);
  EXPECT_TRUE(chat::grep_action(ws(), "token", "", kCap).sensitive);
  EXPECT_FALSE(chat::grep_action(ws(), "needle", "", kCap).sensitive);
}

TEST(LooksSensitive, KeysEnvFilesAndTokens) {
  using chat::looks_sensitive;
  EXPECT_TRUE(looks_sensitive("x", kKey));
  EXPECT_TRUE(looks_sensitive("x", "-----BEGIN RSA PRIVATE KEY-----\nMIIE"));
  EXPECT_TRUE(looks_sensitive("x", "-----BEGIN EC PRIVATE KEY-----"));
  EXPECT_TRUE(looks_sensitive("/p/.env", ""));
  EXPECT_TRUE(looks_sensitive("config/.env.production", ""));
  EXPECT_TRUE(looks_sensitive("/home/u/.ssh/id_ed25519", ""));
  EXPECT_TRUE(looks_sensitive("id_rsa", ""));
  EXPECT_TRUE(looks_sensitive("/home/u/.netrc", ""));
  EXPECT_TRUE(looks_sensitive("x", "GITHUB_TOKEN=ghp_" + std::string(36, 'a')));
  EXPECT_TRUE(looks_sensitive("x", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"));
  EXPECT_TRUE(looks_sensitive("x", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx"));
  EXPECT_TRUE(looks_sensitive("x", "\"sk-ant-api03-abcdefghijklmnop\""));
  EXPECT_TRUE(looks_sensitive("x", "slack xoxb-1234567890-abcdefghij"));
  EXPECT_TRUE(looks_sensitive("x", "xoxp-1234567890-abcdef"));
  EXPECT_TRUE(looks_sensitive("x", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"));

  EXPECT_FALSE(looks_sensitive("README.md", "Set GITHUB_TOKEN to a token; see the docs."));
  EXPECT_FALSE(looks_sensitive(".env.example", "API_KEY=\n"));
  EXPECT_FALSE(looks_sensitive("id_rsa.pub", "ssh-ed25519 AAAA"));
  EXPECT_FALSE(looks_sensitive("x", "-----BEGIN PUBLIC KEY-----\nMIIB"));
  EXPECT_FALSE(looks_sensitive("x", "task-runner-for-the-whole-build-system"));
  EXPECT_FALSE(looks_sensitive("x", "ghp_short"));
  EXPECT_FALSE(looks_sensitive("x", "AKIA_NOT_A_KEY"));
  EXPECT_FALSE(looks_sensitive("x", "sk-abc"));
}

}  // namespace
}  // namespace oppx::test

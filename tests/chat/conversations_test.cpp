// Conversations and the browser's output are pruned past config.json's "retention_days", and
// `oppx chat --forget` removes a folder's conversations: files made old with utimensat.
#include "chat/conversations.h"
#include "common/paths.h"
#include "common/retention.h"
#include "tests/support/harness.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// Sets the modification time of `path` (not following a link) `days` back.
void age(const std::string& path, int days) {
  timespec t[2];
  ::clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= static_cast<time_t>(days) * 86400;
  t[1] = t[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW), 0) << path;
}

std::string saved(const std::string& cwd) {
  chat::Conversation c{{}, cwd, {boost::json::object{{"role", "user"}, {"content", "hi"}}}};
  EXPECT_EQ(chat::save_conversation(c), "");
  return c.path;
}

TEST(Retention, DefaultAndConfigured) {
  TempHome home;
  EXPECT_EQ(retention(), std::chrono::hours(24 * 30));
  write(paths::config_dir() + "/config.json", R"({"retention_days": 7})");
  EXPECT_EQ(retention(), std::chrono::hours(24 * 7));
  write(paths::config_dir() + "/config.json", R"({"retention_days": 0})");
  EXPECT_EQ(retention(), std::chrono::hours(0));
  write(paths::config_dir() + "/config.json", R"({"retention_days": "soon"})");
  EXPECT_EQ(retention(), std::chrono::hours(24 * 30));
}

TEST(Retention, PrunesWhatIsOldWholeAndKeepsWhatChangedLately) {
  TempHome home;
  std::string dir = home.root() + "/out";
  write(dir + "/old/a.yml", "old");
  write(dir + "/mixed/a.yml", "old");
  write(dir + "/mixed/b.yml", "new");
  write(dir + "/old.log", "old");
  write(dir + "/new.log", "new");
  fs::create_symlink(home.root() + "/kept", dir + "/old-link");
  write(home.root() + "/kept", "the link's target stays");
  for (auto p : {"/old/a.yml", "/old", "/mixed/a.yml", "/mixed", "/old.log", "/old-link"}) age(dir + p, 40);
  EXPECT_EQ(prune_older_than(dir, std::chrono::hours(24 * 30)), 3);
  EXPECT_FALSE(fs::exists(dir + "/old"));
  EXPECT_FALSE(fs::exists(dir + "/old.log"));
  EXPECT_FALSE(fs::is_symlink(dir + "/old-link"));
  EXPECT_TRUE(fs::exists(home.root() + "/kept"));
  EXPECT_TRUE(fs::exists(dir + "/mixed/a.yml"));
  EXPECT_TRUE(fs::exists(dir + "/new.log"));
  EXPECT_EQ(prune_older_than(dir, std::chrono::hours(0)), 0);
}

TEST(Conversations, OldOnesArePrunedAtTheFirstNewOne) {
  TempHome home;
  std::string old_one = saved("/somewhere/old");
  std::string kept = saved("/somewhere/recent");
  age(old_one, 31);
  EXPECT_EQ(chat::prune_conversations(retention()), 1);
  EXPECT_FALSE(fs::exists(old_one));
  EXPECT_FALSE(fs::exists(chat::conversations_dir("/somewhere/old")));
  EXPECT_TRUE(fs::exists(kept));
  write(paths::config_dir() + "/config.json", R"({"retention_days": 0})");
  age(kept, 400);
  EXPECT_EQ(chat::prune_conversations(retention()), 0);
  EXPECT_TRUE(fs::exists(kept));
}

TEST(Conversations, ForgetRemovesThisFoldersOnly) {
  TempHome home;
  InRepository repo(home);
  saved(repo.root());
  saved(repo.root());
  std::string other = saved("/somewhere/else");
  auto r = oppx({"chat", "--forget"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Forgot 2 conversations of " + repo.root()), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(chat::conversations_dir(repo.root())));
  EXPECT_TRUE(fs::exists(other));
  r = oppx({"chat", "--forget"});
  EXPECT_NE(r.out.find("Forgot 0 conversations"), std::string::npos) << r.out;
  EXPECT_NE(oppx({"help", "chat"}).out.find("--forget"), std::string::npos);
}

TEST(Conversations, TheDaemonPrunesOldBrowserOutputAtItsStart) {
  TempHome home;
  std::string dir = paths::cache_dir() + "/browser";
  write(dir + "/old-session/.playwright-mcp/page.yml", "what a page said");
  write(dir + "/new-session/server.log", "");
  for (auto p : {"/old-session/.playwright-mcp/page.yml", "/old-session/.playwright-mcp", "/old-session"})
    age(dir + p, 31);
  ASSERT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  EXPECT_TRUE(when_files_change(dir, [&] { return !fs::exists(dir + "/old-session"); }));
  EXPECT_TRUE(fs::exists(dir + "/new-session/server.log"));
  oppx({"daemon", "stop"});
}

}  // namespace
}  // namespace oppx::test

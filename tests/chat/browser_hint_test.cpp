// The agent's browser rules that need no browser: which messages get the running-page hint (and
// which must not), and the page guard (a read repeats only when nothing changed the page; the
// same change more than five times in a row is a loop).
#include "chat/browser.h"

#include <gtest/gtest.h>

namespace oppx::chat {
namespace {

TEST(BrowserHint, MessagesThatNeedARunningPageGetIt) {
  for (const char* m : {
           "the app at localhost:5173 shows nothing",
           "open http://127.0.0.1:8080/admin and check the table",
           "check https://example.com/pricing for the new plan",
           "why is the page blank when I start the dev server?",
           "are there console errors on the settings page?",
           "see what the page actually shows after login",
           "I get a blank page after the last commit",
           "the site won't load since the upgrade",
           "it runs on port 3000, click through the signup",
           "look at the network requests the form sends",
           "open it in the browser and try the menu",
           "the preview at my-app.test:4000 is broken",
       }) {
    EXPECT_TRUE(needs_running_page(m)) << m;
  }
}

TEST(BrowserHint, MessagesAboutTheCodeDoNotGetIt) {
  for (const char* m : {
           "add a footer to the home page component",
           "rename the Page class to Screen",
           "fix the failing unit test in src/utils",
           "write a report of 12 lines about the API",
           "the export function should support ports of call",
           "update the README with the new install steps",
           "make the console logger print timestamps",
           "the config has a timeout: 30 that is too short",
           "refactor the router into smaller files",
           "explain what useEffect does in App.tsx",
       }) {
    EXPECT_FALSE(needs_running_page(m)) << m;
  }
}

TEST(BrowserHint, TheNoteNamesWhatCanSeeThePage) {
  EXPECT_NE(browser_hint(false).find("the browser action"), std::string::npos);
  EXPECT_NE(browser_hint(true).find("playwright tools"), std::string::npos);
  EXPECT_NE(browser_hint(false).find("grep and read"), std::string::npos);
}

TEST(PageGuard, AReadRepeatsOnlyWhenNothingChangedSince) {
  PageGuard g;
  EXPECT_EQ(g.check("snapshot", true), PageGuard::Verdict::kRun);
  g.ran("snapshot", true);
  EXPECT_EQ(g.check("snapshot", true), PageGuard::Verdict::kRepeat);
  EXPECT_EQ(g.check("console", true), PageGuard::Verdict::kRun) << "another read is not a repeat";
  g.ran("click #add", false);
  EXPECT_EQ(g.check("snapshot", true), PageGuard::Verdict::kRun) << "the page changed since";
  g.clear();
  g.ran("snapshot", true);
  g.clear();  // a new turn
  EXPECT_EQ(g.check("snapshot", true), PageGuard::Verdict::kRun);
}

TEST(PageGuard, TheSameChangeRunsFiveTimesInARowAndTheSixthIsALoop) {
  PageGuard g;
  for (int i = 0; i < PageGuard::kMaxInARow; ++i) {
    ASSERT_EQ(g.check("click #add", false), PageGuard::Verdict::kRun) << i;
    g.ran("click #add", false);
    g.ran("snapshot", true);  // reads between do not break the row
  }
  EXPECT_EQ(g.check("click #add", false), PageGuard::Verdict::kLoop);
  EXPECT_EQ(g.check("click #save", false), PageGuard::Verdict::kRun) << "another change is not the loop";
  g.ran("click #save", false);
  EXPECT_EQ(g.check("click #add", false), PageGuard::Verdict::kRun) << "the row was broken";
}

}  // namespace
}  // namespace oppx::chat

// A front end of the agent loop for in-process tests: it can ask, answers from a list, and keeps
// what it was asked, the reply and the notices.
#pragma once

#include "chat/agent.h"

#include <string>
#include <vector>

namespace oppx::test {

struct ScriptedFront : chat::FrontEnd {
  std::vector<chat::Answer> answers;  // taken in order; a question with none left is a no
  std::vector<chat::Question> asked;
  std::string reply, notices;
  void reply_text(std::string_view p) override { reply += p; }
  void notice(std::string_view t) override { notices += std::string(t) + "\n"; }
  bool can_ask() const override { return true; }
  chat::Answer ask(const chat::Question& q) override {
    asked.push_back(q);
    if (answers.empty()) return {chat::Answer::kNo, ""};
    chat::Answer a = answers.front();
    answers.erase(answers.begin());
    return a;
  }
};

}  // namespace oppx::test

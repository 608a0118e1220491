// The scripted OpenAI-compatible model server (scripted_model_server.js) as the chat's tests use
// it: started with a script in a test's folder, its URL, and every request it recorded.
#pragma once

#include "tests/support/harness.h"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace oppx::test {

class ScriptedModel {
 public:
  // Writes `script` (JSON text) to `dir`/script.json and starts the server; check started().
  ScriptedModel(const std::string& dir, const std::string& script);
  bool started() const { return !url_.empty(); }
  const std::string& url() const { return url_; }  // http://127.0.0.1:<port>/v1
  std::string log() const { return dir_ + "/requests.jsonl"; }
  std::string err() const { return server_ ? server_->err() : std::string(); }
  void stop() { server_.reset(); }
  // Every request, in order: {"method", "url", "authorization", "body"}.
  std::vector<boost::json::object> requests() const;
  // The parsed bodies of the POST /v1/chat/completions requests, in order.
  std::vector<boost::json::object> completions() const;

 private:
  std::string dir_, url_;
  std::optional<Process> server_;
};

}  // namespace oppx::test

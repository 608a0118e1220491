#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include <unistd.h>

namespace oppx::test {

namespace json = boost::json;

ScriptedModel::ScriptedModel(const std::string& dir, const std::string& script) : dir_(dir) {
  std::string path = dir + "/script.json";
  std::ofstream(path) << script;
  ::unlink(log().c_str());  // a server started again in the same folder records afresh
  server_.emplace(
      std::vector<std::string>{"node", std::string(OPPX_TEST_SUPPORT) + "/scripted_model_server.js", path, log()});
  if (!server_->wait_for_stdout("\n")) return;
  const std::string& out = server_->out();
  url_ = "http://127.0.0.1:" + out.substr(5, out.find('\n') - 5) + "/v1";
}

std::vector<json::object> ScriptedModel::requests() const {
  std::vector<json::object> out;
  std::istringstream in(read_file(log()));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line).as_object());
  return out;
}

std::vector<json::object> ScriptedModel::completions() const {
  std::vector<json::object> out;
  for (const auto& r : requests()) {
    if (r.at("url") == "/v1/chat/completions") out.push_back(json::parse(r.at("body").as_string()).as_object());
  }
  return out;
}

}  // namespace oppx::test

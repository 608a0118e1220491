// Steps of the scripted model server's script (scripted_model_server.js), as the chat's and the
// agent's tests write them: an answer streamed in two pieces, an action, a reply.
#pragma once

#include <boost/json.hpp>

#include <string>

namespace oppx::test {

// A completion step whose content is `object` (JSON text), streamed in two pieces.
inline std::string says(const std::string& object) {
  std::size_t half = object.size() / 2;
  return boost::json::serialize(
      boost::json::object{{"deltas", boost::json::array{object.substr(0, half), object.substr(half)}}});
}
// {"action": name, and `fields` (JSON members without braces)}.
inline std::string action(const std::string& name, const std::string& fields = "") {
  return says(R"({"action":")" + name + "\"" + (fields.empty() ? "" : "," + fields) + "}");
}
inline std::string reply(const std::string& text) {
  return action("reply", R"("text":)" + boost::json::serialize(boost::json::value(text)));
}

}  // namespace oppx::test

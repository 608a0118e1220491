#include "common/user_config.h"

#include "common/paths.h"

#include <boost/json/parse.hpp>

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace oppx {

std::string user_config_file() { return paths::config_dir() + "/config.json"; }

boost::system::result<boost::json::object, std::string> read_user_config() {
  std::ifstream f(user_config_file());
  if (!f) return boost::json::object{};
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().find_first_not_of(" \t\r\n") == std::string::npos) return boost::json::object{};
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(ss.str(), ec);
  if (ec || !v.is_object())
    return fmt::format("{} is not a JSON object ({}); fix it first", user_config_file(),
                       ec ? ec.message() : "another JSON value");
  return std::move(v.as_object());
}

}  // namespace oppx

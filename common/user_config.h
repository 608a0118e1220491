// The user's config.json ($XDG_CONFIG_HOME/oppx/config.json) read as one JSON object, for the
// settings that are not the model's (model_client.h reads those): "workspace_folders",
// "retention_days".
#pragma once

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <string>

namespace oppx {

std::string user_config_file();

// Its object: empty when the file is missing or blank; an error (naming the file) when it is not
// a JSON object.
boost::system::result<boost::json::object, std::string> read_user_config();

}  // namespace oppx

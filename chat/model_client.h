// The chat's model client: an OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, Ollama)
// asked over the one HTTP client (common/http.h), blocking, in the `oppx` process. Which server and
// model (config.json or OPPX_SERVER / OPPX_MODEL, the key from the variable `api_key_env` names),
// the context length, and streamed chat completions whose errors (before or inside the stream)
// come back as values that say what to do. No JSON-RPC, no daemon: the agent loop sits above.
#pragma once

#include "common/http.h"

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::chat {

struct ModelConfig {
  std::string server;       // base URL as written, e.g. http://gpu-box:8000/v1
  std::string model;        // empty: the first of /v1/models
  std::string api_key_env;  // the variable holding the key (never the key in a file)
  std::string api_key;      // read from that variable, never printed
  std::string where;        // where `server` came from, for messages: "OPPX_SERVER" or the file
};

struct ModelError {
  // unreachable | login | no_model | timeout | refused (the server refused the request, e.g. its
  // schema: 400, 500 or an error event) | bad_reply | config
  std::string kind;
  std::string message;
  std::vector<std::string> steps;  // what to do, in order
  unsigned http_status = 0;
};

template <class T>
using ModelResult = boost::system::result<T, ModelError>;

// The configuration from `env` (OPPX_SERVER, OPPX_MODEL) over config.json's "server", "model" and
// "api_key_env"; the key itself from env[api_key_env]. Fails ("config") when no server is named.
ModelResult<ModelConfig> load_model_config(const std::map<std::string, std::string>& env);

struct ContextInfo {
  std::optional<std::int64_t> tokens;
  std::string source;  // "/v1/info", "/v1/models", "/props"
  std::string note;    // why it is unknown, when it is
};

struct Completion {
  std::string content;  // the message's content (or reasoning_content, when content is empty)
  std::optional<boost::json::object> usage;
  std::string finish_reason;
};

class ModelClient {
 public:
  explicit ModelClient(ModelConfig config);
  const ModelConfig& config() const { return config_; }

  // GET /v1/models: the ids the server serves.
  ModelResult<std::vector<std::string>> models();
  // The model to use: the configured one (checked against /v1/models when the server lists it),
  // else the first the server lists. Remembered in config().model.
  ModelResult<std::string> resolve_model();
  // The context length, within `limit`: /v1/info, else /v1/models (max_model_len and the like),
  // else llama.cpp's /props (default_generation_settings.n_ctx). Unknown is allowed.
  ContextInfo context_length(std::chrono::milliseconds limit = std::chrono::milliseconds(4000));

  // POST /v1/chat/completions with `body` (model, messages, response_format…; "stream": true is
  // set here), read as an event stream. `on_delta` gets each piece of content as it arrives.
  // An error before the stream or inside it (an `error` event, vLLM and SGLang) is a ModelError.
  ModelResult<Completion> complete(boost::json::object body, const std::function<void(std::string_view)>& on_delta);

  // From another thread (Ctrl-C in the chat): the completion in progress, and every one after,
  // ends at once as "cancelled" until uncancel().
  void cancel() { cancelled_ = true; }
  void uncancel() { cancelled_ = false; }

  // Time limits: the connection, the first byte, between bytes (defaults 10 s, 300 s, 120 s).
  http::Timeouts timeouts;

 private:
  http::Request request(std::string method, std::string path, std::string body = {}) const;
  ModelError failure_of(const http::Failure& f) const;
  ModelError status_error(unsigned status, std::string_view body, std::string_view path) const;

  ModelConfig config_;
  std::string base_;
  std::atomic<bool> cancelled_{false};
  std::optional<std::string>
      models_body_;  // the last 200 answer of /v1/models  // the server URL without a trailing / or /v1
};

// Reads one string field of a JSON object as the object streams in, decoding escapes, so that the
// visible text of a reply can be shown while the model writes it. Feed the text so far in pieces;
// each call returns the characters of `field` decoded since the last. Works for the field at the
// object's top level; nested objects and arrays before it are skipped whole.
class StreamingField {
 public:
  explicit StreamingField(std::string field) : field_(std::move(field)) {}
  std::string feed(std::string_view piece);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSeekObject, kSeekKey, kKey, kAfterKey, kSeekValue, kValue, kSkip, kSkipString, kTarget, kDone };
  std::string field_;
  State state_ = State::kSeekObject;
  std::string key_;
  bool escape_ = false;
  std::string unicode_;  // the hex digits of a \u escape being read
  int depth_ = 0;        // of a value being skipped
  char quote_state_ = 0;
  std::uint32_t high_surrogate_ = 0;
};

}  // namespace oppx::chat

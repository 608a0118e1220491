// The model client: configuration, /v1/models, the context length and streamed chat completions,
// each on an io_context of its own for the length of one exchange (the `oppx` process has no
// other loop to share). Errors name the server's origin, never the key, and say what to do.
#include "chat/model_client.h"

#include "common/http_client.h"
#include "common/paths.h"
#include "common/sse.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace oppx::chat {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::size_t kMaxBody = 4u << 20;    // a models list, an info page, an error page
constexpr std::size_t kMaxReply = 16u << 20;  // one whole completion
constexpr std::size_t kMaxErrorWords = 300;   // of the server's own message, in an error

std::string str_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The server's own words from an error body or event: {"error": {"message": …}} or {"error": "…"},
// {"message": …}, {"detail": …}; else the start of the text.
std::string server_message(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  std::string words;
  if (!ec && v.is_object()) {
    const json::object& o = v.as_object();
    if (const json::value* e = o.if_contains("error")) {
      if (e->is_string()) words = std::string(e->as_string());
      if (e->is_object()) words = str_of(e->as_object(), "message");
    }
    if (words.empty()) words = str_of(o, "message");
    if (words.empty()) words = str_of(o, "detail");
  }
  if (words.empty() && ec) words = std::string(body);
  words = escape_controls(words);
  if (words.size() > kMaxErrorWords) words = words.substr(0, kMaxErrorWords) + "…";
  return words;
}

// The first integer under one of the names servers use for the context window, at any depth.
std::optional<std::int64_t> find_context(const json::value& v, int depth = 0) {
  static const char* kKeys[] = {"max_model_len", "context_length", "context_window",         "max_context_length",
                                "n_ctx",         "max_seq_len",    "max_position_embeddings"};
  if (depth > 6) return std::nullopt;
  if (const json::object* o = v.if_object()) {
    for (const char* k : kKeys) {
      if (const json::value* x = o->if_contains(k); x && x->is_int64() && x->as_int64() > 0) return x->as_int64();
      if (const json::value* x = o->if_contains(k); x && x->is_uint64())
        return static_cast<std::int64_t>(x->as_uint64());
    }
    for (auto& [k, x] : *o) {
      if (auto c = find_context(x, depth + 1)) return c;
    }
  } else if (const json::array* a = v.if_array()) {
    for (auto& x : *a) {
      if (auto c = find_context(x, depth + 1)) return c;
    }
  }
  return std::nullopt;
}

struct Got {
  http::Response head;
  std::string body;
};

// One exchange to its end on a loop of its own; `on_event` (when set) gets the events of an event
// stream answered 200 instead of the body being kept.
// `cancel` (when set) is looked at every 25 ms: once true, the exchange ends as "cancelled".
ModelResult<Got> exchange(http::Request req,
                          const std::function<std::optional<ModelError>(const sse::Event&)>* on_event,
                          const std::function<ModelError(const http::Failure&)>& failure_of,
                          const std::atomic<bool>* cancel = nullptr) {
  asio::io_context io;
  http::Client client(io, 1);
  std::optional<ModelResult<Got>> result;
  asio::steady_timer watch(io);
  bool over = false;
  std::function<void()> look = [&] {
    if (over) return;
    if (cancel->load()) return client.close_all();
    watch.expires_after(std::chrono::milliseconds(25));
    watch.async_wait([&](boost::system::error_code ec) {
      if (!ec) look();
    });
  };
  if (cancel) look();
  auto work = [&]() -> http::awaitable<void> {
    struct Over {
      bool& over;
      asio::steady_timer& watch;
      ~Over() {
        over = true;
        watch.cancel();
      }
    } done_watching{over, watch};
    auto ex = co_await client.open(req);
    if (!ex) {
      result = failure_of(ex.error());
      co_return;
    }
    Got got{ex->head(), {}};
    bool events = on_event && got.head.status == 200 && got.head.media_type == "text/event-stream";
    sse::Parser parser;
    std::vector<sse::Event> batch;
    for (;;) {
      auto ch = co_await ex->next_chunk();
      if (!ch) {
        result = failure_of(ch.error());
        co_return;
      }
      if (events) {
        if (!parser.feed(ch->data, batch)) {
          result = ModelError{"bad_reply", got.head.at.origin + " sent an event over 16 MiB", {}, 0};
          co_return;
        }
        for (auto& e : batch) {
          if (auto stop = (*on_event)(e)) {
            ex->abort();
            result = std::move(*stop);
            co_return;
          }
        }
        batch.clear();
      } else {
        got.body += ch->data;
        if (got.body.size() > kMaxReply) {
          result = ModelError{"bad_reply", got.head.at.origin + " sent an answer over 16 MiB", {}, 0};
          co_return;
        }
      }
      if (ch->done) break;
    }
    result = std::move(got);
  };
  asio::co_spawn(io, work(), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      result = ModelError{"bad_reply", std::string("the model client failed: ") + x.what(), {}, 0};
    }
  });
  io.run();
  if (!result) return ModelError{"bad_reply", "the exchange with the model server ended without an answer", {}, 0};
  return std::move(*result);
}

}  // namespace

ModelResult<ModelConfig> load_model_config(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  ModelConfig c;
  std::string file = paths::config_dir() + "/config.json";
  json::object conf;
  if (std::ifstream f(file); f) {
    std::stringstream ss;
    ss << f.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object())
      return ModelError{std::string(proto::kind::kConfig),
                        file + " is not a JSON object (" + (ec ? ec.message() : "another JSON value") + ")",
                        {"fix or remove " + file},
                        0};
    conf = v.as_object();
  }
  c.server = get("OPPX_SERVER");
  c.where = "OPPX_SERVER";
  if (c.server.empty()) {
    c.server = str_of(conf, "server");
    c.where = file;
  }
  c.model = get("OPPX_MODEL");
  if (c.model.empty()) c.model = str_of(conf, "model");
  c.api_key_env = str_of(conf, "api_key_env");
  if (!c.api_key_env.empty()) c.api_key = get(c.api_key_env.c_str());
  if (c.server.empty())
    return ModelError{std::string(proto::kind::kConfig),
                      "no model server is configured",
                      {"name your OpenAI-compatible server in " + file +
                       " as {\"server\": \"http://host:8000/v1\"}, or set OPPX_SERVER for this shell"},
                      0};
  if (auto u = http::parse_url(c.server); !u)
    return ModelError{
        std::string(proto::kind::kConfig),
        "the model server " + escape_controls(c.server) + " (from " + c.where + ") cannot be used: " + u.error(),
        {"write it as http://host:port/v1 or https://host/v1"},
        0};
  return c;
}

ModelClient::ModelClient(ModelConfig config) : config_(std::move(config)), base_(config_.server) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
  // An OpenAI base URL usually ends in /v1; the paths below add it themselves.
  if (base_.size() >= 3 && base_.compare(base_.size() - 3, 3, "/v1") == 0) base_.resize(base_.size() - 3);
  timeouts.connect = std::chrono::seconds(10);
  timeouts.headers = std::chrono::seconds(300);  // a long prompt is read before the first byte
  timeouts.idle = std::chrono::seconds(120);
  timeouts.total = std::chrono::hours(1);
}

http::Request ModelClient::request(std::string method, std::string path, std::string body) const {
  http::Request req;
  req.method = std::move(method);
  req.url = base_ + path;
  req.headers.push_back({"Accept", "application/json, text/event-stream", "*"});
  // Bound to the server's own origin: a redirect elsewhere never carries the key.
  if (!config_.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + config_.api_key, {}});
  if (!body.empty()) req.headers.push_back({"Content-Type", "application/json", "*"});
  req.body = std::move(body);
  req.timeouts = timeouts;
  return req;
}

ModelError ModelClient::failure_of(const http::Failure& f) const {
  std::string origin = http::origin_of(base_);
  if (f.kind == proto::kind::kUnreachable)
    return ModelError{std::string(proto::kind::kUnreachable),
                      f.message,
                      {"check that the model server runs and listens at " + origin,
                       "check the server URL (from " + config_.where + ")"},
                      0};
  if (f.kind == proto::kind::kTimeout)
    return ModelError{std::string(proto::kind::kTimeout),
                      f.message,
                      {"check that the model server at " + origin + " is not stuck or overloaded, then ask again"},
                      0};
  return ModelError{f.kind == "cancelled" ? "cancelled" : "bad_reply", f.message, {}, 0};
}

ModelError ModelClient::status_error(unsigned status, std::string_view body, std::string_view path) const {
  std::string origin = http::origin_of(base_);
  std::string words = server_message(body);
  std::string said = words.empty() ? "" : ": \"" + words + "\"";
  if (status == 401 || status == 403) {
    std::vector<std::string> steps;
    if (config_.api_key_env.empty()) {
      steps.push_back("put the key in an environment variable and name that variable in " + paths::config_dir() +
                      "/config.json as {\"api_key_env\": \"MY_MODEL_KEY\"}");
    } else if (config_.api_key.empty()) {
      steps.push_back("${" + config_.api_key_env + "} (named by api_key_env) is not set in this shell: export it");
    } else {
      steps.push_back("the key in ${" + config_.api_key_env + "} was refused: put a valid one there");
    }
    return ModelError{std::string(proto::kind::kLogin),
                      fmt::format("{} refused the request (HTTP {}){}", origin, status, said), steps, status};
  }
  return ModelError{"refused", fmt::format("{} answered HTTP {} to {}{}", origin, status, path, said), {}, status};
}

ModelResult<std::vector<std::string>> ModelClient::models() {
  auto fo = [this](const http::Failure& f) { return failure_of(f); };
  auto got = exchange(request("GET", "/v1/models"), nullptr, fo);
  if (!got) return got.error();
  if (got->head.status != 200) return status_error(got->head.status, got->body, "GET /v1/models");
  models_body_ = got->body;  // context_length() reads it again rather than asking twice
  boost::system::error_code ec;
  json::value v = json::parse(got->body, ec);
  const json::value* data = !ec && v.is_object() ? v.as_object().if_contains("data") : nullptr;
  if (!data || !data->is_array())
    return ModelError{
        "bad_reply", http::origin_of(base_) + "/v1/models is not a list of models ({\"data\": [...]})", {}, 0};
  std::vector<std::string> ids;
  for (const auto& m : data->as_array()) {
    if (m.is_object()) {
      if (std::string id = str_of(m.as_object(), "id"); !id.empty()) ids.push_back(id);
    }
  }
  return ids;
}

ModelResult<std::string> ModelClient::resolve_model() {
  auto listed = models();
  if (!listed) {
    // A server without a models list still serves the model it was told to use.
    if (!config_.model.empty() && listed.error().kind == "refused")
      return ModelResult<std::string>(boost::system::in_place_value, config_.model);
    return listed.error();
  }
  std::string names;
  for (const auto& id : *listed) names += (names.empty() ? "" : ", ") + escape_controls(id);
  if (config_.model.empty()) {
    if (listed->empty())
      return ModelError{"no_model",
                        http::origin_of(base_) + " serves no model (its /v1/models list is empty)",
                        {"load a model on the server, then ask again"},
                        0};
    config_.model = listed->front();
    return ModelResult<std::string>(boost::system::in_place_value, config_.model);
  }
  for (const auto& id : *listed) {
    if (id == config_.model) return ModelResult<std::string>(boost::system::in_place_value, config_.model);
  }
  return ModelError{"no_model",
                    fmt::format("{} has no model named \"{}\"; it serves: {}", http::origin_of(base_),
                                escape_controls(config_.model), names.empty() ? "none" : names),
                    {"set OPPX_MODEL, or \"model\" in " + paths::config_dir() +
                     "/config.json, to one of those (or remove it to use the first)"},
                    0};
}

ContextInfo ModelClient::context_length(std::chrono::milliseconds limit) {
  ContextInfo info;
  auto deadline = http::Clock::now() + limit;
  auto fo = [this](const http::Failure& f) { return failure_of(f); };
  for (const char* path : {"/v1/info", "/v1/models", "/props"}) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - http::Clock::now());
    if (left.count() <= 0) {
      info.note = fmt::format("{} did not answer within {} s", http::origin_of(base_), limit.count() / 1000);
      break;
    }
    http::Request req = request("GET", path);
    req.timeouts = {left, left, left, left};
    ModelResult<Got> got = ModelError{};
    if (std::string_view(path) == "/v1/models" && models_body_) {
      http::Response head;
      head.status = 200;
      got = Got{head, *models_body_};
    } else {
      got = exchange(req, nullptr, fo);
    }
    if (!got) {
      info.note = got.error().kind == proto::kind::kTimeout
                      ? fmt::format("{} did not answer within {} s", http::origin_of(base_), limit.count() / 1000)
                      : got.error().message;
      break;
    }
    if (got->head.status != 200) {
      info.note = fmt::format("{} answered {} to {}", config_.server, got->head.status, path);
      continue;
    }
    boost::system::error_code ec;
    json::value v = json::parse(got->body, ec);
    if (!ec) {
      // llama.cpp's /v1/models names n_ctx_train, the training length, not the one it runs with.
      if (std::string_view(path) == "/v1/models" && got->body.find("n_ctx_train") != std::string::npos) continue;
      info.tokens = find_context(v);
    }
    if (info.tokens) {
      info.source = path;
      info.note.clear();
      break;
    }
    info.note = fmt::format("{}{} does not name a context length", config_.server, path);
  }
  return info;
}

ModelResult<Completion> ModelClient::complete(json::object body,
                                              const std::function<void(std::string_view)>& on_delta) {
  body["stream"] = true;
  if (!config_.model.empty() && !body.contains("model")) body["model"] = config_.model;
  Completion out;
  std::string reasoning;
  std::function<std::optional<ModelError>(const sse::Event&)> on_event =
      [&](const sse::Event& e) -> std::optional<ModelError> {
    std::string_view data = e.data;
    if (data.find_first_not_of(" \t\r\n") == std::string_view::npos || data == "[DONE]") return std::nullopt;
    boost::system::error_code ec;
    json::value v = json::parse(data, ec);
    if (ec || !v.is_object())
      return ModelError{
          "bad_reply",
          http::origin_of(base_) + " sent an event that is not JSON: " + escape_controls(data.substr(0, 120)),
          {},
          0};
    const json::object& o = v.as_object();
    // vLLM and SGLang report a failure after the 200 inside the stream.
    if (o.contains("error") || e.type == "error")
      return ModelError{"refused",
                        http::origin_of(base_) + " reported an error in its answer: \"" + server_message(data) + "\"",
                        {},
                        0};
    if (const json::value* u = o.if_contains("usage"); u && u->is_object()) out.usage = u->as_object();
    const json::value* choices = o.if_contains("choices");
    if (!choices || !choices->is_array() || choices->as_array().empty()) return std::nullopt;
    const json::value& c0 = choices->as_array().front();
    if (!c0.is_object()) return std::nullopt;
    if (std::string fr = str_of(c0.as_object(), "finish_reason"); !fr.empty()) out.finish_reason = fr;
    const json::value* delta = c0.as_object().if_contains("delta");
    if (!delta || !delta->is_object()) return std::nullopt;
    if (std::string text = str_of(delta->as_object(), "content"); !text.empty()) {
      out.content += text;
      if (on_delta) on_delta(text);
    }
    // SGLang with thinking off may put the JSON in reasoning_content: kept, used when content is empty.
    reasoning += str_of(delta->as_object(), "reasoning_content");
    return std::nullopt;
  };
  auto fo = [this](const http::Failure& f) { return failure_of(f); };
  auto got = exchange(request("POST", "/v1/chat/completions", proto::json_text(body)), &on_event, fo, &cancelled_);
  if (cancelled_.load()) return ModelError{"cancelled", "the request was cancelled", {}, 0};
  if (!got) return got.error();
  if (got->head.status != 200) {
    ModelError e = status_error(got->head.status, got->body, "POST /v1/chat/completions");
    std::string words = server_message(got->body);
    // vLLM: 404 "The model `x` does not exist."; others 400 "model not found".
    if (got->head.status == 404 ||
        (lower(words).find("model") != std::string::npos && (lower(words).find("not exist") != std::string::npos ||
                                                             lower(words).find("not found") != std::string::npos))) {
      auto known = models();
      if (known) {
        std::string names;
        for (const auto& id : *known) names += (names.empty() ? "" : ", ") + escape_controls(id);
        e.kind = "no_model";
        e.message = fmt::format("{} has no model named \"{}\"; it serves: {}", http::origin_of(base_),
                                escape_controls(config_.model), names.empty() ? "none" : names);
        e.steps = {"set OPPX_MODEL, or \"model\" in " + paths::config_dir() + "/config.json, to one of those"};
      }
    }
    return e;
  }
  if (got->head.media_type == "application/json") {
    // A server that ignored "stream": the whole completion at once.
    boost::system::error_code ec;
    json::value v = json::parse(got->body, ec);
    const json::value* msg = nullptr;
    if (!ec && v.is_object()) {
      if (auto* ch = v.as_object().if_contains("choices"); ch && ch->is_array() && !ch->as_array().empty()) {
        if (ch->as_array()[0].is_object()) msg = ch->as_array()[0].as_object().if_contains("message");
      }
      if (auto* u = v.as_object().if_contains("usage"); u && u->is_object()) out.usage = u->as_object();
    }
    if (!msg || !msg->is_object())
      return ModelError{"bad_reply", http::origin_of(base_) + " answered with JSON that is no chat completion", {}, 0};
    out.content = str_of(msg->as_object(), "content");
    reasoning = str_of(msg->as_object(), "reasoning_content");
    if (on_delta && !out.content.empty()) on_delta(out.content);
  } else if (got->head.media_type != "text/event-stream") {
    return ModelError{
        "bad_reply",
        fmt::format("{} answered with {} instead of an event stream; is the URL an OpenAI-compatible "
                    "server's?",
                    http::origin_of(base_),
                    got->head.media_type.empty() ? "no Content-Type" : escape_controls(got->head.media_type)),
        {"check the server URL (from " + config_.where + ")"},
        0};
  }
  if (out.content.empty()) out.content = reasoning;
  return out;
}

std::string StreamingField::feed(std::string_view piece) {
  std::string out;
  auto ws = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; };
  for (char ch : piece) {
    switch (state_) {
      case State::kSeekObject:
        if (ch == '{') state_ = State::kSeekKey;
        break;
      case State::kSeekKey:
        if (ch == '"') {
          key_.clear();
          escape_ = false;
          state_ = State::kKey;
        } else if (ch == '}') {
          state_ = State::kDone;
        }
        break;
      case State::kKey:
        if (escape_) {
          key_ += ch;
          escape_ = false;
        } else if (ch == '\\') {
          escape_ = true;
        } else if (ch == '"') {
          state_ = State::kAfterKey;
        } else {
          key_ += ch;
        }
        break;
      case State::kAfterKey:
        if (ch == ':') state_ = State::kSeekValue;
        break;
      case State::kSeekValue:
        if (ws(ch)) break;
        if (ch == '"' && key_ == field_) {
          state_ = State::kTarget;
          escape_ = false;
        } else if (ch == '"') {
          state_ = State::kSkipString;
          escape_ = false;
        } else if (ch == '{' || ch == '[') {
          depth_ = 1;
          quote_state_ = 0;
          state_ = State::kSkip;
        } else {
          state_ = State::kValue;
        }
        break;
      case State::kValue:
        if (ch == ',') state_ = State::kSeekKey;
        if (ch == '}') state_ = State::kDone;
        break;
      case State::kSkipString:
        if (escape_) {
          escape_ = false;
        } else if (ch == '\\') {
          escape_ = true;
        } else if (ch == '"') {
          state_ = State::kSeekKey;
        }
        break;
      case State::kSkip:
        if (quote_state_) {
          if (escape_) {
            escape_ = false;
          } else if (ch == '\\') {
            escape_ = true;
          } else if (ch == '"') {
            quote_state_ = 0;
          }
        } else if (ch == '"') {
          quote_state_ = '"';
        } else if (ch == '{' || ch == '[') {
          ++depth_;
        } else if ((ch == '}' || ch == ']') && --depth_ == 0) {
          state_ = State::kSeekKey;
        }
        break;
      case State::kTarget:
        if (!unicode_.empty() || (escape_ && ch == 'u')) {
          if (escape_) {
            escape_ = false;
            unicode_ = "u";
            break;
          }
          unicode_ += ch;
          if (unicode_.size() < 5) break;
          std::uint32_t cp = static_cast<std::uint32_t>(std::strtoul(unicode_.c_str() + 1, nullptr, 16));
          unicode_.clear();
          if (cp >= 0xD800 && cp < 0xDC00) {
            high_surrogate_ = cp;
            break;
          }
          if (cp >= 0xDC00 && cp < 0xE000 && high_surrogate_) {
            cp = 0x10000 + ((high_surrogate_ - 0xD800) << 10) + (cp - 0xDC00);
          }
          high_surrogate_ = 0;
          append_utf8(out, cp);
        } else if (escape_) {
          escape_ = false;
          switch (ch) {
            case 'n':
              out += '\n';
              break;
            case 't':
              out += '\t';
              break;
            case 'r':
              out += '\r';
              break;
            case 'b':
              out += '\b';
              break;
            case 'f':
              out += '\f';
              break;
            default:
              out += ch;  // \" \\ \/
          }
        } else if (ch == '\\') {
          escape_ = true;
        } else if (ch == '"') {
          state_ = State::kDone;
        } else {
          out += ch;
        }
        break;
      case State::kDone:
        return out;
    }
  }
  return out;
}

}  // namespace oppx::chat

// Encoding and decoding of the browser/… results. A nested object is decoded under its own path
// ("result.session.pid: expected integer"), so an error still names one field.
#include "proto/browser_api.h"

#include <boost/json/object.hpp>

namespace oppx::proto {

namespace json = boost::json;

namespace {

// reason_kind, reason and steps, in the object `r` reads.
BrowserProblem read_problem(FieldReader& r) {
  BrowserProblem p;
  p.kind = r.string("reason_kind", true).value_or("");
  p.message = r.string("reason", false).value_or("");
  p.steps = r.strings("steps");
  return p;
}

bool has(FieldReader& r, std::string_view key) { return !r.any(key).is_null(); }

Decoded<BrowserProblem> problem_at(const json::value& v, std::string path) {
  FieldReader r(v, std::move(path));
  BrowserProblem p = read_problem(r);
  return finish(r, std::move(p));
}

Decoded<BrowserFound> found_at(const json::value& v, std::string path) {
  FieldReader r(v, std::move(path));
  BrowserFound b;
  if (has(r, "reason_kind")) {
    b.problem = read_problem(r);
  } else {
    b.kind = r.string("kind", true).value_or("");
    b.path = r.string("path", true).value_or("");
  }
  return finish(r, std::move(b));
}

void read_session(FieldReader& r, SessionBrowserStatus& s) {
  s.state = r.string("state", true).value_or("");
  s.folder = r.string("folder", false).value_or("");
  s.tools = r.integer("tools", false).value_or(0);
  s.pid = r.integer("pid", false);
  s.log = r.string("log", false).value_or("");
  if (has(r, "reason_kind")) {
    s.failed = read_problem(r);
  } else {
    s.reason = r.string("reason", false).value_or("");
  }
}

Decoded<SessionBrowserStatus> session_at(const json::value& v, std::string path) {
  FieldReader r(v, std::move(path));
  SessionBrowserStatus s;
  read_session(r, s);
  return finish(r, std::move(s));
}

Decoded<BrowserSpareStatus> spare_at(const json::value& v, std::string path) {
  FieldReader r(v, std::move(path));
  BrowserSpareStatus s;
  s.state = r.string("state", true).value_or("");
  s.pid = r.integer("pid", false).value_or(0);
  s.log = r.string("log", false).value_or("");
  s.idle_ms = r.integer("idle_ms", false).value_or(0);
  return finish(r, std::move(s));
}

template <class T>
Decoded<T> failed(std::string error) {
  return {boost::system::in_place_error, std::move(error)};
}

}  // namespace

Decoded<BrowserProblem> decode(const json::value& v, std::type_identity<BrowserProblem>) {
  return problem_at(v, "data");  // browser/start's error data
}

Decoded<BrowserFound> decode(const json::value& v, std::type_identity<BrowserFound>) { return found_at(v, "result"); }

Decoded<SessionBrowserStatus> decode(const json::value& v, std::type_identity<SessionBrowserStatus>) {
  return session_at(v, "result");
}

Decoded<BrowserSpareStatus> decode(const json::value& v, std::type_identity<BrowserSpareStatus>) {
  return spare_at(v, "result");
}

Decoded<BrowserStatusResult> decode(const json::value& v, std::type_identity<BrowserStatusResult>) {
  FieldReader r(v, "result");
  BrowserStatusResult s;
  s.version = r.string("version", false).value_or("");
  s.installed = r.string("installed", false);
  s.engine = r.string("engine", false).value_or("");
  s.sandbox = r.string("sandbox", false).value_or("");
  json::value browser = r.any("browser"), session = r.any("session"), spare = r.any("spare");
  if (!r.ok()) return failed<BrowserStatusResult>(r.error());
  auto b = found_at(browser, "result.browser");
  if (!b) return failed<BrowserStatusResult>(b.error());
  s.browser = std::move(*b);
  if (!session.is_null()) {
    auto d = session_at(session, "result.session");
    if (!d) return failed<BrowserStatusResult>(d.error());
    s.session = std::move(*d);
  }
  auto sp = spare_at(spare.is_null() ? json::value(json::object{{"state", "off"}}) : spare, "result.spare");
  if (!sp) return failed<BrowserStatusResult>(sp.error());
  s.spare = std::move(*sp);
  return s;
}

Decoded<BrowserStartResult> decode(const json::value& v, std::type_identity<BrowserStartResult>) {
  FieldReader r(v, "result");
  BrowserStartResult s;
  read_session(r, s);
  s.session_allow = r.string("session_allow", false).value_or("");
  return finish(r, std::move(s));
}

Decoded<BrowserStopResult> decode(const json::value& v, std::type_identity<BrowserStopResult>) {
  FieldReader r(v, "result");
  BrowserStopResult s;
  s.state = r.string("state", true).value_or("");
  s.was_running = r.boolean("was_running", false).value_or(false);
  return finish(r, std::move(s));
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserProblem& v) {
  jv = json::object{{"reason_kind", v.kind}, {"reason", v.message}, {"steps", json::value_from(v.steps)}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserFound& v) {
  if (v.problem) {
    jv = json::value_from(*v.problem);
  } else {
    jv = json::object{{"kind", v.kind}, {"path", v.path}};
  }
}

void tag_invoke(json::value_from_tag, json::value& jv, const SessionBrowserStatus& v) {
  json::object o{{"state", v.state}};
  if (!v.folder.empty()) {
    o["folder"] = v.folder;
    o["tools"] = v.tools;
  }
  if (v.pid) {
    o["pid"] = *v.pid;
    o["log"] = v.log;
  }
  if (v.failed) {
    json::value problem = json::value_from(*v.failed);
    for (auto& [k, val] : problem.as_object()) o[k] = val;
  } else if (!v.reason.empty()) {
    o["reason"] = v.reason;
  }
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserSpareStatus& v) {
  json::object o{{"state", v.state}};
  if (v.state != "off") {
    o["pid"] = v.pid;
    o["log"] = v.log;
    o["idle_ms"] = v.idle_ms;
  }
  jv = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserStatusResult& v) {
  jv = json::object{{"version", v.version},
                    {"installed", v.installed ? json::value(*v.installed) : json::value(nullptr)},
                    {"engine", v.engine},
                    {"sandbox", v.sandbox},
                    {"browser", json::value_from(v.browser)},
                    {"session", v.session ? json::value_from(*v.session) : json::value(nullptr)},
                    {"spare", json::value_from(v.spare)}};
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserStartResult& v) {
  jv = json::value_from(static_cast<const SessionBrowserStatus&>(v));
  jv.as_object()["session_allow"] = v.session_allow;
}

void tag_invoke(json::value_from_tag, json::value& jv, const BrowserStopResult& v) {
  jv = json::object{{"state", v.state}, {"was_running", v.was_running}};
}

}  // namespace oppx::proto

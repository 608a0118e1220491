// The event-stream parser. Follows the WHATWG algorithm step by step ("Interpreting an event
// stream"); the only additions are the size cap and reading bytes rather than decoded text,
// which is equivalent here because every delimiter it looks for is ASCII.
#include "common/sse.h"

#include <algorithm>

namespace oppx::sse {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";

// What a string holds on the heap (a short one lives inside the object).
std::size_t allocated(const std::string& s) {
  static const std::size_t kInline = std::string().capacity();
  return s.capacity() > kInline ? s.capacity() : 0;
}
}  // namespace

bool Parser::feed(std::string_view chunk, std::vector<Event>& out) {
  if (failed_) return false;
  // WHATWG: one leading BOM is skipped. It may arrive split across chunks.
  while (bom_state_ >= 0 && !chunk.empty()) {
    if (chunk.front() == kBom[static_cast<std::size_t>(bom_state_)]) {
      chunk.remove_prefix(1);
      if (++bom_state_ == 3) bom_state_ = -1;
      continue;
    }
    std::string held(kBom.substr(0, static_cast<std::size_t>(bom_state_)));  // a partial match was content
    bom_state_ = -1;
    if (!held.empty() && !feed(held, out)) return false;
  }
  std::size_t i = 0;
  if (after_cr_ && !chunk.empty()) {
    after_cr_ = false;
    if (chunk.front() == '\n') i = 1;  // CRLF split across two chunks is one line ending
  }
  while (i < chunk.size()) {
    std::size_t end = chunk.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      if (pending_.size() + (chunk.size() - i) + data_.size() > max_event_) {
        failed_ = true;
        return false;
      }
      return append(pending_, chunk.substr(i));
    }
    std::string_view piece = chunk.substr(i, end - i);
    if (pending_.size() + piece.size() + data_.size() > max_event_) {
      failed_ = true;
      return false;
    }
    if (pending_.empty()) {
      line(piece, out);
    } else {
      if (!append(pending_, piece)) return false;
      std::string whole = std::move(pending_);
      pending_.clear();
      share_.set(allocated(pending_) + allocated(data_));
      line(whole, out);
    }
    if (failed_) return false;
    if (chunk[end] == '\r') {
      if (end + 1 == chunk.size()) {
        after_cr_ = true;
        return true;
      }
      if (chunk[end + 1] == '\n') ++end;
    }
    i = end + 1;
  }
  return true;
}

void Parser::line(std::string_view l, std::vector<Event>& out) {
  if (l.empty()) return dispatch(out);
  if (l.front() == ':') return;  // a comment (servers use them as keep-alive pings)
  std::string_view field = l, value;
  if (auto colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    type_.assign(value);
  } else if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_) {
      failed_ = true;
      return;
    }
    if (!append(data_, value)) return;
    data_.push_back('\n');  // room kept for it by append
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_buffer_.assign(value);
  } else if (field == "retry") {
    if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) return;
    std::uint64_t ms = 0;
    constexpr std::uint64_t kSaturate = UINT64_MAX / 10 - 10;
    for (char c : value) ms = ms >= kSaturate ? kSaturate : ms * 10 + static_cast<std::uint64_t>(c - '0');
    retry_ms_ = ms;
  }
  // Any other field name is ignored, as the spec says.
}

void Parser::dispatch(std::vector<Event>& out) {
  last_event_id_ = id_buffer_;
  if (data_.empty()) {
    type_.clear();
    return;
  }
  data_.pop_back();  // the LF after the last data line
  Event e;
  if (!type_.empty()) e.type = std::move(type_);
  e.data = std::move(data_);
  e.last_event_id = last_event_id_;
  out.push_back(std::move(e));
  data_.clear();
  type_.clear();
  share_.set(allocated(pending_) + allocated(data_));
}

// Appends with the growth of `to` charged to the budget before it is allocated (one byte more
// kept for data_'s line feed).
bool Parser::append(std::string& to, std::string_view bytes) {
  std::size_t need = to.size() + bytes.size() + 1;
  if (need > to.capacity()) {
    std::size_t cap = std::max(need, std::min(to.capacity() * 2, max_event_ + 1));
    if (!share_.set(allocated(pending_) + allocated(data_) - allocated(to) + cap)) {
      failed_ = over_budget_ = true;
      return false;
    }
    to.reserve(cap);
  }
  to.append(bytes);
  return true;
}

std::chrono::milliseconds clamp_retry(std::optional<std::uint64_t> retry_ms, std::chrono::milliseconds fallback,
                                      std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
  if (!retry_ms) return std::clamp(fallback, lo, hi);
  auto lo_ms = static_cast<std::uint64_t>(lo.count()), hi_ms = static_cast<std::uint64_t>(hi.count());
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::clamp(*retry_ms, lo_ms, hi_ms)));
}

}  // namespace oppx::sse

// Fuzz target: an event stream (common/sse), split into chunks at points the input chooses (the
// first byte says how many; each chunk's length is the next byte). Property: the events are the
// same whatever the split, and no event is larger than the cap.
#include "common/sse.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using oppx::sse::Event;
  constexpr std::size_t kCap = 1024;
  std::size_t splits = data[0] % 8;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  oppx::sse::Parser whole(kCap);
  std::vector<Event> a;
  bool ok_whole = whole.feed(rest, a);

  oppx::sse::Parser pieces(kCap);
  std::vector<Event> b;
  bool ok_pieces = true;
  std::string_view left = rest;
  for (std::size_t i = 0; i < splits && !left.empty(); ++i) {
    std::size_t n = static_cast<unsigned char>(left[0]) % (left.size() + 1);
    ok_pieces = pieces.feed(left.substr(0, n), b) && ok_pieces;
    left.remove_prefix(n);
  }
  ok_pieces = pieces.feed(left, b) && ok_pieces;

  if (ok_whole != ok_pieces) {
    std::fprintf(stderr, "sse: the split changed whether the stream failed\n");
    std::abort();
  }
  if (ok_whole) {
    bool same = a.size() == b.size() && whole.last_event_id() == pieces.last_event_id() &&
                whole.retry_ms() == pieces.retry_ms();
    for (std::size_t i = 0; same && i < a.size(); ++i) {
      same = a[i].type == b[i].type && a[i].data == b[i].data && a[i].last_event_id == b[i].last_event_id;
    }
    if (!same) {
      std::fprintf(stderr, "sse: the split changed the events\n");
      std::abort();
    }
  }
  for (const Event& e : a) {
    if (e.data.size() > kCap) {
      std::fprintf(stderr, "sse: an event of %zu bytes passed a cap of %zu\n", e.data.size(), kCap);
      std::abort();
    }
  }
  return 0;
}

// What a tools/call result gives the model: its text parts joined, other parts summarised, cut
// at a limit with a visible marker. No I/O.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <string>

namespace oppx::daemon {

inline constexpr std::size_t kResultLimit = 12'000;  // characters of text kept from a result

// The text parts joined, other parts summarised ("[image content: image/png left out]"), cut at
// `limit` characters (UTF-8 code points) with a visible marker; `truncated` says whether it was.
std::string result_text(const boost::json::value& result, std::size_t limit, bool* truncated);

}  // namespace oppx::daemon

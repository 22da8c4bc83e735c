#include "text.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace devicearray::cli {

std::string printable(std::string_view text, std::size_t maxLength) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const bool cut = text.size() > maxLength;
  if (cut) text = text.substr(0, maxLength);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (a non-ASCII file name) stays as it is.
    const std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool utf8 = len != 0 && i + len <= text.size();
    for (std::size_t k = 1; utf8 && k < len; ++k) utf8 = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (utf8) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  if (cut) out += "...";
  return out;
}

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

CLI::Validator integerIn(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        // from_chars takes no sign and no exponent, so "-1", "+1" and "1e3" fail here.
        if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi)
          return "'" + printable(text, 40) + "' must be an integer in " + range;
        return {};
      },
      "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

CLI::Validator numberIn(double lo, double hi) {
  const std::string range = numberText(lo) + ".." + numberText(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !(v >= lo && v <= hi))
          return "'" + printable(text, 40) + "' must be a number in " + range;
        return {};
      },
      "NUMBER in [" + numberText(lo) + " - " + numberText(hi) + "]");
}

}  // namespace devicearray::cli

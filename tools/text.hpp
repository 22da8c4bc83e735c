// Text helpers of the `devicearray` command: numbers and foreign bytes in messages, and
// the validators of integer options whose CLI11 defaults say too little.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace CLI {
class Validator;
}

namespace devicearray::cli {

/// `text` made safe for a one-line message: control bytes, DEL and bytes that are not
/// part of valid UTF-8 become \xNN (NUL becomes \x00), and text longer than `maxLength`
/// is cut with "...".
std::string printable(std::string_view text, std::size_t maxLength = 200);

/// A number as a person reads it: %g with up to 9 significant digits, so 1e-9 stays
/// 1e-09 instead of 0.000000 and 1e300 is not written out in full.
std::string numberText(double value);

/// CLI11 validator: a decimal integer in [lo, hi] (digits only, no sign, no exponent),
/// failing with "'TEXT' must be an integer in LO..HI".
CLI::Validator integerIn(std::uint64_t lo, std::uint64_t hi);

/// CLI11 validator: a finite number in [lo, hi], failing with "'TEXT' must be a number
/// in LO..HI" (bounds as numberText writes them, unlike CLI::Range's 1.000000).
CLI::Validator numberIn(double lo, double hi);

}  // namespace devicearray::cli

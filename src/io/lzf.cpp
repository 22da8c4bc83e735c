#include "io/lzf.hpp"

#include <algorithm>

namespace devicearray::io_detail {

std::string lzfDecompress(const std::uint8_t* in, std::size_t inSize, std::uint8_t* out, std::size_t outSize) {
  std::size_t ip = 0, op = 0;
  while (ip < inSize) {
    const std::size_t at = ip;
    const unsigned ctrl = in[ip++];
    if (ctrl < 32) {  // a run of ctrl + 1 literal bytes
      const std::size_t len = ctrl + 1;
      if (ip + len > inSize)
        return "compressed byte " + std::to_string(at) + ": a literal run of " + std::to_string(len) +
               " bytes passes the end of the compressed data";
      if (op + len > outSize)
        return "compressed byte " + std::to_string(at) + ": the data decompresses to more than the declared " +
               std::to_string(outSize) + " bytes";
      std::copy_n(in + ip, len, out + op);
      ip += len;
      op += len;
      continue;
    }
    std::size_t len = ctrl >> 5;  // a back reference
    if (len == 7) {
      if (ip >= inSize) return "compressed byte " + std::to_string(at) + ": a back reference is cut off";
      len += in[ip++];
    }
    if (ip >= inSize) return "compressed byte " + std::to_string(at) + ": a back reference is cut off";
    const std::size_t distance = ((static_cast<std::size_t>(ctrl & 0x1f) << 8) | in[ip++]) + 1;
    len += 2;
    if (distance > op)
      return "compressed byte " + std::to_string(at) + ": a back reference reaches " + std::to_string(distance) +
             " bytes back, before the start of the data (" + std::to_string(op) + " bytes decompressed)";
    if (op + len > outSize)
      return "compressed byte " + std::to_string(at) + ": the data decompresses to more than the declared " +
             std::to_string(outSize) + " bytes";
    // Byte by byte: the source may overlap what is being written (a repeated run).
    for (std::size_t k = 0; k < len; ++k, ++op) out[op] = out[op - distance];
  }
  if (op != outSize)
    return "the data decompresses to " + std::to_string(op) + " bytes, not the declared " + std::to_string(outSize);
  return {};
}

std::vector<std::uint8_t> lzfCompress(const std::uint8_t* in, std::size_t inSize) {
  constexpr unsigned kHashBits = 14;
  constexpr std::size_t kMaxDistance = 1 << 13;  // 13 bits of offset
  constexpr std::size_t kMaxMatch = 264;         // (7 + 255) + 2
  constexpr std::size_t kMaxLiteral = 32;
  std::vector<std::uint8_t> out;
  out.reserve(inSize + inSize / kMaxLiteral + 1);
  std::vector<std::uint32_t> table(std::size_t{1} << kHashBits, 0);  // position + 1 of a prefix, 0 = none

  std::size_t literalStart = 0;
  const auto flushLiterals = [&](std::size_t end) {
    while (literalStart < end) {
      const std::size_t n = std::min(kMaxLiteral, end - literalStart);
      out.push_back(static_cast<std::uint8_t>(n - 1));
      out.insert(out.end(), in + literalStart, in + literalStart + n);
      literalStart += n;
    }
  };
  std::size_t ip = 0;
  while (ip + 2 < inSize) {
    const std::uint32_t prefix = static_cast<std::uint32_t>(in[ip]) << 16 | static_cast<std::uint32_t>(in[ip + 1]) << 8 |
                                 in[ip + 2];
    const std::size_t h = (prefix * 2654435761u) >> (32 - kHashBits);
    const std::size_t candidate = table[h];
    table[h] = static_cast<std::uint32_t>(ip + 1);
    if (candidate != 0) {
      const std::size_t ref = candidate - 1;
      const std::size_t distance = ip - ref;
      if (distance <= kMaxDistance && in[ref] == in[ip] && in[ref + 1] == in[ip + 1] && in[ref + 2] == in[ip + 2]) {
        const std::size_t limit = std::min(kMaxMatch, inSize - ip);
        std::size_t len = 3;
        while (len < limit && in[ref + len] == in[ip + len]) ++len;
        flushLiterals(ip);
        const std::size_t code = len - 2;
        const std::size_t off = distance - 1;
        if (code < 7) {
          out.push_back(static_cast<std::uint8_t>(code << 5 | off >> 8));
        } else {
          out.push_back(static_cast<std::uint8_t>(7 << 5 | off >> 8));
          out.push_back(static_cast<std::uint8_t>(code - 7));
        }
        out.push_back(static_cast<std::uint8_t>(off & 0xff));
        ip += len;
        literalStart = ip;
        continue;
      }
    }
    ++ip;
  }
  flushLiterals(inSize);
  return out;
}

}  // namespace devicearray::io_detail

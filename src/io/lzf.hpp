// LZF, the compression of PCD's "binary_compressed" data: written here because no
// LZF library is reliably installed (neither Debian nor PyPI ship one every machine
// has), and the format is small. Compatible with liblzf's lzf_compress/lzf_decompress,
// which PCL uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace devicearray::io_detail {

/// The most output one input byte of LZF can produce: a 3-byte back reference copies
/// up to 264 bytes. A declared size above input × this is not LZF data.
inline constexpr std::uint64_t kLzfMaxExpansion = 88;

/// Decompresses `in` into exactly `outSize` bytes at `out`. Every reference and length
/// is checked against both buffers; returns an empty string on success, else what is
/// wrong, with the input offset where it was found.
std::string lzfDecompress(const std::uint8_t* in, std::size_t inSize, std::uint8_t* out, std::size_t outSize);

/// LZF-compresses `in` (greedy matching through a hash of 3-byte prefixes). The result
/// is at most inSize + inSize / 32 + 1 bytes.
std::vector<std::uint8_t> lzfCompress(const std::uint8_t* in, std::size_t inSize);

}  // namespace devicearray::io_detail

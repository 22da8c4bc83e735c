#include "backend/region.hpp"

#include <cstring>
#include <limits>
#include <string>

namespace devicearray::detail {

std::int64_t elementCount(int dims, const std::int64_t* size, const char* fn) {
  std::int64_t n = 1;
  for (int d = 0; d < dims; ++d) {
    if (size[d] < 0)
      fail(ErrorCode::InvalidArgument,
           std::string(fn) + ": axis " + std::to_string(d) + " has negative size " + std::to_string(size[d]));
    n = checkedMul(n, size[d], fn);
  }
  return n;
}

void checkDims(int dims, const char* fn) {
  if (dims < 0 || dims > kMaxDims)
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": " + std::to_string(dims) + " axes; 0.." + std::to_string(kMaxDims) + " are supported");
}

void checkBounds(const MemRef& ref, int dims, const std::int64_t* size, const std::int64_t* step,
                 std::size_t elemSize, const char* fn, const char* side) {
  if (ref.isHost()) return;
  const BufferRef& b = ref.buffer;
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
  if (b.offset > kMax || elemSize > kMax)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": " + side + " offset " + std::to_string(b.offset) + " is too large");
  std::int64_t lo = static_cast<std::int64_t>(b.offset);
  std::int64_t hi = checkedAdd(lo, static_cast<std::int64_t>(elemSize), fn);
  for (int d = 0; d < dims; ++d) {
    const std::int64_t reach = checkedMul(size[d] - 1, step[d], fn);
    if (reach < 0) lo = checkedAdd(lo, reach, fn);
    else hi = checkedAdd(hi, reach, fn);
  }
  if (lo < 0)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the " + side + " layout reaches " + std::to_string(-lo) +
                                    " bytes before the start of its buffer");
  const std::size_t bytes = b.allocation->bytes();
  if (bytes != 0 && static_cast<std::uint64_t>(hi) > bytes)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the " + side + " layout ends at byte " + std::to_string(hi) +
                                    " of a " + std::to_string(bytes) + "-byte buffer");
}

std::int64_t validateFill(const FillDesc& d, const char* fn) {
  checkDims(d.dims, fn);
  if (d.elemSize == 0 || d.elemSize > d.pattern.size())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": pattern size " + std::to_string(d.elemSize) +
                                         " is outside 1.." + std::to_string(d.pattern.size()));
  if (d.dst.isHost()) fail(ErrorCode::InvalidArgument, std::string(fn) + ": the destination must be device memory");
  const std::int64_t count = elementCount(d.dims, d.size.data(), fn);
  if (count != 0) checkBounds(d.dst, d.dims, d.size.data(), d.step.data(), d.elemSize, fn, "destination");
  return count;
}

bool validateConvert(const ConvertDesc& c, const char* fn) {
  const int sd = static_cast<int>(c.srcDepth), dd = static_cast<int>(c.dstDepth);
  if (sd < 0 || sd > 7 || dd < 0 || dd > 7)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": depth codes " + std::to_string(sd) + " -> " +
                                         std::to_string(dd) + " are outside 0..7");
  if (c.rows < 0 || c.values < 0)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": negative extent " + std::to_string(c.rows) + " x " +
                                         std::to_string(c.values));
  if (c.src.isHost() || c.dst.isHost())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": both sides must be device memory");
  if (c.rows == 0 || c.values == 0) return false;
  struct Side {
    const char* name;
    const MemRef& ref;
    std::int64_t step;
    std::int64_t valueBytes;
  };
  for (const Side& s : {Side{"source", c.src, c.srcStep, static_cast<std::int64_t>(depthSize(c.srcDepth))},
                        Side{"destination", c.dst, c.dstStep, static_cast<std::int64_t>(depthSize(c.dstDepth))}}) {
    const std::int64_t rowBytes = checkedMul(c.values, s.valueBytes, fn);
    if (s.step < 0 || (c.rows > 1 && s.step < rowBytes))
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + s.name + " row step " + std::to_string(s.step) +
                                           " is smaller than a row of " + std::to_string(rowBytes) + " bytes");
    if (s.ref.buffer.offset % static_cast<std::size_t>(s.valueBytes) != 0 || s.step % s.valueBytes != 0)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + s.name + " offset " +
                                           std::to_string(s.ref.buffer.offset) + " and row step " +
                                           std::to_string(s.step) + " must be multiples of the value size " +
                                           std::to_string(s.valueBytes));
    const std::int64_t sizes[2] = {c.rows, c.values};
    const std::int64_t steps[2] = {s.step, s.valueBytes};
    checkBounds(s.ref, 2, sizes, steps, static_cast<std::size_t>(s.valueBytes), fn, s.name);
  }
  return true;
}

int stridedWordBytes(std::size_t elemSize, std::uint64_t dstBase, std::uint64_t srcBase, int dims,
                     const std::int64_t* dstStep, const std::int64_t* srcStep) {
  const auto magnitude = [](std::int64_t v) {
    return v < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  };
  std::uint64_t bits = elemSize | dstBase | srcBase;
  for (int d = 0; d < dims; ++d) bits |= magnitude(dstStep[d]) | magnitude(srcStep[d]);
  int w = 16;
  while (w > 1 && bits % static_cast<std::uint64_t>(w) != 0) w /= 2;
  return w;
}

da_strided_layout stridedLayout(int dims, const std::int64_t* size, const std::int64_t* dstStep,
                                const std::int64_t* srcStep, std::size_t elemSize, int word) {
  da_strided_layout layout{};
  std::uint64_t elements = 1;
  for (int d = 0; d < dims; ++d) {
    layout.size[d] = static_cast<std::uint64_t>(size[d]);
    layout.dstStep[d] = dstStep[d];
    layout.srcStep[d] = srcStep != nullptr ? srcStep[d] : 0;
    elements *= static_cast<std::uint64_t>(size[d]);
  }
  layout.dims = dims;
  const auto wordsPerElement = static_cast<std::int64_t>(elemSize) / word;
  if (wordsPerElement > 1 || dims == 0) {
    layout.size[dims] = static_cast<std::uint64_t>(wordsPerElement);
    layout.dstStep[dims] = word;
    layout.srcStep[dims] = word;
    ++layout.dims;
  }
  layout.total = elements * static_cast<std::uint64_t>(wordsPerElement);
  if (layout.total < (std::uint64_t{1} << 31)) {
    for (int a = 0; a < layout.dims; ++a) {
      da_u32 multiplier = 0, shift = 0;
      da_fast_div_magic(static_cast<da_u32>(layout.size[a]), &multiplier, &shift);
      layout.size[a] |= static_cast<std::uint64_t>(multiplier) << 32;
      layout.shift[a] = static_cast<da_u8>(shift);
    }
  }
  return layout;
}

void hostStridedCopy(char* dst, const std::int64_t* dstStep, const char* src, const std::int64_t* srcStep, int dims,
                     const std::int64_t* size, std::size_t elemSize) noexcept {
  if (dims == 0) {
    std::memcpy(dst, src, elemSize);
    return;
  }
  std::int64_t index[kMaxDims] = {};
  const int inner = dims - 1;
  for (;;) {
    std::int64_t dOff = 0, sOff = 0;
    for (int d = 0; d < inner; ++d) {
      dOff += index[d] * dstStep[d];
      sOff += index[d] * srcStep[d];
    }
    char* drow = dst + dOff;
    const char* srow = src + sOff;
    const std::int64_t n = size[inner];
    const std::int64_t ds = dstStep[inner], ss = srcStep[inner];
    if (ds == static_cast<std::int64_t>(elemSize) && ss == ds) {
      std::memcpy(drow, srow, static_cast<std::size_t>(n) * elemSize);
    } else {
      switch (elemSize) {  // constant sizes let memcpy become one load/store
        case 4: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 4); break;
        case 8: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 8); break;
        case 12: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 12); break;
        case 16: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, 16); break;
        default: for (std::int64_t i = 0; i < n; ++i) std::memcpy(drow + i * ds, srow + i * ss, elemSize);
      }
    }
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++index[d] < size[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace devicearray::detail

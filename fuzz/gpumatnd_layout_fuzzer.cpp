// libFuzzer target: GpuMatND / HostMat layout validation. Shapes, types, steps and
// offsets for the external-memory constructors, then a sequence of views
// (operator()(ranges)), headers (createGpuMatHeader(), createGpuMatHeader(idx,
// row, col)), plane clones (operator()(idx, row, col)), GpuMat ROIs and
// HostMat::ptr(idx), all from the input.
//
// Invariants beyond "no crash, no sanitizer report, only Error thrown": every
// accepted layout lies inside the memory behind it (offset + span <= bytes), sizes
// are positive, the last step is the element size; for small arrays the bytes
// read back through the library equal a host reference computed here from the
// offsets and steps over the pool's known contents.
#include <CL/cl.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "fuzz_common.hpp"

namespace {

using namespace devicearray;

constexpr std::size_t kPoolBytes = 1 << 16;

// A cl_mem of exactly kPoolBytes with known contents, created here (not by the
// library, whose buffer cache may round capacities up) in the device's context.
struct Pool {
  cl_mem mem = nullptr;
  std::vector<std::uint8_t> bytes;  // its contents (also the host pool)
};

Pool& pool() {
  static Pool p = [] {
    Pool q;
    q.bytes.resize(kPoolBytes);
    for (std::size_t i = 0; i < kPoolBytes; ++i) q.bytes[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
    cl_int err = CL_SUCCESS;
    q.mem = clCreateBuffer(static_cast<cl_context>(dafuzz::openclDevice().nativeContext()),
                           CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kPoolBytes, q.bytes.data(), &err);
    if (err != CL_SUCCESS || q.mem == nullptr) dafuzz::invariantBroken("clCreateBuffer for the pool failed");
    return q;
  }();
  return p;
}

std::uint64_t clMemSize(void* mem) {
  std::size_t s = 0;
  if (clGetMemObjectInfo(static_cast<cl_mem>(mem), CL_MEM_SIZE, sizeof(s), &s, nullptr) != CL_SUCCESS) return 0;
  return s;
}

// Bytes an owning array of this shape and type would allocate, saturating; a
// valid but large request is legitimate for the library, so the target skips it
// rather than let real buffers exceed libFuzzer's RSS limit.
std::uint64_t allocationBytes(const std::vector<int>& shape, int type) {
  std::uint64_t total = depthSize(depthOf(type)) * static_cast<std::uint64_t>(channelsOf(type));
  for (int s : shape) {
    if (s <= 0) return 0;  // invalid: the library refuses it without allocating
    if (total > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(s)) return std::uint64_t{1} << 40;
    total *= static_cast<std::uint64_t>(s);
  }
  return total;
}
constexpr std::uint64_t kMaxAllocationBytes = std::uint64_t{1} << 20;

int smallInt(dafuzz::ByteReader& in) {
  // Mostly small values (useful shapes), sometimes anything (edge cases).
  const std::uint8_t b = in.u8();
  if (b < 200) return b % 9 - 1;  // -1 .. 7
  if (b < 230) return b % 64;
  switch (b % 6) {
    case 0: return INT_MAX;
    case 1: return INT_MIN;
    case 2: return -2;
    case 3: return 1 << 20;
    default: return in.i32();
  }
}

std::size_t stepValue(dafuzz::ByteReader& in) {
  const std::uint8_t b = in.u8();
  if (b < 220) return static_cast<std::size_t>(b);
  if (b < 240) return static_cast<std::size_t>(b) * 64;
  return static_cast<std::size_t>(in.u64());
}

Range rangeFrom(dafuzz::ByteReader& in) {
  const std::uint8_t b = in.u8();
  if (b % 5 == 0) return Range::all();
  return Range(smallInt(in), smallInt(in));
}

std::vector<std::uint8_t> reference(const std::uint8_t* base, std::size_t offset, const std::vector<int>& size,
                                    const std::vector<std::size_t>& step, std::size_t elem) {
  std::vector<std::uint8_t> out;
  std::vector<int> idx(size.size(), 0);
  while (true) {
    std::size_t off = offset;
    for (std::size_t i = 0; i < size.size(); ++i) off += static_cast<std::size_t>(idx[i]) * step[i];
    DAFUZZ_CHECK(off + elem <= kPoolBytes);
    out.insert(out.end(), base + off, base + off + elem);
    int a = static_cast<int>(size.size()) - 1;
    while (a >= 0 && ++idx[static_cast<std::size_t>(a)] == size[static_cast<std::size_t>(a)]) idx[static_cast<std::size_t>(a--)] = 0;
    if (a < 0) return out;
  }
}

void checkLayout(const GpuMatND& g) {
  DAFUZZ_CHECK(!g.empty());
  DAFUZZ_CHECK(g.dims >= 1 && static_cast<std::size_t>(g.dims) == g.size.size() && g.size.size() == g.step.size());
  for (int s : g.size) DAFUZZ_CHECK(s > 0);
  DAFUZZ_CHECK(g.step.back() == g.elemSize());
  const OpenCLBufferPtr b = g.getOpenCLBuffer();
  DAFUZZ_CHECK(b.offset + dafuzz::spanOf(g.size, g.step, g.elemSize()) <= clMemSize(b.buffer));
}

// Contents check of views of the pool (whose bytes are known) that are small.
void checkContents(const GpuMatND& g, bool ofPool) {
  if (!ofPool || g.total() > 4096) return;
  HostMat h;
  g.download(h);
  const auto want = reference(pool().bytes.data(), g.getOpenCLBuffer().offset, g.size, g.step, g.elemSize());
  DAFUZZ_CHECK(h.isContinuous() && std::memcmp(h.data(), want.data(), want.size()) == 0);
}

void checkGpuMat(const GpuMat& m, const GpuMatND& parent) {
  DAFUZZ_CHECK(m.rows > 0 && m.cols > 0);
  DAFUZZ_CHECK(m.step >= static_cast<std::size_t>(m.cols) * m.elemSize() || m.rows == 1);
  const std::uint64_t span = static_cast<std::uint64_t>(m.step) * (m.rows - 1) + static_cast<std::uint64_t>(m.cols) * m.elemSize();
  DAFUZZ_CHECK(m.getOpenCLBuffer().offset + span <= clMemSize(parent.getOpenCLBuffer().buffer));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Pool& p = pool();
  dafuzz::ByteReader in(data, size);
  const std::uint8_t mode = in.u8();
  const int dims = static_cast<int>(in.u8() % 36);  // 0..35: beyond the 32-axis limit too
  std::vector<int> shape(static_cast<std::size_t>(dims));
  for (int& s : shape) s = smallInt(in);
  const int type = (mode & 0x80) != 0 ? in.i32() : makeType(static_cast<Depth>(in.u8() % 8), 1 + in.u8() % 5);
  const int stepCount = in.u8() % 36;
  std::vector<std::size_t> steps(static_cast<std::size_t>(stepCount));
  for (auto& s : steps) s = stepValue(in);
  const std::size_t offset = (mode & 0x40) != 0 ? static_cast<std::size_t>(in.u64()) : in.take<std::uint16_t>();

  GpuMatND g;
  bool ofPool = false;
  try {
    switch (mode % 4) {
      case 0: {  // external OpenCL buffer (the pool) with the fuzzed offset and steps
        const OpenCLBufferPtr buffer{p.mem, offset};
        g = GpuMatND(shape, type, buffer, dafuzz::openclDevice(), steps);
        ofPool = true;
        break;
      }
      case 1: {  // owning allocation (bounded so the fuzzer does not spend its time in malloc)
        if (allocationBytes(shape, type) > kMaxAllocationBytes) return 0;
        g = GpuMatND(shape, type, dafuzz::openclDevice());
        break;
      }
      case 2: {  // external CUDA pointer: this build has no CUDA device, so refused
        g = GpuMatND(shape, type, reinterpret_cast<void*>(static_cast<std::uintptr_t>(offset) | 0x1000), steps);
        DAFUZZ_CHECK(false && "external CUDA memory accepted without a CUDA device");
        break;
      }
      default: {  // HostMat over the host pool: validation plus ptr()/views within it
        HostMat h(shape, type, p.bytes.data(), steps);
        const std::uint64_t span = dafuzz::spanOf(h.size, h.step, h.elemSize());
        if (span > kPoolBytes) return 0;  // valid layout, larger than the pool: never touched
        std::vector<int> idx(h.size.size());
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = smallInt(in);
        try {
          const uchar* q = h.ptr(idx);
          DAFUZZ_CHECK(q >= p.bytes.data() && q + h.elemSize() <= p.bytes.data() + span);
        } catch (const Error&) {
        }
        std::vector<Range> ranges(h.size.size());
        for (auto& r : ranges) r = rangeFrom(in);
        try {
          HostMat v = h(ranges);
          DAFUZZ_CHECK(v.data() >= p.bytes.data() &&
                       v.data() + dafuzz::spanOf(v.size, v.step, v.elemSize()) <= p.bytes.data() + span);
          if (allocationBytes(v.size, v.type()) <= kMaxAllocationBytes) {  // as the GpuMatND clones below
            HostMat c = v.clone();
            DAFUZZ_CHECK(c.isContinuous() && c.total() == v.total());
          }
        } catch (const Error&) {
        }
        return 0;
      }
    }
  } catch (const Error&) {
    return 0;
  }
  checkLayout(g);
  checkContents(g, ofPool);

  // A sequence of operations on g and the views it yields.
  for (int op = 0; op < 8 && in.remaining() > 0; ++op) {
    try {
      switch (in.u8() % 6) {
        case 0: {
          std::vector<Range> ranges(static_cast<std::size_t>(in.u8() % 2 == 0 ? g.dims : in.u8() % 34));
          for (auto& r : ranges) r = rangeFrom(in);
          GpuMatND v = g(ranges);
          checkLayout(v);
          checkContents(v, ofPool);
          g = v;
          break;
        }
        case 1: {
          GpuMat m = g.createGpuMatHeader();
          checkGpuMat(m, g);
          break;
        }
        case 2: {
          std::vector<int> idx(static_cast<std::size_t>(in.u8() % 2 == 0 ? (g.dims > 2 ? g.dims - 2 : 0) : in.u8() % 34));
          for (int& i : idx) i = smallInt(in);
          const Range rr = rangeFrom(in), cr = rangeFrom(in);
          GpuMat m = g.createGpuMatHeader(idx, rr, cr);
          checkGpuMat(m, g);
          // A clone allocates its logical size, which zero or overlapping steps can make
          // far larger than the memory behind the view: skipped past the bound, as a
          // large create is.
          if (in.flag() && allocationBytes({m.rows, m.cols}, g.type()) <= kMaxAllocationBytes) {
            GpuMat c = g(idx, rr, cr);  // a clone of the plane
            DAFUZZ_CHECK(c.rows == m.rows && c.cols == m.cols && c.isContinuous());
          }
          break;
        }
        case 3: {
          GpuMat m = g.createGpuMatHeader();
          GpuMat roi = m(rangeFrom(in), rangeFrom(in));
          checkGpuMat(roi, g);
          break;
        }
        case 4: {
          if (allocationBytes(g.size, g.type()) > kMaxAllocationBytes) break;  // as the plane's clone
          GpuMatND c = g.clone();
          checkLayout(c);
          DAFUZZ_CHECK(c.isContinuous() && c.size == g.size);
          break;
        }
        default: {
          std::vector<int> s2(static_cast<std::size_t>(1 + in.u8() % 4));
          for (int& s : s2) s = smallInt(in);
          if (allocationBytes(s2, g.type()) > kMaxAllocationBytes) break;
          GpuMatND c = g;
          c.create(s2, g.type());
          checkLayout(c);
          break;
        }
      }
    } catch (const Error&) {
    }
  }
  return 0;
}

// libFuzzer target: DLPack import (fromDLPack, versioned and legacy, GpuMatND and
// DeviceArray<Format>) of tensors whose every field comes from the input.
//
// Invariants checked beyond "no crash, no sanitizer report, only Error thrown":
//  - the producer's deleter runs exactly once, whether the import succeeds or not;
//  - an accepted tensor lies inside the real cl_mem that backs it (byte_offset
//    plus the span of shape x strides <= CL_MEM_SIZE), so no later kernel can
//    read outside it; and for small tensors the imported array's bytes, read back
//    through the library, equal the bytes a host reference computes from the
//    fuzzed strides over the known pool contents.
// Real memory backs every tensor that can pass validation: kDLOpenCL tensors point
// at one of two pool buffers of known size and contents. kDLCUDA tensors carry an
// arbitrary address (this build has no CUDA, so they must be refused untouched).
#include <CL/cl.h>

#include <cstdint>
#include <vector>

#include "devicearray/dlpack.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace devicearray;

// Buffers created here with clCreateBuffer (exact sizes, known contents) in the
// context of the library's OpenCL device, so the import resolves them to it.
struct Pool {
  cl_mem big = nullptr;    // 4096 bytes
  cl_mem small = nullptr;  // 64 bytes
  std::vector<std::uint8_t> bigBytes, smallBytes;
};

cl_mem makeBuffer(std::vector<std::uint8_t>& bytes, std::size_t n) {
  const ComputeDevice& d = dafuzz::openclDevice();
  bytes.resize(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 131 + 7);
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(static_cast<cl_context>(d.nativeContext()), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n,
                            bytes.data(), &err);
  if (err != CL_SUCCESS || m == nullptr) dafuzz::invariantBroken("clCreateBuffer for the pool failed");
  return m;
}

const Pool& pool() {
  static const Pool p = [] {
    Pool q;
    q.big = makeBuffer(q.bigBytes, 4096);
    q.small = makeBuffer(q.smallBytes, 64);
    return q;
  }();
  return p;
}

int gDeleterRuns = 0;

struct Tensor {
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
  std::vector<std::int64_t> shape, strides;
};

std::uint64_t memSize(void* mem) {
  std::size_t s = 0;
  if (clGetMemObjectInfo(static_cast<cl_mem>(mem), CL_MEM_SIZE, sizeof(s), &s, nullptr) != CL_SUCCESS) return 0;
  return s;
}

// Host reference of the imported tensor's elements (row-major), from the pool bytes.
std::vector<std::uint8_t> referenceBytes(const std::vector<std::uint8_t>& memBytes, std::uint64_t byteOffset,
                                         const std::vector<int>& size, const std::vector<std::size_t>& step,
                                         std::size_t elem) {
  std::vector<std::uint8_t> out;
  std::vector<int> idx(size.size(), 0);
  while (true) {
    std::uint64_t off = byteOffset;
    for (std::size_t i = 0; i < size.size(); ++i) off += static_cast<std::uint64_t>(idx[i]) * step[i];
    DAFUZZ_CHECK(off + elem <= memBytes.size());  // also implied by the CL_MEM_SIZE check
    out.insert(out.end(), memBytes.begin() + static_cast<std::ptrdiff_t>(off),
               memBytes.begin() + static_cast<std::ptrdiff_t>(off + elem));
    int a = static_cast<int>(size.size()) - 1;
    while (a >= 0 && ++idx[static_cast<std::size_t>(a)] == size[static_cast<std::size_t>(a)]) idx[static_cast<std::size_t>(a--)] = 0;
    if (a < 0) return out;
  }
}

void checkImported(const GpuMatND& g, void* mem, const std::vector<std::uint8_t>* memBytes) {
  DAFUZZ_CHECK(!g.empty());
  DAFUZZ_CHECK(g.dims >= 1 && g.dims <= 32);
  DAFUZZ_CHECK(g.size.size() == static_cast<std::size_t>(g.dims) && g.step.size() == static_cast<std::size_t>(g.dims));
  for (int s : g.size) DAFUZZ_CHECK(s > 0);
  const OpenCLBufferPtr b = g.getOpenCLBuffer();
  DAFUZZ_CHECK(b.buffer == mem);
  const std::uint64_t span = dafuzz::spanOf(g.size, g.step, g.elemSize());
  DAFUZZ_CHECK(b.offset + span <= memSize(mem));
  if (memBytes != nullptr && g.total() <= 2048) {
    HostMat h;
    g.download(h);
    const auto want = referenceBytes(*memBytes, b.offset, g.size, g.step, g.elemSize());
    DAFUZZ_CHECK(h.isContinuous());
    DAFUZZ_CHECK(std::memcmp(h.data(), want.data(), want.size()) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Pool& p = pool();
  dafuzz::ByteReader in(data, size);
  const std::uint8_t mode = in.u8();
  const bool legacy = (mode & 1) != 0;
  const bool asFormat = (mode & 2) != 0;
  const int formatPick = (mode >> 2) & 3;
  const bool explicitDevice = (mode & 16) != 0;
  const bool nullStrides = (mode & 32) != 0;

  auto* t = new Tensor;
  t->versioned.version.major = in.u8();
  t->versioned.version.minor = in.u8();
  t->versioned.flags = in.u64();
  const std::int32_t ndim = static_cast<std::int8_t>(in.u8());
  DLTensor& dl = legacy ? t->legacy.dl_tensor : t->versioned.dl_tensor;
  dl.ndim = ndim;
  dl.dtype.code = in.u8();
  dl.dtype.bits = in.u8();
  dl.dtype.lanes = in.take<std::uint16_t>();
  const std::uint8_t deviceSel = in.u8();
  // Written as a raw int32: a producer may put any value in this C enum field.
  const std::int32_t deviceType = deviceSel < 4 ? kDLOpenCL : deviceSel < 5 ? kDLCUDA : deviceSel < 6 ? kDLCPU : in.i32();
  std::memcpy(&dl.device.device_type, &deviceType, sizeof(deviceType));
  dl.device.device_id = in.i32();
  const std::uint8_t dataSel = in.u8() % 4;
  void* mem = nullptr;
  const std::vector<std::uint8_t>* memBytes = nullptr;
  if (dataSel == 0) {
    mem = p.big;
    memBytes = &p.bigBytes;
  } else if (dataSel == 1) {
    mem = p.small;
    memBytes = &p.smallBytes;
  } else if (dataSel == 3 && deviceType != kDLOpenCL) {
    // Any address for non-OpenCL tensors: they must be refused before it is used.
    mem = reinterpret_cast<void*>(static_cast<std::uintptr_t>(in.u64()));
  }
  dl.data = mem;
  dl.byte_offset = in.u64();
  if (ndim > 0) {
    t->shape.resize(static_cast<std::size_t>(ndim));
    for (auto& s : t->shape) s = in.i64();
    if (!nullStrides) {
      t->strides.resize(static_cast<std::size_t>(ndim));
      for (auto& s : t->strides) s = in.i64();
    }
  }
  // Exactly ndim entries (or none): ASan reports any read past them.
  dl.shape = (t->shape.empty() || (mode & 64) != 0) ? nullptr : t->shape.data();
  dl.strides = t->strides.empty() ? nullptr : t->strides.data();

  const int before = gDeleterRuns;
  t->versioned.manager_ctx = t;
  t->legacy.manager_ctx = t;
  t->versioned.deleter = [](DLManagedTensorVersioned* self) {
    ++gDeleterRuns;
    delete static_cast<Tensor*>(self->manager_ctx);
  };
  t->legacy.deleter = [](DLManagedTensor* self) {
    ++gDeleterRuns;
    delete static_cast<Tensor*>(self->manager_ctx);
  };

  const ComputeDevice& device = dafuzz::openclDevice();
  try {
    if (asFormat) {
      auto run = [&](auto tag) {
        using F = decltype(tag);
        DeviceArray<F> a = legacy ? fromDLPack<F>(&t->legacy) : fromDLPack<F>(&t->versioned);
        DAFUZZ_CHECK(!a.isEmpty());
        checkImported(a.toGpuMatND(), mem, memBytes);
      };
      switch (formatPick) {
        case 0: run(PointXYZ{}); break;
        case 1: run(ColorRGBA{}); break;
        case 2: run(PointZ{}); break;
        default: run(ColorRGBAf{}); break;
      }
    } else {
      GpuMatND g = explicitDevice ? (legacy ? fromDLPack(&t->legacy, device) : fromDLPack(&t->versioned, device))
                                  : (legacy ? fromDLPack(&t->legacy) : fromDLPack(&t->versioned));
      checkImported(g, mem, memBytes);
    }
  } catch (const Error&) {
    // Refused: the contract is an Error, never a crash or a wrong tensor.
  }
  // Every handle is gone: the deleter has run, exactly once.
  DAFUZZ_CHECK(gDeleterRuns == before + 1);
  return 0;
}

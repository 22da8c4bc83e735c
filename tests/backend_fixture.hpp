// The fixture of the backend interface tests (tests/backend_*_test.cpp,
// tests/opencl_*_test.cpp): the internal interface (src/backend/backend.hpp),
// exercised directly on every DeviceImpl of every backend. Every expectation is
// computed on the host, independently of the library.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/backend_registry.hpp"

namespace backendtest {

using devicearray::ComputeBackend;
using devicearray::Depth;
using devicearray::Error;
using devicearray::ErrorCode;
using devicearray::detail::Allocation;
using devicearray::detail::CopyDesc;
using devicearray::detail::ConvertDesc;
using devicearray::detail::DeviceImpl;
using devicearray::detail::EventImpl;
using devicearray::detail::FillDesc;
using devicearray::detail::KernelArg;
using devicearray::detail::KernelLaunch;
using devicearray::detail::MemRef;
using devicearray::detail::OrderedUse;
using devicearray::detail::QueueImpl;
using Bytes = std::vector<std::uint8_t>;
using DevicePtr = std::shared_ptr<DeviceImpl>;

inline std::vector<DevicePtr> allDevices() {
  static const std::vector<DevicePtr> devices = [] {
    std::vector<DevicePtr> v;
    for (const devicearray::detail::Backend* backend : devicearray::detail::backends())
      for (auto& d : backend->devices()) v.push_back(d);
    return v;
  }();
  return devices;
}

struct DeviceParamName {
  std::string operator()(const testing::TestParamInfo<DevicePtr>& info) const {
    return std::string(info.param->backend() == ComputeBackend::cuda ? "cuda" : "opencl") +
           std::to_string(info.param->ordinal());
  }
};

inline Bytes randomBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

template <class Fn>
void expectErrorCode(ErrorCode code, Fn&& fn, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << "expected Error(" << devicearray::toString(code) << "): " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << what << ": " << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

inline testing::AssertionResult sameBytes(const Bytes& expected, const Bytes& actual) {
  if (expected.size() != actual.size())
    return testing::AssertionFailure() << "size " << actual.size() << ", expected " << expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return testing::AssertionFailure() << "first difference at byte " << i << ": got " << int(actual[i])
                                         << ", expected " << int(expected[i]);
  return testing::AssertionSuccess();
}

class Backend : public testing::TestWithParam<DevicePtr> {
 protected:
  DeviceImpl& dev() { return *GetParam(); }
  QueueImpl& q() { return *GetParam()->libraryQueue(); }
  bool isOpenCL() { return dev().backend() == ComputeBackend::opencl; }

  /// Blocking contiguous upload of `bytes` at `offset`.
  void write(Allocation& a, std::size_t offset, const Bytes& bytes, QueueImpl* queue = nullptr) {
    QueueImpl& qq = queue ? *queue : q();
    CopyDesc c;
    c.elemSize = bytes.size();
    c.dst = MemRef::dev(&a, offset);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(bytes.data()));
    dev().copy(c, qq);
    qq.synchronize();
  }
  /// Blocking contiguous download of `n` bytes at `offset`.
  Bytes read(Allocation& a, std::size_t offset, std::size_t n, QueueImpl* queue = nullptr) {
    QueueImpl& qq = queue ? *queue : q();
    Bytes out(n);
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::hostPtr(out.data());
    c.src = MemRef::dev(&a, offset);
    dev().copy(c, qq);
    qq.synchronize();
    return out;
  }
  std::shared_ptr<Allocation> allocFilled(std::size_t n, std::uint32_t seed, Bytes* contents = nullptr) {
    auto a = dev().allocate(n, q());
    Bytes init = randomBytes(n, seed);
    write(*a, 0, init);
    if (contents) *contents = init;
    return a;
  }
  /// A fill of the first `bytes` bytes (a multiple of 4) of `a` with the byte `value`,
  /// as 4-byte elements.
  static FillDesc wordFill(Allocation& a, std::size_t bytes, std::uint8_t value) {
    FillDesc f;
    f.dims = 1;
    f.size[0] = static_cast<std::int64_t>(bytes / 4);
    f.step[0] = 4;
    f.elemSize = 4;
    f.dst = MemRef::dev(&a, 0);
    std::memset(f.pattern.data(), value, 4);
    return f;
  }
  /// Enqueues wordFill(a, bytes, value) on `queue` after the earlier users of `a`
  /// (non-blocking).
  void orderedFill(QueueImpl& queue, Allocation& a, std::size_t bytes, std::uint8_t value) {
    OrderedUse use(queue, {&a});
    dev().fill(wordFill(a, bytes, value), queue);
    use.commit();
  }
};

}  // namespace backendtest

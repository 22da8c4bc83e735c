// Fault injection: every allocation, device copy and kernel launch an operation
// reaches is made to fail in turn (src/backend/fault_injection.hpp). For each k the
// operation must throw the Error a real failure there gives (OutOfMemory for
// allocations, BackendError for copies and launches), leave no Allocation behind
// (live count back to baseline), and leave its arguments unchanged and usable
// (strong guarantee); once k exceeds the number of points the operation must succeed.
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/fault_injection.hpp"
#include "core/array_access.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using detail::FaultKind;

const char* kindName(FaultKind k) { return detail::faultKindName(k); }

/// What a real failure at a point of `kind` throws.
ErrorCode expectedCode(FaultKind k) {
  return k == FaultKind::deviceAllocation || k == FaultKind::hostAllocation ? ErrorCode::OutOfMemory
                                                                          : ErrorCode::BackendError;
}

/// The kinds a device operation can fail at.
constexpr std::array<FaultKind, 3> kDeviceKinds = {FaultKind::deviceAllocation, FaultKind::deviceCopy,
                                                   FaultKind::kernelLaunch};

/// Disarms on scope exit so a failed assertion never leaves a fault armed.
struct Disarm {
  ~Disarm() { detail::disarmFaults(); }
};

struct SweepResult {
  int faultsThrown = 0;   // k values for which the operation failed
  int successfulRun = 0;  // the k at which the operation first ran through
};

/// Runs `op` with the k-th point of `kind` failing, k = 1, 2, ..., until the
/// operation no longer reaches k points. After every failure `verify` checks the
/// arguments are unchanged and usable. `reset` (optional, run unarmed before the
/// warm-up and before every k) puts the arguments an operation changes when it
/// succeeds back into their initial state.
SweepResult sweep(const std::string& name, FaultKind kind, const std::function<void()>& op,
                  const std::function<void()>& verify, const std::function<void()>& reset = {}) {
  Disarm guard;
  SweepResult r;
  if (reset) reset();
  op();  // warm-up: lazily built caches (colour tables, kernels) are not leaks
  for (int k = 1; k <= 64; ++k) {
    if (reset) reset();
    const std::int64_t live = detail::liveAllocations();
    const std::int64_t injectedBefore = detail::faultsInjected();
    detail::armFault(kind, k);
    bool threw = false;
    try {
      op();
    } catch (const Error& e) {
      threw = true;
      EXPECT_EQ(e.code(), expectedCode(kind)) << name << " " << kindName(kind) << " k=" << k << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos)
          << name << " k=" << k << " threw a different error: " << e.what();
    } catch (const std::exception& e) {
      threw = true;
      ADD_FAILURE() << name << " k=" << k << " threw a non-devicearray exception: " << e.what();
    }
    const std::int64_t reached = detail::faultPointsReached(kind);
    detail::disarmFaults();
    if (!threw) {
      EXPECT_LT(reached, k) << name << ": the armed " << kindName(kind) << " fault k=" << k
                            << " was reached but nothing was thrown";
      EXPECT_EQ(detail::faultsInjected(), injectedBefore);
      r.successfulRun = k;
      break;
    }
    ++r.faultsThrown;
    EXPECT_EQ(detail::faultsInjected(), injectedBefore + 1) << name << " k=" << k;
    EXPECT_EQ(detail::liveAllocations(), live)
        << name << ": " << kindName(kind) << " fault k=" << k << " leaked " << (detail::liveAllocations() - live)
        << " Allocation(s)";
    verify();
  }
  EXPECT_GT(r.successfulRun, 0) << name << ": still failing after 64 " << kindName(kind) << " points";
  return r;
}

/// Faults thrown per kind of kDeviceKinds.
struct DeviceSweep {
  int allocations = 0;
  int copies = 0;
  int launches = 0;
};

/// sweep() over every kind of kDeviceKinds.
DeviceSweep sweepDevice(const std::string& name, const std::function<void()>& op, const std::function<void()>& verify,
                        const std::function<void()>& reset = {}) {
  DeviceSweep d;
  for (FaultKind kind : kDeviceKinds) {
    const int n = sweep(name, kind, op, verify, reset).faultsThrown;
    (kind == FaultKind::deviceAllocation ? d.allocations : kind == FaultKind::deviceCopy ? d.copies : d.launches) = n;
  }
  return d;
}

/// Everything of a GpuMatND's header, for before/after comparisons.
struct NdHeader {
  int flags = 0;
  int dims = 0;
  std::vector<int> size;
  std::vector<std::size_t> step;
  datest::DeviceAddress address;
  ComputeDevice device;
  bool operator==(const NdHeader&) const = default;
};

NdHeader headerOf(const GpuMatND& g) {
  return {g.flags, g.dims, g.size, g.step, g.empty() ? datest::DeviceAddress{} : datest::addressOf(g), g.device()};
}

std::string describe(const NdHeader& h) {
  std::ostringstream os;
  os << "flags " << h.flags << " dims " << h.dims << " at " << h.address << " size [";
  for (int v : h.size) os << v << ' ';
  os << "] step [";
  for (std::size_t v : h.step) os << v << ' ';
  return os.str() + "]";
}

struct HostHeader {
  int flags = 0;
  int dims = 0;
  std::vector<int> size;
  std::vector<std::size_t> step;
  const uchar* data = nullptr;
  bool operator==(const HostHeader&) const = default;
};

HostHeader headerOf(const HostMat& h) { return {h.flags, h.dims, h.size, h.step, h.data()}; }

struct MatHeader {
  int flags = 0;
  int rows = 0;
  int cols = 0;
  std::size_t step = 0;
  const void* storage = nullptr;
  std::size_t offset = 0;
  bool operator==(const MatHeader&) const = default;
};

MatHeader headerOf(const GpuMat& m) {
  const auto& storage = detail::allocationOf(m);
  return {m.flags, m.rows, m.cols, m.step, storage ? storage->handle() : nullptr, detail::offsetOf(m)};
}

std::vector<std::uint8_t> downloadPacked(const GpuMat& m) {
  HostMat h;
  m.download(h);
  return datest::packedBytes(h);
}

class FaultInjection : public testing::TestWithParam<ComputeDevice> {
 protected:
  void SetUp() override {
    device_ = GetParam();
    ndShape_ = {3, 10, 12};
    ndType_ = makeType(Depth::S16, 2);
    ndHost_ = datest::randomHostMat(ndShape_, ndType_, 11);
    ndBytes_ = datest::packedBytes(ndHost_);
    nd_ = GpuMatND(ndShape_, ndType_, device_);
    nd_.upload(ndHost_);
  }

  /// The shared input is unchanged (bytes, shape, flags) and still usable.
  void verifyNd() const {
    ASSERT_FALSE(nd_.empty());
    EXPECT_EQ(nd_.size, ndShape_);
    EXPECT_EQ(nd_.type(), ndType_);
    EXPECT_TRUE(nd_.isContinuous());
    EXPECT_TRUE(datest::bytesEqual(ndBytes_, datest::downloadPacked(nd_), nd_.elemSize()));
    EXPECT_TRUE(datest::bytesEqual(ndBytes_, datest::downloadPacked(nd_.clone()), nd_.elemSize()));
  }

  ComputeDevice device_;
  std::vector<int> ndShape_;
  int ndType_ = 0;
  HostMat ndHost_;
  std::vector<std::uint8_t> ndBytes_;
  GpuMatND nd_;
};

TEST_P(FaultInjection, CloneFailsCleanlyAtEveryDeviceAllocation) {
  const auto r = sweep("GpuMatND::clone()", FaultKind::deviceAllocation, [&] { (void)nd_.clone(); },
                       [&] { verifyNd(); });
  EXPECT_GE(r.faultsThrown, 1);
  Stream s(device_);
  const auto rs = sweep("GpuMatND::clone(Stream&)", FaultKind::deviceAllocation,
                        [&] { (void)nd_.clone(s); s.waitForCompletion(); }, [&] { verifyNd(); });
  EXPECT_GE(rs.faultsThrown, 1);
}

TEST_P(FaultInjection, ViewThenCloneFailsCleanlyAndKeepsTheParent) {
  const auto r = sweep("view+clone", FaultKind::deviceAllocation,
                       [&] {
                         GpuMatND v = nd_({Range(1, 3), Range(2, 9), Range::all()});
                         (void)v.clone();
                       },
                       [&] { verifyNd(); });
  EXPECT_GE(r.faultsThrown, 1);
}

TEST_P(FaultInjection, UploadIntoAnotherShapeKeepsTheDestinationOnFailure) {
  // dst has a different shape, so upload must allocate; on failure it must keep
  // its old storage and bytes (strong guarantee).
  const std::vector<int> otherShape{4, 5};
  const HostMat otherHost = datest::randomHostMat(otherShape, makeType(Depth::U8, 3), 5);
  const auto otherBytes = datest::packedBytes(otherHost);
  GpuMatND dst(otherShape, makeType(Depth::U8, 3), device_);
  dst.upload(otherHost);
  const auto before = datest::addressOf(dst);
  const auto r = sweep("GpuMatND::upload", FaultKind::deviceAllocation,
                       [&] {
                         GpuMatND target = dst;  // a second handle to the same storage
                         target.upload(ndHost_);
                       },
                       [&] {
                         EXPECT_EQ(dst.size, otherShape);
                         EXPECT_EQ(datest::addressOf(dst), before);
                         EXPECT_TRUE(datest::bytesEqual(otherBytes, datest::downloadPacked(dst)));
                       });
  EXPECT_GE(r.faultsThrown, 1);
  // The failing upload must also leave the handle it was called on untouched.
  detail::armFault(FaultKind::deviceAllocation, 1);
  Disarm guard;
  datest::expectError(ErrorCode::OutOfMemory, [&] { dst.upload(ndHost_); });
  EXPECT_EQ(dst.size, otherShape);
  EXPECT_EQ(datest::addressOf(dst), before);
  EXPECT_TRUE(datest::bytesEqual(otherBytes, datest::downloadPacked(dst)));
}

TEST_P(FaultInjection, UploadIntoEmptyArrayStaysEmptyOnFailure) {
  GpuMatND dst;
  const auto r = sweep("GpuMatND::upload(empty)", FaultKind::deviceAllocation,
                       [&] {
                         GpuMatND target;
                         target.upload(ndHost_);
                       },
                       [&] { verifyNd(); });
  EXPECT_GE(r.faultsThrown, 1);
  detail::armFault(FaultKind::deviceAllocation, 1);
  Disarm guard;
  datest::expectError(ErrorCode::OutOfMemory, [&] { dst.upload(ndHost_); });
  EXPECT_TRUE(dst.empty());
}

TEST_P(FaultInjection, DownloadIntoFreshHostMatFailsCleanly) {
  const auto r = sweep("GpuMatND::download(fresh HostMat)", FaultKind::hostAllocation,
                       [&] {
                         HostMat h;
                         nd_.download(h);
                       },
                       [&] { verifyNd(); });
  EXPECT_GE(r.faultsThrown, 1);
  // A wrong-shaped destination keeps its old storage and bytes.
  HostMat h = datest::randomHostMat({2, 2}, makeType(Depth::U8, 1), 3);
  const auto old = datest::packedBytes(h);
  const uchar* oldData = h.data();
  detail::armFault(FaultKind::hostAllocation, 1);
  Disarm guard;
  datest::expectError(ErrorCode::OutOfMemory, [&] { nd_.download(h); });
  EXPECT_EQ(h.size, (std::vector<int>{2, 2}));
  EXPECT_EQ(h.data(), oldData);
  EXPECT_EQ(datest::packedBytes(h), old);
}

TEST_P(FaultInjection, HostMatAllocationsFailCleanly) {
  const auto r = sweep("HostMat::clone", FaultKind::hostAllocation, [&] { (void)ndHost_.clone(); },
                       [&] { EXPECT_EQ(datest::packedBytes(ndHost_), ndBytes_); });
  EXPECT_GE(r.faultsThrown, 1);
  const auto rp = sweep("HostMat::pinned", FaultKind::hostAllocation,
                        [&] { (void)HostMat::pinned({64, 64}, makeType(Depth::F32, 1)); }, [] {});
  EXPECT_GE(rp.faultsThrown, 1);
}

TEST_P(FaultInjection, GpuMatCloneAndConvertToFailCleanly) {
  GpuMat m(12, 9, makeType(Depth::U8, 3), device_);
  m.upload(datest::randomHostMat({12, 9}, makeType(Depth::U8, 3), 9));
  HostMat ref;
  m.download(ref);
  const auto refBytes = datest::packedBytes(ref);
  auto verify = [&] {
    HostMat h;
    m.download(h);
    EXPECT_EQ(datest::packedBytes(h), refBytes);
  };
  EXPECT_GE(sweep("GpuMat::clone", FaultKind::deviceAllocation, [&] { (void)m.clone(); }, verify).faultsThrown, 1);
  EXPECT_GE(sweep("GpuMat::convertTo", FaultKind::deviceAllocation,
                  [&] {
                    GpuMat dst;
                    m.convertTo(dst, makeType(Depth::F32, 3), 0.5, 1.0);
                  },
                  verify)
                .faultsThrown,
            1);
}

TEST_P(FaultInjection, DeviceArrayFromHostAndConvertFailCleanly) {
  std::vector<PointXYZ> pts(7 * 11);
  for (std::size_t i = 0; i < pts.size(); ++i) pts[i] = PointXYZ{float(i), float(2 * i), float(3 * i)};
  std::vector<ColorRGBA> rgba(7 * 11);
  for (std::size_t i = 0; i < rgba.size(); ++i)
    rgba[i] = ColorRGBA{std::uint8_t(i), std::uint8_t(i * 3), std::uint8_t(i * 5), 200};
  EXPECT_GE(sweep("DeviceArray::fromHost", FaultKind::deviceAllocation,
                  [&] { (void)DeviceArray<PointXYZ>::fromHost(pts.data(), 7, 11, device_); }, [] {})
                .faultsThrown,
            1);
  EXPECT_GE(sweep("DeviceArray::allocate", FaultKind::deviceAllocation,
                  [&] { (void)DeviceArray<PointZ>::allocate(std::size_t{1000}, device_); }, [] {})
                .faultsThrown,
            1);

  const auto src = DeviceArray<PointXYZ>::fromHost(pts.data(), 7, 11, device_);
  const auto colors = DeviceArray<ColorRGBA>::fromHost(rgba.data(), rgba.size(), device_);
  auto verify = [&] {
    const auto back = src.toHost();
    ASSERT_EQ(back.size(), pts.size());
    EXPECT_EQ(std::memcmp(back.data(), pts.data(), pts.size() * sizeof(PointXYZ)), 0);
    const auto c = colors.toHost();
    ASSERT_EQ(c.size(), rgba.size());
    EXPECT_EQ(std::memcmp(c.data(), rgba.data(), rgba.size() * sizeof(ColorRGBA)), 0);
  };
  EXPECT_GE(sweep("convert<PointXYZW>", FaultKind::deviceAllocation,
                  [&] {
                    auto out = convert<PointXYZW>(src, device_.sdkStreamOrQueue());
                    synchronizeStream(device_.sdkStreamOrQueue());
                  },
                  verify)
                .faultsThrown,
            1);
  EXPECT_GE(sweep("convert<ColorRGBAf>", FaultKind::deviceAllocation,
                  [&] {
                    auto out = convert<ColorRGBAf>(colors, device_.sdkStreamOrQueue());
                    synchronizeStream(device_.sdkStreamOrQueue());
                  },
                  verify)
                .faultsThrown,
            1);
}

TEST_P(FaultInjection, DLPackExportAndImportFailCleanlyAndRunDeletersOnce) {
  auto verify = [&] { verifyNd(); };
  EXPECT_GE(sweep("toDLPackVersioned", FaultKind::hostAllocation,
                  [&] {
                    DLManagedTensorVersioned* t = toDLPackVersioned(nd_);
                    t->deleter(t);
                  },
                  verify)
                .faultsThrown,
            1);
  EXPECT_GE(sweep("toDLPack", FaultKind::hostAllocation,
                  [&] {
                    DLManagedTensor* t = toDLPack(nd_);
                    t->deleter(t);
                  },
                  verify)
                .faultsThrown,
            1);
  // The host copy allocates its manager context and the host bytes: two points.
  EXPECT_GE(sweep("toDLPackVersionedHostCopy", FaultKind::hostAllocation,
                  [&] {
                    DLManagedTensorVersioned* t = toDLPackVersionedHostCopy(nd_);
                    t->deleter(t);
                  },
                  verify)
                .faultsThrown,
            2);
  // Import: the export succeeds (unarmed), the import's wrapper allocation fails;
  // the producer's deleter must still run exactly once (the live count proves the
  // exported GpuMatND copy inside the manager context was released).
  static int deleterRuns = 0;
  struct Producer {
    DLManagedTensorVersioned tensor{};
    DLManagedTensorVersioned* inner = nullptr;
  };
  // Host point 1 is the export's manager context, point 2 the import's wrapper.
  const auto r = sweep("toDLPackVersioned+fromDLPack", FaultKind::hostAllocation,
                       [&] {
                         DLManagedTensorVersioned* inner = toDLPackVersioned(nd_);
                         auto* p = new Producer;
                         p->tensor = *inner;
                         p->inner = inner;
                         p->tensor.manager_ctx = p;
                         p->tensor.deleter = [](DLManagedTensorVersioned* self) {
                           auto* prod = static_cast<Producer*>(self->manager_ctx);
                           ++deleterRuns;
                           prod->inner->deleter(prod->inner);
                           delete prod;
                         };
                         const int before = deleterRuns;
                         try {
                           GpuMatND g = fromDLPack(&p->tensor);
                           EXPECT_EQ(datest::downloadPacked(g), ndBytes_);
                         } catch (...) {
                           EXPECT_EQ(deleterRuns, before + 1) << "deleter did not run exactly once on failure";
                           throw;
                         }
                         EXPECT_EQ(deleterRuns, before + 1);
                       },
                       verify);
  EXPECT_GE(r.faultsThrown, 2);
}

// ------------------------------------------ copies and launches (strong guarantee) --

TEST_P(FaultInjection, GpuMatNDUploadLeavesTheArrayUnchangedWhenACopyFails) {
  const std::vector<int> otherShape{4, 5};
  const int otherType = makeType(Depth::U8, 3);
  const HostMat otherHost = datest::randomHostMat(otherShape, otherType, 5);
  const auto otherBytes = datest::packedBytes(otherHost);
  Stream stream(device_);
  GpuMatND dst;
  NdHeader before;
  for (const bool blocking : {true, false}) {
    auto upload = [&] {
      if (blocking) {
        dst.upload(ndHost_);
      } else {
        dst.upload(ndHost_, stream);
        stream.waitForCompletion();
      }
    };
    const std::string form = blocking ? " (blocking)" : " (stream)";
    // Another shape: a new array is filled, then replaces dst.
    auto resetOther = [&] {
      dst = GpuMatND(otherShape, otherType, device_);
      dst.upload(otherHost);
      before = headerOf(dst);
    };
    auto keptOther = [&] {
      EXPECT_EQ(headerOf(dst), before) << describe(headerOf(dst)) << " vs " << describe(before);
      EXPECT_TRUE(datest::bytesEqual(otherBytes, datest::downloadPacked(dst)));
    };
    const auto other = sweepDevice("GpuMatND::upload into another shape" + form, upload, keptOther, resetOther);
    EXPECT_GE(other.allocations, 1);
    EXPECT_GE(other.copies, 1);
    // Same shape and type: written in place; a copy that fails to start writes nothing.
    const HostMat sameShape = datest::randomHostMat(ndShape_, ndType_, 99);
    const auto sameBytes = datest::packedBytes(sameShape);
    auto resetSame = [&] {
      if (dst.size != ndShape_ || dst.type() != ndType_) dst = GpuMatND(ndShape_, ndType_, device_);
      dst.upload(sameShape);
      before = headerOf(dst);
    };
    auto keptSame = [&] {
      EXPECT_EQ(headerOf(dst), before);
      EXPECT_TRUE(datest::bytesEqual(sameBytes, datest::downloadPacked(dst), dst.elemSize()));
    };
    EXPECT_GE(sweepDevice("GpuMatND::upload in place" + form, upload, keptSame, resetSame).copies, 1);
    // Empty: stays empty.
    auto resetEmpty = [&] { dst.release(); };
    auto keptEmpty = [&] { EXPECT_TRUE(dst.empty()); };
    EXPECT_GE(sweepDevice("GpuMatND::upload into an empty array" + form, upload, keptEmpty, resetEmpty).copies, 1);
  }
}

TEST_P(FaultInjection, GpuMatNDDownloadLeavesTheHostMatUnchangedWhenACopyFails) {
  Stream stream(device_);
  const HostMat otherHost = datest::randomHostMat({2, 9}, makeType(Depth::F32, 1), 8);
  const HostMat sameHost = datest::randomHostMat(ndShape_, ndType_, 6);
  HostMat dst;
  HostHeader before;
  std::vector<std::uint8_t> beforeBytes;
  for (const bool blocking : {true, false}) {
    auto download = [&] {
      if (blocking) {
        nd_.download(dst);
      } else {
        nd_.download(dst, stream);
        stream.waitForCompletion();
      }
    };
    auto kept = [&] {
      EXPECT_TRUE(headerOf(dst) == before) << "the destination HostMat's header changed";
      EXPECT_EQ(datest::packedBytes(dst), beforeBytes);
      verifyNd();
    };
    const std::string form = blocking ? " (blocking)" : " (stream)";
    const std::vector<std::pair<std::string, const HostMat*>> cases = {
        {"another shape", &otherHost}, {"same shape", &sameHost}, {"empty", nullptr}};
    for (const auto& [what, initial] : cases) {
      auto reset = [&, initial = initial] {
        dst = initial != nullptr ? initial->clone() : HostMat();
        before = headerOf(dst);
        beforeBytes = datest::packedBytes(dst);
      };
      EXPECT_GE(sweep("GpuMatND::download into " + what + form, FaultKind::deviceCopy, download, kept, reset)
                    .faultsThrown,
                1);
    }
  }
}

TEST_P(FaultInjection, CloneFailsCleanlyAtEveryCopy) {
  Stream s(device_);
  auto verify = [&] { verifyNd(); };
  EXPECT_GE(sweep("GpuMatND::clone()", FaultKind::deviceCopy, [&] { (void)nd_.clone(); }, verify).faultsThrown, 1);
  EXPECT_GE(sweep("GpuMatND::clone(Stream&)", FaultKind::deviceCopy,
                  [&] {
                    (void)nd_.clone(s);
                    s.waitForCompletion();
                  },
                  verify)
                .faultsThrown,
            1);
  EXPECT_GE(sweep("view+clone", FaultKind::deviceCopy,
                  [&] { (void)nd_({Range(1, 3), Range(2, 9), Range::all()}).clone(); }, verify)
                .faultsThrown,
            1);
}

TEST_P(FaultInjection, GpuMatOperationsLeaveTheirArgumentsUnchangedWhenACopyOrLaunchFails) {
  const int type = makeType(Depth::U8, 3);
  GpuMat src(12, 9, type, device_);
  src.upload(datest::randomHostMat({12, 9}, type, 9));
  const auto srcBytes = downloadPacked(src);
  const MatHeader srcHeader = headerOf(src);
  const HostMat otherHost = datest::randomHostMat({3, 4}, makeType(Depth::S16, 1), 2);
  const auto otherBytes = datest::packedBytes(otherHost);
  Stream stream(device_);
  GpuMat dst;
  MatHeader before;
  std::vector<std::uint8_t> beforeBytes;
  auto resetOther = [&] {
    dst = GpuMat(3, 4, makeType(Depth::S16, 1), device_);
    dst.upload(otherHost);
    before = headerOf(dst);
    beforeBytes = otherBytes;
  };
  auto resetSame = [&] {
    dst = GpuMat(12, 9, type, device_);
    dst.setTo(Scalar(7, 8, 9));
    before = headerOf(dst);
    beforeBytes = downloadPacked(dst);
  };
  auto kept = [&] {
    EXPECT_TRUE(headerOf(dst) == before) << "the destination GpuMat's header changed";
    EXPECT_EQ(downloadPacked(dst), beforeBytes);
    EXPECT_TRUE(headerOf(src) == srcHeader);
    EXPECT_EQ(downloadPacked(src), srcBytes);
  };
  const HostMat host = datest::randomHostMat({12, 9}, type, 3);
  for (const auto& [what, reset] : {std::pair<const char*, std::function<void()>>{"another shape", resetOther},
                                    std::pair<const char*, std::function<void()>>{"the same shape", resetSame}}) {
    const std::string into = std::string(" into ") + what;
    EXPECT_GE(sweepDevice("GpuMat::upload" + into, [&] { dst.upload(host); }, kept, reset).copies, 1);
    EXPECT_GE(sweepDevice("GpuMat::upload(Stream&)" + into,
                          [&] {
                            dst.upload(host, stream);
                            stream.waitForCompletion();
                          },
                          kept, reset)
                  .copies,
              1);
    EXPECT_GE(sweepDevice("GpuMat::copyTo" + into, [&] { src.copyTo(dst); }, kept, reset).copies, 1);
    EXPECT_GE(sweepDevice("GpuMat::copyTo(Stream&)" + into,
                          [&] {
                            src.copyTo(dst, stream);
                            stream.waitForCompletion();
                          },
                          kept, reset)
                  .copies,
              1);
    EXPECT_GE(sweepDevice("GpuMat::convertTo" + into, [&] { src.convertTo(dst, makeType(Depth::U8, 3), 2.0, 1.0); },
                          kept, reset)
                  .launches,
              1);
  }
  EXPECT_GE(sweepDevice("GpuMat::setTo", [&] { dst.setTo(Scalar(1, 2, 3)); }, kept, resetSame).launches, 1);
  EXPECT_GE(sweepDevice("GpuMat::clone", [&] { (void)src.clone(); }, kept, resetSame).copies, 1);
}

TEST_P(FaultInjection, DeviceArrayTransfersAndConversionsFailCleanlyAtEveryCopyAndLaunch) {
  std::vector<PointXYZ> pts(7 * 11);
  for (std::size_t i = 0; i < pts.size(); ++i) pts[i] = PointXYZ{float(i), float(2 * i), float(3 * i)};
  std::vector<ColorRGBA> rgba(7 * 11);
  for (std::size_t i = 0; i < rgba.size(); ++i)
    rgba[i] = ColorRGBA{std::uint8_t(i), std::uint8_t(i * 3), std::uint8_t(i * 5), 200};
  const auto src = DeviceArray<PointXYZ>::fromHost(pts.data(), 7, 11, device_);
  const auto colors = DeviceArray<ColorRGBA>::fromHost(rgba.data(), rgba.size(), device_);
  const void* const srcAddress = src.devicePointer();
  auto verify = [&] {
    EXPECT_EQ(src.devicePointer(), srcAddress);
    EXPECT_EQ(src.shape(), (std::vector<int>{7, 11, 3}));
    const auto back = src.toHost();
    ASSERT_EQ(back.size(), pts.size());
    EXPECT_EQ(std::memcmp(back.data(), pts.data(), pts.size() * sizeof(PointXYZ)), 0);
    const auto c = colors.toHost();
    ASSERT_EQ(c.size(), rgba.size());
    EXPECT_EQ(std::memcmp(c.data(), rgba.data(), rgba.size() * sizeof(ColorRGBA)), 0);
  };
  const auto sq = device_.sdkStreamOrQueue();
  EXPECT_GE(sweepDevice("DeviceArray::fromHost", [&] { (void)DeviceArray<PointXYZ>::fromHost(pts.data(), 7, 11, device_); },
                        verify)
                .copies,
            1);
  EXPECT_GE(sweepDevice("DeviceArray::toHost", [&] { (void)src.toHost(); }, verify).copies, 1);
  EXPECT_GE(sweepDevice("convert<PointXYZW>",
                        [&] {
                          (void)convert<PointXYZW>(src, sq);
                          synchronizeStream(sq);
                        },
                        verify)
                .launches,
            1);
  EXPECT_GE(sweepDevice("convert<PointXYZ> (a copy)",
                        [&] {
                          (void)convert<PointXYZ>(src, sq);
                          synchronizeStream(sq);
                        },
                        verify)
                .copies,
            1);
  EXPECT_GE(sweepDevice("convert<ColorBGR>",
                        [&] {
                          (void)convert<ColorBGR>(colors, sq);
                          synchronizeStream(sq);
                        },
                        verify)
                .launches,
            1);
  // Into an existing array: a launch that fails to start leaves it as it was.
  const auto target = DeviceArray<PointXYZW>::allocate(7, 11, device_);
  const std::vector<PointXYZW> fill(pts.size(), PointXYZW{-1, -2, -3, -4});
  auto writeTarget = [&] {
    const auto staged = DeviceArray<PointXYZW>::fromHost(fill.data(), 7, 11, device_);
    convertInto(target.view(), staged, sq);
    synchronizeStream(sq);
  };
  auto targetKept = [&] {
    verify();
    const auto t = target.toHost();
    ASSERT_EQ(t.size(), fill.size());
    EXPECT_EQ(std::memcmp(t.data(), fill.data(), fill.size() * sizeof(PointXYZW)), 0);
  };
  EXPECT_GE(sweepDevice("convertInto",
                        [&] {
                          convertInto(target.view(), src, sq);
                          synchronizeStream(sq);
                        },
                        targetKept, writeTarget)
                .launches,
            1);
}

/// Point clouds: the operations give the strong guarantee (point_cloud.hpp).
class PointCloudFaults : public FaultInjection {
 protected:
  struct Snapshot {
    int height = 0, width = 0;
    std::size_t size = 0;
    Matrix4x4 transform{};
    const void* xyz = nullptr;
    const void* colors = nullptr;
    const void* snrs = nullptr;
    std::vector<PointXYZ> xyzValues;
    std::vector<ColorRGBA> colorValues;
    std::vector<SNR> snrValues;
    bool operator==(const Snapshot&) const;
  };

  template <class Cloud>
  static Snapshot snapshot(const Cloud& c, int height, int width) {
    Snapshot s;
    s.height = height;
    s.width = width;
    s.size = c.size();
    s.transform = c.transformationMatrix();
    s.xyz = c.storedXYZ().devicePointer();
    s.colors = c.storedColors().devicePointer();
    s.snrs = c.storedSNRs().devicePointer();
    s.xyzValues = c.storedXYZ().toHost();
    if (c.hasColors()) s.colorValues = c.storedColors().toHost();
    if (c.hasSNRs()) s.snrValues = c.storedSNRs().toHost();
    return s;
  }
  static Snapshot snapshot(const PointCloud& c) { return snapshot(c, c.height(), c.width()); }
  static Snapshot snapshot(const UnorganizedPointCloud& c) { return snapshot(c, 0, 0); }

  /// An organized cloud with colours, SNR and some missing points.
  PointCloud makeCloud() const {
    constexpr int h = 12, w = 16;
    std::vector<PointXYZ> xyz(h * w);
    std::vector<ColorRGBA> rgba(h * w);
    std::vector<SNR> snr(h * w);
    for (int i = 0; i < h * w; ++i) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      xyz[i] = i % 7 == 3 ? PointXYZ{nan, nan, nan} : PointXYZ{float(i % w), float(i / w), 100.0f + float(i % 5)};
      rgba[i] = ColorRGBA{std::uint8_t(i), std::uint8_t(2 * i), std::uint8_t(3 * i), 255};
      snr[i] = SNR{1.0f + float(i % 3)};
    }
    return PointCloud::fromHost(h, w, xyz.data(), rgba.data(), snr.data(), device_);
  }
};

bool PointCloudFaults::Snapshot::operator==(const Snapshot& o) const {
  auto sameBytes = [](const auto& a, const auto& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
  };
  return height == o.height && width == o.width && size == o.size && transform == o.transform && xyz == o.xyz &&
         colors == o.colors && snrs == o.snrs && sameBytes(xyzValues, o.xyzValues) &&
         sameBytes(colorValues, o.colorValues) && sameBytes(snrValues, o.snrValues);
}

TEST_P(PointCloudFaults, OrganizedCloudOperationsKeepTheCloudWhenACopyOrLaunchFails) {
  PointCloud cloud;
  Snapshot before;
  auto reset = [&] {
    cloud = makeCloud();
    before = snapshot(cloud);
  };
  auto kept = [&] { EXPECT_TRUE(snapshot(cloud) == before) << "the cloud changed although the call failed"; };
  Matrix4x4 shift = identityMatrix4x4();
  shift[3] = 5.0f;
  std::vector<std::uint8_t> mask(12 * 16, 1);
  mask[5] = 0;
  RegionOfInterestBox box{};
  box.origin = {0, 0, 0};
  box.pointA = {10, 0, 0};
  box.pointB = {0, 10, 0};
  box.minExtent = -200;
  box.maxExtent = 200;
  EXPECT_GE(sweepDevice("PointCloud::downsample", [&] { cloud.downsample(Downsampling::by2x2); }, kept, reset).launches, 1);
  EXPECT_GE(sweepDevice("PointCloud::transform", [&] { cloud.transform(shift); }, kept, reset).launches, 1);
  EXPECT_GE(sweepDevice("PointCloud::mask", [&] { cloud.mask(mask.data(), 12, 16); }, kept, reset).launches, 1);
  EXPECT_GE(sweepDevice("PointCloud::maskByRegionOfInterest", [&] { cloud.maskByRegionOfInterest(box); }, kept, reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("PointCloud::transformAndMaskByRegionOfInterest",
                        [&] { cloud.transformAndMaskByRegionOfInterest(shift, box); }, kept, reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("PointCloud::deviceNormalsXYZ (restricted plane fit)",
                        [&] { (void)cloud.deviceNormalsXYZ(5, box, shift, cloud.device().sdkStreamOrQueue()); }, kept,
                        reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("PointCloud::toUnorganizedPointCloud", [&] { (void)cloud.toUnorganizedPointCloud(); }, kept,
                        reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("PointCloud::toHost", [&] { (void)cloud.toHost(); }, kept, reset).copies, 1);
}

TEST_P(PointCloudFaults, UnorganizedCloudOperationsKeepTheCloudWhenACopyOrLaunchFails) {
  UnorganizedPointCloud cloud;
  Snapshot before;
  const UnorganizedPointCloud other = makeCloud().toUnorganizedPointCloud();
  auto reset = [&] {
    cloud = makeCloud().toUnorganizedPointCloud();
    before = snapshot(cloud);
  };
  auto kept = [&] { EXPECT_TRUE(snapshot(cloud) == before) << "the cloud changed although the call failed"; };
  Matrix4x4 shift = identityMatrix4x4();
  shift[7] = -3.0f;
  EXPECT_GE(sweepDevice("UnorganizedPointCloud::voxelDownsampled", [&] { (void)cloud.voxelDownsampled(2.0f, 1); }, kept,
                        reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("UnorganizedPointCloud::transform", [&] { cloud.transform(shift); }, kept, reset).launches, 1);
  EXPECT_GE(sweepDevice("UnorganizedPointCloud::extend", [&] { cloud.extend(other); }, kept, reset).copies, 1);
  EXPECT_GE(sweepDevice("UnorganizedPointCloud::paintUniformColor",
                        [&] { cloud.paintUniformColor(ColorRGBA{1, 2, 3, 4}); }, kept, reset)
                .launches,
            1);
  EXPECT_GE(sweepDevice("UnorganizedPointCloud::center", [&] { cloud.center(); }, kept, reset).launches, 1);
}

TEST_P(PointCloudFaults, FrameLoopSubmitFailsCleanlyAndTheLoopGoesOn) {
  const HostPointCloud frame = makeCloud().toHost();
  const PipelineStages stages =
      PipelineStages::parse({"--downsample", "2x2", "--transform", "1,0,0,5,0,1,0,0,0,0,1,0,0,0,0,1", "--unorganize"});
  FrameLoop loop(stages, device_, 2);
  std::size_t submitted = 0;  // the frames whose submit() returned
  auto op = [&] {
    const LoopFrame f = loop.submit(frame);
    EXPECT_EQ(f.index, submitted);
    ++submitted;
  };
  // A failed submit() leaves the count as it was (the next frame takes the same index).
  auto kept = [&] { EXPECT_EQ(loop.submitted(), submitted) << "a failed submit() counted a frame"; };
  const DeviceSweep faults = sweepDevice("FrameLoop::submit", op, kept);
  EXPECT_GE(faults.allocations, 3);  // the three uploaded arrays at least
  EXPECT_GE(faults.copies, 1);
  EXPECT_GE(faults.launches, 3);
  LoopFrame f = loop.submit(frame);
  f.stream.waitForCompletion();
  EXPECT_EQ(f.points.toHost().xyz, runPipeline(frame, stages, device_).cloud.xyz);
}

TEST(FaultInjectionHook, DisarmedPointsCostNothingAndArmedPointsFireOnce) {
  Disarm guard;
  EXPECT_NO_THROW(detail::faultPoint(FaultKind::hostAllocation, "test"));
  detail::armFault(FaultKind::hostAllocation, 2);
  EXPECT_NO_THROW(detail::faultPoint(FaultKind::hostAllocation, "first"));
  EXPECT_NO_THROW(detail::faultPoint(FaultKind::deviceAllocation, "other kind"));
  datest::expectError(ErrorCode::OutOfMemory, [] { detail::faultPoint(FaultKind::hostAllocation, "second"); });
  EXPECT_NO_THROW(detail::faultPoint(FaultKind::hostAllocation, "third: fired once, now disarmed"));
  EXPECT_EQ(detail::gFaultArmed.load(), 0);
}

DATEST_INSTANTIATE_OVER_DEVICES(FaultInjection);
DATEST_INSTANTIATE_OVER_DEVICES(PointCloudFaults);

}  // namespace

namespace {
/// Prints how many faults the run injected (quoted in docs/RELIABILITY.md).
class FaultCountReport : public testing::Environment {
 public:
  void TearDown() override {
    std::printf("[fault injection] %lld failures injected (allocations, copies, launches)\n",
                static_cast<long long>(devicearray::detail::faultsInjected()));
  }
};
[[maybe_unused]] testing::Environment* const kFaultCountReport =
    testing::AddGlobalTestEnvironment(new FaultCountReport);
}  // namespace

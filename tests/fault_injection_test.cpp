// Fault injection: every allocation point an operation reaches is made to fail
// in turn (src/core/fault_injection.hpp). For each k the operation must throw
// Error(OutOfMemory), leave no Allocation behind (live count back to baseline),
// and leave its inputs unchanged and usable (API.md §1 strong guarantee); once k
// exceeds the number of allocation points the operation must succeed.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/fault_injection.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;
using detail::FaultKind;

const char* kindName(FaultKind k) { return k == FaultKind::deviceAllocation ? "device" : "host"; }

/// Disarms on scope exit so a failed assertion never leaves a fault armed.
struct Disarm {
  ~Disarm() { detail::disarmFaults(); }
};

struct SweepResult {
  int faultsThrown = 0;   // k values for which the operation failed
  int successfulRun = 0;  // the k at which the operation first ran through
};

/// Runs `op` with the k-th allocation point of `kind` failing, k = 1, 2, ...,
/// until the operation no longer reaches k points. After every failure `verify`
/// checks the inputs are unchanged and usable.
SweepResult sweep(const std::string& name, FaultKind kind, const std::function<void()>& op,
                  const std::function<void()>& verify) {
  Disarm guard;
  SweepResult r;
  op();  // warm-up: lazily built caches (colour tables, kernels) are not leaks
  for (int k = 1; k <= 64; ++k) {
    const std::int64_t live = detail::liveAllocations();
    const std::int64_t injectedBefore = detail::faultsInjected();
    detail::armFault(kind, k);
    bool threw = false;
    try {
      op();
    } catch (const Error& e) {
      threw = true;
      EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << name << " k=" << k << ": " << e.what();
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
  EXPECT_GT(r.successfulRun, 0) << name << ": still failing after 64 allocation points";
  return r;
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

}  // namespace

namespace {
/// Prints how many faults the run injected (quoted in docs/RELIABILITY.md).
class FaultCountReport : public testing::Environment {
 public:
  void TearDown() override {
    std::printf("[fault injection] %lld allocation failures injected\n",
                static_cast<long long>(devicearray::detail::faultsInjected()));
  }
};
[[maybe_unused]] testing::Environment* const kFaultCountReport =
    testing::AddGlobalTestEnvironment(new FaultCountReport);
}  // namespace

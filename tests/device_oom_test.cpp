// Real device out-of-memory (GPU machine only; skips without CUDA): asking for
// more than the whole device (an H200 has 141 GB) is Error(OutOfMemory) naming
// the request, nothing is left allocated, and the process keeps working.
// Kept cheap: the failing requests fail at once in the driver's pool.
#include <cstring>

#include "backend/fault_injection.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

TEST(DeviceOutOfMemory, RequestLargerThanTheDeviceIsOutOfMemoryAndTheDeviceStaysUsable) {
  DATEST_REQUIRE_CUDA(device);
  const std::size_t total = device.totalMemory();
  const std::int64_t live = detail::liveAllocations();
  const std::size_t freeBefore = device.freeMemory();
  // 160 GiB as 160 x 1 GiB of bytes: valid shape, no size_t overflow, larger than the device.
  const std::size_t request = std::size_t{160} << 30;
  ASSERT_GT(request, total) << "device has more than 160 GiB; raise the request";
  try {
    GpuMatND huge({160, 1 << 30}, makeType(Depth::U8, 1), device);
    FAIL() << "allocating " << request << " bytes on a " << total << "-byte device succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("GpuMatND"), std::string::npos) << "message should name the call: " << e.what();
  }
  // 98304 x 131072 points of 16 bytes: 192 GiB (an unorganized array of that many
  // points would be OutOfRange first: its [N, 4] shape holds N as an int).
  try {
    (void)DeviceArray<PointXYZW>::allocate(98304, 131072, device);
    FAIL() << "a 192 GiB DeviceArray was allocated on a " << total << "-byte device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("DeviceArray::allocate"), std::string::npos) << e.what();
  }
  EXPECT_EQ(detail::liveAllocations(), live);
  // The failed requests left nothing behind (the slack covers the driver's own
  // bookkeeping).
  const std::size_t freeAfterFailures = device.freeMemory();
  EXPECT_LT(freeBefore > freeAfterFailures ? freeBefore - freeAfterFailures : 0, std::size_t{256} << 20)
      << "free memory before " << freeBefore << ", after the failed requests " << freeAfterFailures;

  // The device keeps working: a round trip of fresh data, and a large (1/4 of the
  // device) allocation that fits.
  const HostMat h = datest::randomHostMat({256, 1024}, makeType(Depth::F32, 1), 3);
  GpuMatND g(h.size, h.type(), device);
  g.upload(h);
  EXPECT_TRUE(datest::bytesEqual(datest::packedBytes(h), datest::downloadPacked(g.clone()), 4));
  // A quarter of the device, twice: the second allocation reuses what the first
  // released (the library's pool keeps freed memory for reuse instead of handing it
  // back to the driver, so free memory drops once, not twice).
  const auto quarterRows = static_cast<int>(total / 4 / (1 << 20));
  std::size_t freeWithQuarterCached = 0;
  for (int round = 0; round < 2; ++round) {
    {
      GpuMatND quarter({quarterRows, 1 << 20}, makeType(Depth::U8, 1), device);
      GpuMat row = quarter({Range(0, 1), Range::all()}).createGpuMatHeader();
      row.setTo(Scalar{5.0});
    }
    synchronizeStream(device.sdkStreamOrQueue());
    if (round == 0) {
      freeWithQuarterCached = device.freeMemory();
    } else {
      const std::size_t now = device.freeMemory();
      EXPECT_LT(freeWithQuarterCached > now ? freeWithQuarterCached - now : 0, std::size_t{256} << 20)
          << "a second quarter-of-the-device allocation did not reuse the first one's memory: free "
          << freeWithQuarterCached << " then " << now;
    }
  }
  g.release();
  synchronizeStream(device.sdkStreamOrQueue());
  EXPECT_EQ(detail::liveAllocations(), live);
}

}  // namespace

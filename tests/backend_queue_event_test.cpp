// Backend interface: events (completion, timing), two queues ordered through an
// allocation, and wrapped queues.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend_fixture.hpp"

namespace backendtest {
namespace {

TEST_P(Backend, EventsCompleteInOrderAndMeasureTime) {
  auto queue = dev().createQueue();
  auto a = dev().allocate(std::size_t{8} << 20, *queue);
  auto start = dev().recordTimingEvent(*queue);
  dev().fill(wordFill(*a, std::size_t{8} << 20, 0), *queue);
  auto end = dev().recordTimingEvent(*queue);
  EXPECT_EQ(start->queueKey(), queue->key());
  end->synchronize();
  EXPECT_TRUE(start->query());
  EXPECT_TRUE(end->query());
  EXPECT_TRUE(queue->query());
  const float ms = start->elapsedMs(*end);
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 60000.0f);
  // Waiting on a completed event of another queue is a no-op, not an error.
  q().waitEvent(*end);
  q().synchronize();
}

TEST_P(Backend, TwoQueuesAreOrderedThroughAnAllocation) {
  const std::size_t n = std::size_t{16} << 20;
  auto q1 = dev().createQueue();
  auto q2 = dev().createQueue();
  auto a = dev().allocate(n, *q1);
  const Bytes data = randomBytes(n, 77);
  {
    // q1 uploads (non-blocking); q2 must see the data without a host sync.
    OrderedUse use(*q1, {a.get()});
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::dev(a.get(), 0);
    c.src = MemRef::hostPtr(const_cast<std::uint8_t*>(data.data()));
    dev().copy(c, *q1);
    use.commit();
  }
  Bytes got(n);
  {
    OrderedUse use(*q2, {a.get()});
    CopyDesc c;
    c.elemSize = n;
    c.dst = MemRef::hostPtr(got.data());
    c.src = MemRef::dev(a.get(), 0);
    dev().copy(c, *q2);
    use.commit();
  }
  q2->synchronize();
  EXPECT_TRUE(sameBytes(data, got));
  q1->synchronize();
  // Write-after-write: q1 fills, q2 fills after it; q2's pattern must win.
  orderedFill(*q1, *a, n, 0x5A);
  orderedFill(*q2, *a, n, 0xC3);
  q2->synchronize();
  q1->synchronize();
  EXPECT_TRUE(sameBytes(Bytes(n, 0xC3), read(*a, 0, n)));
}

TEST_P(Backend, WrappedQueuesKeepTheirHandleAndDevice) {
  // (On CUDA a null handle is the legacy default stream, not the library's own.)
  if (isOpenCL()) {
    auto wrapped = dev().wrapQueue(nullptr);
    ASSERT_TRUE(wrapped);
    EXPECT_EQ(wrapped->native(), q().native());
    EXPECT_EQ(wrapped->device().get(), &dev());
  }
  auto own = dev().createQueue();
  auto again = dev().wrapQueue(own->native());
  EXPECT_EQ(again->native(), own->native());
  EXPECT_EQ(again->device().get(), &dev());
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Backend);
INSTANTIATE_TEST_SUITE_P(AllDevices, Backend, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest

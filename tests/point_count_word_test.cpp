// PointCountWord (src/pointcloud/pending_point_count.hpp), the point count of a cloud
// known after an event, on every device: the words it reads around the count (the error
// flag before it, the words after it for its reader) against the words written.
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "backend_fixture.hpp"
#include "pointcloud/pending_point_count.hpp"

namespace backendtest {
namespace {

using devicearray::detail::PointCountWord;

class CountWord : public Backend {
 protected:
  /// An allocation holding the u32 words `words`.
  std::shared_ptr<Allocation> wordsOnDevice(const std::vector<std::uint32_t>& words) {
    auto a = dev().allocate(words.size() * sizeof(std::uint32_t), q());
    Bytes b(words.size() * sizeof(std::uint32_t));
    std::memcpy(b.data(), words.data(), b.size());
    write(*a, 0, b);
    return a;
  }
};

TEST_P(CountWord, ReadsTheCountAndHandsTheNextWordsToItsReader) {
  // [flag, count, next, a word past them]: with and without the error flag.
  const auto block = wordsOnDevice({0u, 4242u, 17u, 0xDEADBEEFu, 99u});
  std::optional<std::uint32_t> next;
  PointCountWord withFlag(block, sizeof(std::uint32_t), "the grid failed", 1,
                          [&](const std::uint32_t* w) { next = w[0]; });
  EXPECT_FALSE(withFlag.isRead());
  EXPECT_EQ(withFlag.read(), 4242u);
  EXPECT_TRUE(withFlag.isRead());
  EXPECT_EQ(next, 17u);
  next.reset();
  EXPECT_EQ(withFlag.read(), 4242u);  // read once: the reader is not called again
  EXPECT_FALSE(next.has_value());
  EXPECT_EQ(withFlag.unread()->read(), 4242u);  // read again, and so is the reader
  EXPECT_EQ(next, 17u);

  next.reset();
  PointCountWord withoutFlag(block, 2 * sizeof(std::uint32_t), {}, 1, [&](const std::uint32_t* w) { next = w[0]; });
  EXPECT_EQ(withoutFlag.read(), 17u);  // the count is the word at the offset...
  EXPECT_EQ(next, 0xDEADBEEFu);        // ...and the reader gets the one after it

  std::vector<std::uint32_t> after;
  PointCountWord three(block, sizeof(std::uint32_t), "failed", 3,
                       [&](const std::uint32_t* w) { after.assign(w, w + 3); });
  EXPECT_EQ(three.read(), 4242u);
  EXPECT_EQ(after, (std::vector<std::uint32_t>{17u, 0xDEADBEEFu, 99u}));

  PointCountWord plain(block, sizeof(std::uint32_t));
  EXPECT_EQ(plain.read(), 4242u);
}

TEST_P(CountWord, RefusesMoreWordsAfterTheCountThanItReads) {
  const auto block = wordsOnDevice(std::vector<std::uint32_t>(20, 0u));
  expectErrorCode(ErrorCode::InvalidArgument,
                  [&] { PointCountWord(block, sizeof(std::uint32_t), {}, 17, [](const std::uint32_t*) {}); },
                  "17 words after the count");
  PointCountWord sixteen(block, sizeof(std::uint32_t), {}, 16, [](const std::uint32_t*) {});
  EXPECT_EQ(sixteen.read(), 0u);
}

TEST_P(CountWord, AReaderThatThrowsDoesNotFailTheCount) {
  const auto block = wordsOnDevice({0u, 7u, 3u});
  PointCountWord word(block, sizeof(std::uint32_t), "failed", 1, [](const std::uint32_t*) { throw std::bad_alloc(); });
  EXPECT_EQ(word.read(), 7u);
}

TEST_P(CountWord, AnErrorFlagThrowsItsMessageAndSkipsTheReader) {
  const auto block = wordsOnDevice({1u, 5u, 9u});
  bool called = false;
  PointCountWord word(block, sizeof(std::uint32_t), "voxelSize 1e-09 is too small", 1,
                      [&](const std::uint32_t*) { called = true; });
  expectErrorCode(ErrorCode::InvalidArgument, [&] { (void)word.read(); }, "the error flag");
  try {
    (void)word.read();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("voxelSize 1e-09 is too small"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(called);
  EXPECT_FALSE(word.isRead());
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CountWord);
INSTANTIATE_TEST_SUITE_P(AllDevices, CountWord, testing::ValuesIn(allDevices()), DeviceParamName());

}  // namespace
}  // namespace backendtest

// Regression tests for findings of the fuzzers (fuzz/) and sanitizer runs
// (scripts/sanitize.sh). Each names the finding; the reproducing fuzz input is
// also kept in fuzz/corpus/<target>/regression_*.
#include <cstring>

#include "devicearray/dlpack.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

int gDeleted = 0;

// dlpack_import fuzzer, UBSan "load of value ... not a valid value for type
// DLDeviceType": a producer's device_type outside the enumerators this build
// knows (a newer DLPack device, or garbage) was loaded as the C++ enum.
TEST(FuzzRegression, DLPackImportOfUnknownDeviceTypeIsUnsupportedAndDeletesOnce) {
  for (std::int32_t raw : {0, 3, 5, 6, 99, 1000, 0x7fffffff, -1, -2147483647 - 1}) {
    static std::int64_t shape[1] = {4};
    static std::uint8_t bytes[4] = {1, 2, 3, 4};
    auto* t = new DLManagedTensorVersioned{};
    t->version = {1, 1};
    t->dl_tensor.data = bytes;
    t->dl_tensor.ndim = 1;
    t->dl_tensor.shape = shape;
    t->dl_tensor.dtype = DLDataType{kDLUInt, 8, 1};
    std::memcpy(&t->dl_tensor.device.device_type, &raw, sizeof(raw));
    t->deleter = [](DLManagedTensorVersioned* self) {
      ++gDeleted;
      delete self;
    };
    const int before = gDeleted;
    datest::expectError(ErrorCode::Unsupported, [&] { (void)fromDLPack(t); },
                        ("device_type " + std::to_string(raw)).c_str());
    EXPECT_EQ(gDeleted, before + 1) << "device_type " << raw;
  }
}

}  // namespace

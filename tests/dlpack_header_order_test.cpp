// devicearray/dlpack.hpp after a DLPack 1.1 dlpack.h: the older header's tensor
// types serve, and ours adds the C exchange API, which 1.1 does not have.
//
// The stand-in below declares what a 1.1 dlpack.h declares (the DLPack 1.1 ABI, in
// this project's words) and takes its include guard, as the real header does.
#include <cstdint>

#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#define DLPACK_EXTERN_C extern "C"
#define DLPACK_DLL

// What a v1.1 dlpack.h declares, one line per type.
extern "C" {
typedef struct { std::uint32_t major, minor; } DLPackVersion;
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4 } DLDeviceType;
typedef struct { DLDeviceType device_type; std::int32_t device_id; } DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U } DLDataTypeCode;
typedef struct { std::uint8_t code, bits; std::uint16_t lanes; } DLDataType;
typedef struct { void* data; DLDevice device; std::int32_t ndim; DLDataType dtype;
                 std::int64_t *shape, *strides; std::uint64_t byte_offset; } DLTensor;
typedef struct DLManagedTensor { DLTensor dl_tensor; void* manager_ctx;
                                 void (*deleter)(struct DLManagedTensor*); } DLManagedTensor;
typedef struct DLManagedTensorVersioned { DLPackVersion version; void* manager_ctx;
                                          void (*deleter)(struct DLManagedTensorVersioned*);
                                          std::uint64_t flags; DLTensor dl_tensor; } DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
}

#include <gtest/gtest.h>

#include <cstddef>

#include "devicearray/dlpack.hpp"

static_assert(DEVICEARRAY_DLPACK_HAS_EXCHANGE_API == 1, "the exchange API is added after a 1.1 dlpack.h");
static_assert(DLPACK_MINOR_VERSION == 1, "the dlpack.h included first keeps its version");

namespace {

TEST(DLPackHeaderOrder, OlderDlpackHeaderFirstGetsTheExchangeApi) {
  EXPECT_EQ(sizeof(DLPackExchangeAPIHeader), 2 * sizeof(void*));
  EXPECT_EQ(offsetof(DLPackExchangeAPI, managed_tensor_allocator), sizeof(DLPackExchangeAPIHeader));
  EXPECT_EQ(offsetof(DLPackExchangeAPI, current_work_stream), sizeof(DLPackExchangeAPIHeader) + 4 * sizeof(void*));
  // The library's functions take the older header's types.
  EXPECT_THROW(devicearray::fromDLPack(static_cast<DLManagedTensorVersioned*>(nullptr)), devicearray::Error);
}

}  // namespace

// ABI of devicearray/dlpack.hpp against an independent dlpack.h.
//
// This file includes only the system's <dlpack/dlpack.h> (Debian's libdlpack-dev
// when present) and records its offsets, sizes and enumerator values; the library
// reports the same keys for its own declarations (tests/dlpack_layout.hpp). Every
// key the system header defines must agree. The v1-only structs, which a pre-1.0
// system header lacks, are checked against the LP64 layout worked out by hand from
// the DLPack 1.x specification.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>

#include "dlpack_layout.hpp"

#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define DATEST_HAVE_SYSTEM_DLPACK 1
#endif

namespace {

using Table = std::map<std::string, std::size_t>;

Table libraryTable() {
  Table t;
  for (const auto& [key, value] : devicearray::detail::dlpackLayoutTable()) {
    EXPECT_EQ(t.count(key), 0u) << "duplicate key " << key;
    t[key] = value;
  }
  return t;
}

#if defined(DATEST_HAVE_SYSTEM_DLPACK)
Table systemTable() {
  Table t;
#define DATEST_STRUCT(T) \
  t["sizeof(" #T ")"] = sizeof(T); \
  t["alignof(" #T ")"] = alignof(T)
#define DATEST_FIELD(T, field) t[#T "." #field] = offsetof(T, field)
#define DATEST_VALUE(name) t[#name] = static_cast<std::size_t>(name)
  DATEST_STRUCT(DLDeviceType);
  DATEST_STRUCT(DLDevice);
  DATEST_FIELD(DLDevice, device_type);
  DATEST_FIELD(DLDevice, device_id);
  DATEST_STRUCT(DLDataType);
  DATEST_FIELD(DLDataType, code);
  DATEST_FIELD(DLDataType, bits);
  DATEST_FIELD(DLDataType, lanes);
  DATEST_STRUCT(DLTensor);
  DATEST_FIELD(DLTensor, data);
  DATEST_FIELD(DLTensor, device);
  DATEST_FIELD(DLTensor, ndim);
  DATEST_FIELD(DLTensor, dtype);
  DATEST_FIELD(DLTensor, shape);
  DATEST_FIELD(DLTensor, strides);
  DATEST_FIELD(DLTensor, byte_offset);
  DATEST_STRUCT(DLManagedTensor);
  DATEST_FIELD(DLManagedTensor, dl_tensor);
  DATEST_FIELD(DLManagedTensor, manager_ctx);
  DATEST_FIELD(DLManagedTensor, deleter);
  DATEST_VALUE(kDLCPU);
  DATEST_VALUE(kDLCUDA);
  DATEST_VALUE(kDLCUDAHost);
  DATEST_VALUE(kDLOpenCL);
  DATEST_VALUE(kDLVulkan);
  DATEST_VALUE(kDLMetal);
  DATEST_VALUE(kDLVPI);
  DATEST_VALUE(kDLROCM);
  DATEST_VALUE(kDLROCMHost);
  DATEST_VALUE(kDLExtDev);
  DATEST_VALUE(kDLCUDAManaged);
  DATEST_VALUE(kDLInt);
  DATEST_VALUE(kDLUInt);
  DATEST_VALUE(kDLFloat);
  DATEST_VALUE(kDLOpaqueHandle);
  DATEST_VALUE(kDLBfloat);
  DATEST_VALUE(kDLComplex);
#if defined(DLPACK_MAJOR_VERSION)  // v1 headers: the versioned tensor and its flags
  DATEST_STRUCT(DLPackVersion);
  DATEST_FIELD(DLPackVersion, major);
  DATEST_FIELD(DLPackVersion, minor);
  DATEST_STRUCT(DLManagedTensorVersioned);
  DATEST_FIELD(DLManagedTensorVersioned, version);
  DATEST_FIELD(DLManagedTensorVersioned, manager_ctx);
  DATEST_FIELD(DLManagedTensorVersioned, deleter);
  DATEST_FIELD(DLManagedTensorVersioned, flags);
  DATEST_FIELD(DLManagedTensorVersioned, dl_tensor);
  DATEST_VALUE(kDLOneAPI);
  DATEST_VALUE(kDLWebGPU);
  DATEST_VALUE(kDLHexagon);
  DATEST_VALUE(kDLBool);
  DATEST_VALUE(DLPACK_FLAG_BITMASK_READ_ONLY);
  DATEST_VALUE(DLPACK_FLAG_BITMASK_IS_COPIED);
  DATEST_VALUE(DLPACK_MAJOR_VERSION);
#endif
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MINOR_VERSION >= 3  // the C exchange API
  DATEST_VALUE(kDLTrn);
  DATEST_STRUCT(DLPackExchangeAPIHeader);
  DATEST_FIELD(DLPackExchangeAPIHeader, version);
  DATEST_FIELD(DLPackExchangeAPIHeader, prev_api);
  DATEST_STRUCT(DLPackExchangeAPI);
  DATEST_FIELD(DLPackExchangeAPI, header);
  DATEST_FIELD(DLPackExchangeAPI, managed_tensor_allocator);
  DATEST_FIELD(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync);
  DATEST_FIELD(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync);
  DATEST_FIELD(DLPackExchangeAPI, dltensor_from_py_object_no_sync);
  DATEST_FIELD(DLPackExchangeAPI, current_work_stream);
#endif
#undef DATEST_STRUCT
#undef DATEST_FIELD
#undef DATEST_VALUE
  return t;
}
#endif

TEST(DLPackABI, DeclarationsMatchTheSystemDlpackHeader) {
#if !defined(DATEST_HAVE_SYSTEM_DLPACK)
  GTEST_SKIP() << "<dlpack/dlpack.h> is not installed on this machine (libdlpack-dev); "
                  "the hand-worked layout test below still runs";
#else
  const Table ours = libraryTable();
  const Table theirs = systemTable();
  ASSERT_GE(theirs.size(), 30u);
  for (const auto& [key, value] : theirs) {
    SCOPED_TRACE(key);
    const auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << "the library does not report " << key;
    EXPECT_EQ(it->second, value);
  }
#endif
}

// Hand-worked LP64 layout (pointers and int64/uint64 are 8 bytes and 8-aligned,
// enums and int32 are 4 bytes):
//   DLDevice      {int device_type @0, int32 device_id @4}                    = 8
//   DLDataType    {uint8 code @0, uint8 bits @1, uint16 lanes @2}             = 4
//   DLTensor      {data @0, device @8, ndim @16, dtype @20, shape @24,
//                  strides @32, byte_offset @40}                              = 48
//   DLManagedTensor {dl_tensor @0, manager_ctx @48, deleter @56}              = 64
//   DLPackVersion {uint32 major @0, uint32 minor @4}                          = 8
//   DLManagedTensorVersioned {version @0, manager_ctx @8, deleter @16,
//                             flags @24, dl_tensor @32}                       = 80
//   DLPackExchangeAPIHeader {version @0, prev_api @8}                         = 16
//   DLPackExchangeAPI {header @0, then five function pointers @16..@48}       = 56
TEST(DLPackABI, DeclarationsHaveTheSpecifiedLP64Layout) {
  if (sizeof(void*) != 8) GTEST_SKIP() << "the hand-worked layout is for 64-bit targets";
  const Table ours = libraryTable();
  const Table expected = {
      {"sizeof(DLDeviceType)", 4},
      {"sizeof(DLDevice)", 8}, {"DLDevice.device_type", 0}, {"DLDevice.device_id", 4},
      {"sizeof(DLDataType)", 4}, {"DLDataType.code", 0}, {"DLDataType.bits", 1}, {"DLDataType.lanes", 2},
      {"sizeof(DLTensor)", 48}, {"alignof(DLTensor)", 8}, {"DLTensor.data", 0}, {"DLTensor.device", 8},
      {"DLTensor.ndim", 16}, {"DLTensor.dtype", 20}, {"DLTensor.shape", 24}, {"DLTensor.strides", 32},
      {"DLTensor.byte_offset", 40},
      {"sizeof(DLManagedTensor)", 64}, {"DLManagedTensor.dl_tensor", 0}, {"DLManagedTensor.manager_ctx", 48},
      {"DLManagedTensor.deleter", 56},
      {"sizeof(DLPackVersion)", 8}, {"DLPackVersion.major", 0}, {"DLPackVersion.minor", 4},
      {"sizeof(DLManagedTensorVersioned)", 80}, {"DLManagedTensorVersioned.version", 0},
      {"DLManagedTensorVersioned.manager_ctx", 8}, {"DLManagedTensorVersioned.deleter", 16},
      {"DLManagedTensorVersioned.flags", 24}, {"DLManagedTensorVersioned.dl_tensor", 32},
      {"sizeof(DLPackExchangeAPIHeader)", 16}, {"DLPackExchangeAPIHeader.version", 0},
      {"DLPackExchangeAPIHeader.prev_api", 8},
      {"sizeof(DLPackExchangeAPI)", 56}, {"DLPackExchangeAPI.header", 0},
      {"DLPackExchangeAPI.managed_tensor_allocator", 16},
      {"DLPackExchangeAPI.managed_tensor_from_py_object_no_sync", 24},
      {"DLPackExchangeAPI.managed_tensor_to_py_object_no_sync", 32},
      {"DLPackExchangeAPI.dltensor_from_py_object_no_sync", 40}, {"DLPackExchangeAPI.current_work_stream", 48},
      // Enumerator values from the DLPack 1.x specification.
      {"kDLCPU", 1}, {"kDLCUDA", 2}, {"kDLCUDAHost", 3}, {"kDLOpenCL", 4}, {"kDLVulkan", 7}, {"kDLMetal", 8},
      {"kDLVPI", 9}, {"kDLROCM", 10}, {"kDLROCMHost", 11}, {"kDLExtDev", 12}, {"kDLCUDAManaged", 13},
      {"kDLOneAPI", 14}, {"kDLWebGPU", 15}, {"kDLHexagon", 16}, {"kDLMAIA", 17}, {"kDLTrn", 18},
      {"kDLInt", 0}, {"kDLUInt", 1}, {"kDLFloat", 2}, {"kDLOpaqueHandle", 3}, {"kDLBfloat", 4}, {"kDLComplex", 5},
      {"kDLBool", 6},
      {"DLPACK_FLAG_BITMASK_READ_ONLY", 1}, {"DLPACK_FLAG_BITMASK_IS_COPIED", 2},
      {"DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED", 4}, {"DLPACK_MAJOR_VERSION", 1},
      {"DLPACK_MINOR_VERSION", 3},
  };
  for (const auto& [key, value] : expected) {
    SCOPED_TRACE(key);
    const auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << "the library does not report " << key;
    EXPECT_EQ(it->second, value);
  }
}

}  // namespace

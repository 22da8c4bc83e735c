// The layout of devicearray's own DLPack declarations, for the ABI test.
//
// The ABI test compares those declarations with another dlpack.h, and a
// translation unit cannot hold both (the type names are the same), so the library
// (src/interop/dlpack.cpp, which includes devicearray/dlpack.hpp) reports its
// offsets, sizes and enumerator values through this DLPack-free interface.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace devicearray::detail {

/// Entries keyed "sizeof(T)", "alignof(T)", "T.field" (offsetof) and enumerator or
/// macro names (value), for DLPackVersion, DLDeviceType, DLDevice, DLDataType,
/// DLTensor, DLManagedTensor, DLManagedTensorVersioned, DLPackExchangeAPIHeader,
/// DLPackExchangeAPI, every DLDeviceType value, the DLDataTypeCode values
/// kDLInt..kDLBool, the three flag bits, DLPACK_MAJOR_VERSION and
/// DLPACK_MINOR_VERSION. Defined in src/interop/dlpack.cpp.
std::vector<std::pair<std::string, std::size_t>> dlpackLayoutTable();

}  // namespace devicearray::detail

// Building a DLPack tensor from a DeviceArray by hand, from its public accessors,
// and checking it field by field against the library's toDLPackVersioned().
//
// The point: shape(), strides(), the element type, backend()/device() and
// devicePointer() are exactly the fields a DLTensor needs. (The library's exporter
// additionally keeps the memory alive and waits for pending work; a hand-made
// tensor is only a borrowed view.)
#include <cstdio>
#include <cstring>
#include <vector>

#include "devicearray/devicearray.hpp"
#include "devicearray/dlpack.hpp"

namespace da = devicearray;

int main() {
  da::ComputeDevice device;
  try {
    device = da::ComputeDevice::defaultDevice();
  } catch (const da::Error&) {
    std::puts("skipped: no CUDA or OpenCL device");
    return 0;
  }
  try {
    std::vector<da::ColorRGBA> pixels(4 * 6, da::ColorRGBA{10, 20, 30, 255});
    const auto image = da::DeviceArray<da::ColorRGBA>::fromHost(pixels.data(), 4, 6, device);

    // --- by hand ---
    std::vector<std::int64_t> shape, strides;
    for (int s : image.shape()) shape.push_back(s);      // [H, W, C] = [4, 6, 4]
    for (int s : image.strides()) strides.push_back(s);  // elements: [24, 4, 1]
    DLTensor mine{};
    mine.ndim = static_cast<std::int32_t>(shape.size());
    mine.shape = shape.data();
    mine.strides = strides.data();
    mine.dtype = DLDataType{kDLUInt, 8, 1};  // ColorRGBA::ValueType is std::uint8_t
    if (image.backend() == da::ComputeBackend::cuda) {
      mine.device = DLDevice{kDLCUDA, device.ordinal()};
      mine.data = image.devicePointer();  // device address of element 0
      mine.byte_offset = 0;
    } else {
      // The index among the OpenCL devices of ComputeDevice::all() (0 for adopted devices).
      mine.device = DLDevice{kDLOpenCL, device.ordinal() < 0 ? 0 : device.ordinal()};
      mine.data = image.devicePointer();  // the cl_mem
      mine.byte_offset = image.byteOffset();
    }

    // --- by the library ---
    DLManagedTensorVersioned* theirs = da::toDLPackVersioned(image);
    const DLTensor& t = theirs->dl_tensor;
    bool same = t.ndim == mine.ndim && t.data == mine.data && t.byte_offset == mine.byte_offset &&
                t.device.device_type == mine.device.device_type && t.device.device_id == mine.device.device_id &&
                t.dtype.code == mine.dtype.code && t.dtype.bits == mine.dtype.bits && t.dtype.lanes == mine.dtype.lanes;
    for (int i = 0; same && i < t.ndim; ++i) same = t.shape[i] == mine.shape[i] && t.strides[i] == mine.strides[i];
    std::printf("%s: ndim %d, shape [%lld, %lld, %lld], strides [%lld, %lld, %lld], %s\n", device.toString().c_str(),
                t.ndim, (long long)t.shape[0], (long long)t.shape[1], (long long)t.shape[2], (long long)t.strides[0],
                (long long)t.strides[1], (long long)t.strides[2], same ? "identical to the hand-made tensor" : "DIFFERENT");
    theirs->deleter(theirs);  // exactly once: releases the library's reference
    return same ? 0 : 1;
  } catch (const da::Error& e) {
    std::fprintf(stderr, "dlpack_by_hand: %s\n", e.what());
    return 1;
  }
}

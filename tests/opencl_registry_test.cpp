// The OpenCL device list: GPUs first, the index as ordinal, built once.
#include <cstddef>

#include "backend_fixture.hpp"
#include "cl_api.hpp"

namespace backendtest {
namespace {

TEST(OpenCLRegistry, DevicesAreListedGpusFirstWithTheirIndexAsOrdinal) {
  const devicearray::detail::Backend& opencl = devicearray::detail::backendOf(ComputeBackend::opencl);
  EXPECT_EQ(opencl.kind(), ComputeBackend::opencl);
  const auto devices = opencl.devices();
  if (devices.empty()) {
    EXPECT_FALSE(opencl.unavailableReason().empty());
    GTEST_SKIP() << "no OpenCL device: " << opencl.unavailableReason();
  }
  EXPECT_EQ(opencl.unavailableReason(), "");
  const ClApi* cl = ClApi::get();
  int lastRank = -1;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i]->ordinal(), static_cast<int>(i));
    EXPECT_EQ(devices[i]->backend(), ComputeBackend::opencl);
    EXPECT_FALSE(devices[i]->model().empty());
    EXPECT_GT(devices[i]->totalMemory(), 0u);
    EXPECT_LE(devices[i]->freeMemory(), devices[i]->totalMemory());
    if (cl == nullptr) continue;
    cl_device_type type = 0;
    cl->getDeviceInfo(static_cast<cl_device_id>(devices[i]->nativeDevice()), CL_DEVICE_TYPE, sizeof type, &type, nullptr);
    const int rank = (type & CL_DEVICE_TYPE_GPU) ? 0 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : (type & CL_DEVICE_TYPE_CPU) ? 2 : 3;
    EXPECT_GE(rank, lastRank) << "device " << i << " (" << devices[i]->model() << ") is listed out of order";
    lastRank = rank;
  }
  EXPECT_EQ(opencl.devices(), devices) << "the list is built once";
}

}  // namespace
}  // namespace backendtest

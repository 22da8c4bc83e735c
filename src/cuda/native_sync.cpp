// synchronizeStream() for a raw cudaStream_t of any device.
#include <cuda_runtime_api.h>

#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

void cudaSynchronizeNative(void* stream) {
  const cudaError_t err = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    fail(ErrorCode::BackendError, std::string("synchronizeStream: cudaStreamSynchronize: ") + cudaGetErrorName(err) +
                                      ": " + cudaGetErrorString(err));
}

}  // namespace devicearray::detail

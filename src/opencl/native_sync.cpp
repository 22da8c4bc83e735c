// synchronizeStream() for a raw cl_command_queue of any context.
#include <CL/cl.h>

#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

void openclFinishNative(void* queue) {
  if (queue == nullptr)
    fail(ErrorCode::InvalidArgument, "synchronizeStream: null cl_command_queue");
  const cl_int err = clFinish(static_cast<cl_command_queue>(queue));
  if (err != CL_SUCCESS)
    fail(ErrorCode::BackendError, "synchronizeStream: clFinish failed with OpenCL error " + std::to_string(err));
}

}  // namespace devicearray::detail

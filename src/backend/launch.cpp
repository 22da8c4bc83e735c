// KernelLaunch's checks shared by the backends' launch().
#include <limits>
#include <string>

#include "backend/backend.hpp"

namespace devicearray::detail {

void KernelLaunch::checkWorkGroup(const char* fn, std::size_t maxLocalSize) const {
  if (localSize == 0) return;
  if (workDims == 1 && globalSize[0] % localSize == 0 && localSize <= maxLocalSize) return;
  std::string message = std::string(fn) + ": " + (name != nullptr ? name : "(unnamed kernel)") +
                        ": work-group size " + std::to_string(localSize) +
                        " needs a 1-D launch whose global size (" + std::to_string(globalSize[0]) +
                        ") is a multiple of it";
  if (maxLocalSize != std::numeric_limits<std::size_t>::max())
    message += ", at most " + std::to_string(maxLocalSize);
  fail(ErrorCode::InvalidArgument, message);
}

}  // namespace devicearray::detail

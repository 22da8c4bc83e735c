#include "opencl/work_group_fit.hpp"

#include <algorithm>

namespace devicearray::detail::opencl {

FittedWorkGroups fitWorkGroups(int workDims, const std::array<std::size_t, 3>& global, std::size_t maxGroupItems) {
  FittedWorkGroups fit;
  fit.global = global;
  const auto dims = static_cast<std::size_t>(std::clamp(workDims, 1, 3));
  std::array<std::size_t, 3> group{32, 4, 1};
  if (dims == 1) group = {128, 1, 1};
  bool divides = true;
  for (std::size_t d = 0; d < dims; ++d) divides = divides && global[d] % group[d] == 0;
  if (divides) return fit;

  const std::size_t limit = std::max<std::size_t>(maxGroupItems, 1);
  while (group[0] * group[1] * group[2] > limit) {
    if (group[1] > 1)
      group[1] /= 2;
    else
      group[0] /= 2;
  }
  fit.local = group;
  fit.explicitLocal = true;
  for (std::size_t d = 0; d < dims; ++d) fit.global[d] = (global[d] + group[d] - 1) / group[d] * group[d];
  return fit;
}

}  // namespace devicearray::detail::opencl

// HostPointCloud: its factory and invariants.
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "devicearray/host_point_cloud.hpp"
#include "io/io_detail.hpp"

namespace devicearray {

using io_detail::checkedMul;
using io_detail::invalid;

HostPointCloud HostPointCloud::organized(int height, int width, bool withColors, bool withSNR,
                                         bool withNormals) {
  if (height <= 0 || width <= 0)
    invalid("HostPointCloud::organized: size " + std::to_string(height) + " x " + std::to_string(width) +
            " must be positive");
  const std::size_t n = checkedMul(static_cast<std::size_t>(height), static_cast<std::size_t>(width),
                                   "HostPointCloud::organized: point count");
  const std::size_t xyzCount = checkedMul(n, 3, "HostPointCloud::organized: xyz");
  const std::size_t rgbaCount = checkedMul(n, 4, "HostPointCloud::organized: rgba");
  HostPointCloud cloud;
  cloud.height = height;
  cloud.width = width;
  try {
    cloud.xyz.assign(xyzCount, std::numeric_limits<float>::quiet_NaN());
    if (withColors) cloud.rgba.assign(rgbaCount, 0);
    if (withSNR) cloud.snr.assign(n, 0.0f);
    if (withNormals) cloud.normals.assign(xyzCount, std::numeric_limits<float>::quiet_NaN());
  } catch (const std::exception&) {  // bad_alloc or length_error
    io_detail::fail(ErrorCode::OutOfMemory, "HostPointCloud::organized: cannot allocate a " + std::to_string(height) +
                                                " x " + std::to_string(width) + " cloud");
  }
  return cloud;
}

bool HostPointCloud::isValid(std::size_t i) const noexcept {
  const float* p = xyz.data() + 3 * i;
  return std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]);
}

std::size_t HostPointCloud::validCount() const noexcept {
  std::size_t count = 0;
  for (std::size_t i = 0, n = size(); i < n; ++i) count += isValid(i) ? 1 : 0;
  return count;
}

void HostPointCloud::validate() const {
  const std::string fn = "HostPointCloud::validate: ";
  if (height < 0 || width < 0 || (height == 0) != (width == 0))
    invalid(fn + "height " + std::to_string(height) + " and width " + std::to_string(width) +
            " must both be positive (organized) or both be 0 (unorganized)");
  if (xyz.size() % 3 != 0)
    invalid(fn + "xyz has " + std::to_string(xyz.size()) + " floats, which is not a multiple of 3");
  const std::size_t n = size();
  if (isOrganized()) {
    std::size_t hw = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(height), static_cast<std::size_t>(width), &hw) || hw != n)
      invalid(fn + "organized size " + std::to_string(height) + " x " + std::to_string(width) + " does not match " +
              std::to_string(n) + " points");
  }
  auto checkAttr = [&](std::size_t have, std::size_t perPoint, const char* name) {
    if (have != 0 && have / perPoint != n) invalid(fn + name + " has " + std::to_string(have) + " values; expected 0 or " +
                                                   std::to_string(n) + " x " + std::to_string(perPoint));
    if (have % perPoint != 0) invalid(fn + name + " has " + std::to_string(have) + " values, not a multiple of " +
                                      std::to_string(perPoint));
  };
  checkAttr(rgba.size(), 4, "rgba");
  checkAttr(snr.size(), 1, "snr");
  checkAttr(normals.size(), 3, "normals");
}


}  // namespace devicearray

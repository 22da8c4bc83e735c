#include "core/layout.hpp"

#include <limits>
#include <sstream>

namespace devicearray::detail {

void validateType(const char* fn, int type) {
  if (!isValidType(type))
    fail(ErrorCode::InvalidArgument,
         std::string(fn) + ": invalid type code " + std::to_string(type) +
             " (expected makeType(depth, channels) with 1..512 channels, 0.." + std::to_string(kTypeMask) + ")");
}

std::size_t elemSizeOf(int type) {
  return depthSize(depthOf(type)) * static_cast<std::size_t>(channelsOf(type));
}

std::string shapeString(const std::vector<int>& size) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < size.size(); ++i) s << (i ? ", " : "") << size[i];
  s << ']';
  return s.str();
}

std::string stepString(const std::vector<std::size_t>& step) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < step.size(); ++i) s << (i ? ", " : "") << step[i];
  s << ']';
  return s.str();
}

std::shared_ptr<Allocation> allocateFor(const char* fn, DeviceImpl& device, std::size_t bytes, QueueImpl& q) {
  try {
    return device.allocate(bytes, q);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::OutOfMemory) throw;
    fail(ErrorCode::OutOfMemory, std::string(fn) + ": " + e.what());
  }
}

std::size_t validateShape(const char* fn, const std::vector<int>& size, std::size_t elemSize) {
  if (size.empty() || size.size() > static_cast<std::size_t>(kMaxDims))
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": shape " + shapeString(size) + " has " +
                                         std::to_string(size.size()) + " axes (must be 1.." +
                                         std::to_string(kMaxDims) + ")");
  std::size_t total = 1;
  for (std::size_t i = 0; i < size.size(); ++i) {
    if (size[i] <= 0)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": shape " + shapeString(size) + " has size " +
                                           std::to_string(size[i]) + " on axis " + std::to_string(i) +
                                           " (sizes must be positive)");
    total = checkedMul(total, static_cast<std::size_t>(size[i]), fn);
  }
  const std::size_t bytes = checkedMul(total, elemSize, fn);
  // Keep byte offsets representable as signed 64-bit for kernels and DLPack.
  if (bytes > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))
    fail(ErrorCode::OutOfRange, std::string(fn) + ": shape " + shapeString(size) + " needs " +
                                    std::to_string(bytes) + " bytes, more than int64 can address");
  return total;
}

std::vector<std::size_t> continuousSteps(const std::vector<int>& size, std::size_t elemSize) {
  std::vector<std::size_t> step(size.size());
  packedSteps(static_cast<int>(size.size()), size.data(), elemSize, step.data());
  return step;
}

std::vector<std::size_t> normalizeSteps(const char* fn, const std::vector<int>& size, std::size_t elemSize,
                                        std::size_t elemSize1, const std::vector<std::size_t>& step) {
  const std::size_t dims = size.size();
  if (step.empty()) return continuousSteps(size, elemSize);
  if (step.size() != dims && step.size() + 1 != dims)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": step " + stepString(step) + " has " +
                                         std::to_string(step.size()) + " entries for " + std::to_string(dims) +
                                         " axes (expected " + std::to_string(dims - 1) + " or " +
                                         std::to_string(dims) + ")");
  std::vector<std::size_t> full = step;
  if (full.size() + 1 == dims) full.push_back(elemSize);
  if (full.back() != elemSize)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": last step " + std::to_string(full.back()) +
                                         " must equal the element size " + std::to_string(elemSize));
  for (std::size_t i = 0; i + 1 < dims; ++i) {
    if (full[i] % elemSize1 != 0)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": step " + std::to_string(full[i]) + " of axis " +
                                           std::to_string(i) + " is not a multiple of the channel size " +
                                           std::to_string(elemSize1));
    // Axis i must step over a whole sub-array of the later axes (row-major, no overlap).
    const std::size_t inner = checkedMul(full[i + 1], static_cast<std::size_t>(size[i + 1]), fn);
    if (size[i] > 1 && full[i] < inner)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": step " + std::to_string(full[i]) + " of axis " +
                                           std::to_string(i) + " is smaller than the " + std::to_string(inner) +
                                           " bytes spanned by the inner axes (rows would overlap)");
  }
  // The extent of the layout must be representable (overflow check).
  std::size_t extent = elemSize;
  for (std::size_t i = 0; i < dims; ++i)
    extent = checkedAdd(extent, checkedMul(full[i], static_cast<std::size_t>(size[i] - 1), fn), fn);
  (void)extent;
  return full;
}

bool isPacked(const std::vector<int>& size, const std::vector<std::size_t>& step, std::size_t elemSize) {
  return isPacked(static_cast<int>(size.size()), size.data(), step.data(), elemSize);
}

std::size_t spanBytes(const std::vector<int>& size, const std::vector<std::size_t>& step, std::size_t elemSize) {
  std::size_t extent = elemSize;
  for (std::size_t i = 0; i < size.size(); ++i)
    extent = checkedAdd(extent, checkedMul(step[i], static_cast<std::size_t>(size[i] - 1), "spanBytes"),
                        "spanBytes");
  return extent;
}

namespace {

struct Axis {
  std::int64_t size;
  std::int64_t a;  // step on side A (dst)
  std::int64_t b;  // step on side B (src)
};

// Drops unit axes, merges axes that are contiguous over each other on both
// sides, and folds a contiguous innermost axis into the element size.
void normalizeAxes(std::vector<Axis>& axes, std::size_t& elemSize) {
  std::vector<Axis> kept;
  for (const Axis& ax : axes)
    if (ax.size != 1) kept.push_back(ax);
  axes.swap(kept);
  bool changed = true;
  while (changed) {
    changed = false;
    while (!axes.empty() && axes.back().a == static_cast<std::int64_t>(elemSize) &&
           axes.back().b == static_cast<std::int64_t>(elemSize)) {
      elemSize *= static_cast<std::size_t>(axes.back().size);
      axes.pop_back();
      changed = true;
    }
    for (std::size_t i = axes.size(); i-- > 1;) {
      Axis& outer = axes[i - 1];
      const Axis& inner = axes[i];
      if (outer.a == inner.a * inner.size && outer.b == inner.b * inner.size) {
        outer.size *= inner.size;
        outer.a = inner.a;
        outer.b = inner.b;
        axes.erase(axes.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
        break;
      }
    }
  }
}

}  // namespace

CopyDesc makeCopy(const std::vector<int>& size, std::size_t elemSize, MemRef dst,
                  const std::vector<std::size_t>& dstStep, MemRef src, const std::vector<std::size_t>& srcStep) {
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < size.size(); ++i)
    axes.push_back({size[i], static_cast<std::int64_t>(dstStep[i]), static_cast<std::int64_t>(srcStep[i])});
  CopyDesc d;
  d.elemSize = elemSize;
  normalizeAxes(axes, d.elemSize);
  d.dims = static_cast<int>(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    d.size[i] = axes[i].size;
    d.dstStep[i] = axes[i].a;
    d.srcStep[i] = axes[i].b;
  }
  d.dst = dst;
  d.src = src;
  return d;
}

FillDesc makeFill(const std::vector<int>& size, std::size_t elemSize, MemRef dst,
                  const std::vector<std::size_t>& step) {
  // The pattern is one element, so only whole-element axes may be merged: keep
  // elemSize fixed by not folding (pattern repetition is the backend's job).
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < size.size(); ++i)
    if (size[i] != 1)
      axes.push_back({size[i], static_cast<std::int64_t>(step[i]), static_cast<std::int64_t>(step[i])});
  for (std::size_t i = axes.size(); i-- > 1;) {
    Axis& outer = axes[i - 1];
    const Axis& inner = axes[i];
    if (outer.a == inner.a * inner.size) {
      outer.size *= inner.size;
      outer.a = inner.a;
      axes.erase(axes.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  FillDesc f;
  f.elemSize = elemSize;
  f.dims = static_cast<int>(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    f.size[i] = axes[i].size;
    f.step[i] = axes[i].a;
  }
  f.dst = dst;
  return f;
}

Range resolveRange(const char* fn, int axis, int size, Range r) {
  if (r.isAll()) return Range(0, size);
  if (r.start < 0 || r.end > size || r.start > r.end)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": range [" + std::to_string(r.start) + ", " +
                                    std::to_string(r.end) + ") is outside axis " + std::to_string(axis) +
                                    " of size " + std::to_string(size));
  if (r.start == r.end)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": range [" + std::to_string(r.start) + ", " +
                                         std::to_string(r.end) + ") on axis " + std::to_string(axis) +
                                         " is empty (zero-length axes are not allowed)");
  return r;
}

std::vector<Range> resolveRanges(const char* fn, const std::vector<int>& size, const std::vector<Range>& ranges) {
  if (ranges.size() != size.size())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + std::to_string(ranges.size()) +
                                         " ranges given for an array of " + std::to_string(size.size()) + " axes");
  std::vector<Range> out(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) out[i] = resolveRange(fn, static_cast<int>(i), size[i], ranges[i]);
  return out;
}

}  // namespace devicearray::detail

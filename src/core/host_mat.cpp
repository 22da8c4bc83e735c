#include "devicearray/host_mat.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "backend/backend_registry.hpp"
#include "core/array_access.hpp"
#include "core/layout.hpp"

namespace devicearray {

using detail::fail;

namespace {

constexpr int kMagic = 0x42FF0000;
constexpr int kContinuous = 1 << 14;
constexpr int kSubmatrix = 1 << 15;

std::size_t roundUp(std::size_t v, std::size_t a, const char* fn) {
  return detail::checkedMul((detail::checkedAdd(v, a - 1, fn)) / a, a, fn);
}

std::shared_ptr<void> allocateHost(std::size_t bytes, bool pinned, bool& lockedOut, const char* fn) {
  lockedOut = false;
  detail::faultPoint(detail::FaultKind::hostAllocation, fn);
  if (pinned) {
    if (std::shared_ptr<void> p = detail::allocatePinnedHostBuffer(bytes)) {
      lockedOut = true;
      return p;
    }
  }
  const std::size_t align = pinned ? static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) : 64;
  void* p = std::aligned_alloc(align, roundUp(bytes, align, fn));
  if (p == nullptr)
    fail(ErrorCode::OutOfMemory, std::string(fn) + ": cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  if (pinned && mlock(p, bytes) == 0) {
    lockedOut = true;
    return std::shared_ptr<void>(p, [bytes](void* q) {
      munlock(q, bytes);
      std::free(q);
    });
  }
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

HostMat::HostMat() = default;

HostMat::HostMat(HostMat&& other) noexcept
    : flags(other.flags), dims(other.dims), size(std::move(other.size)), step(std::move(other.step)),
      storage_(std::move(other.storage_)), data_(other.data_), capacity_(other.capacity_), pinned_(other.pinned_) {
  other.flags = 0;
  other.dims = 0;
  other.size.clear();
  other.step.clear();
  other.data_ = nullptr;
  other.capacity_ = 0;
  other.pinned_ = false;
}

HostMat& HostMat::operator=(HostMat&& other) noexcept {
  if (this != &other) {
    HostMat moved(std::move(other));
    flags = moved.flags;
    dims = moved.dims;
    size.swap(moved.size);
    step.swap(moved.step);
    storage_.swap(moved.storage_);
    data_ = moved.data_;
    capacity_ = moved.capacity_;
    pinned_ = moved.pinned_;
  }
  return *this;
}

HostMat::HostMat(SizeArray sz, int type) { create(std::move(sz), type); }

HostMat::HostMat(SizeArray sz, int type, void* data, StepArray st) {
  constexpr const char* fn = "HostMat::HostMat";
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  detail::validateShape(fn, sz, es);
  if (data == nullptr) fail(ErrorCode::InvalidArgument, std::string(fn) + ": data pointer is null");
  step = detail::normalizeSteps(fn, sz, es, depthSize(depthOf(type)), st);
  size = std::move(sz);
  dims = static_cast<int>(size.size());
  data_ = static_cast<uchar*>(data);
  flags = kMagic | type | (detail::isPacked(size, step, es) ? kContinuous : 0);
}

HostMat HostMat::pinned(SizeArray sz, int type) {
  constexpr const char* fn = "HostMat::pinned";
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  const std::size_t total = detail::validateShape(fn, sz, es);
  HostMat m;
  bool locked = false;
  m.storage_ = allocateHost(total * es, true, locked, fn);
  m.pinned_ = locked;
  m.data_ = static_cast<uchar*>(m.storage_.get());
  m.capacity_ = total * es;
  m.step = detail::continuousSteps(sz, es);
  m.size = std::move(sz);
  m.dims = static_cast<int>(m.size.size());
  m.flags = kMagic | type | kContinuous;
  return m;
}

void HostMat::create(SizeArray sz, int type) {
  constexpr const char* fn = "HostMat::create";
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  const std::size_t total = detail::validateShape(fn, sz, es);
  if (!empty() && storage_ && sz == size && type == this->type() && isContinuous() && !isSubmatrix()) return;
  bool locked = false;
  auto storage = allocateHost(total * es, false, locked, fn);
  storage_ = std::move(storage);
  pinned_ = false;
  data_ = static_cast<uchar*>(storage_.get());
  capacity_ = total * es;
  step = detail::continuousSteps(sz, es);
  size = std::move(sz);
  dims = static_cast<int>(size.size());
  flags = kMagic | type | kContinuous;
}

HostMat HostMat::clone() const {
  if (empty()) return HostMat();
  detail::checkHeaderInsideMemory(*this, "HostMat::clone");
  HostMat out(size, type());
  // Copy row-runs of the innermost contiguous extent.
  const std::size_t es = elemSize();
  const auto desc = detail::makeCopy(size, es, detail::MemRef::hostPtr(out.data_), out.step,
                                     detail::MemRef::hostPtr(data_), step);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(desc.dims), 0);
  const std::size_t runs = [&] {
    std::size_t n = 1;
    for (int i = 0; i < desc.dims; ++i) n *= static_cast<std::size_t>(desc.size[i]);
    return n;
  }();
  for (std::size_t r = 0; r < runs; ++r) {
    std::int64_t so = 0, dof = 0;
    for (int i = 0; i < desc.dims; ++i) {
      so += idx[i] * desc.srcStep[i];
      dof += idx[i] * desc.dstStep[i];
    }
    std::memcpy(out.data_ + dof, data_ + so, desc.elemSize);
    for (int i = desc.dims - 1; i >= 0; --i) {
      if (++idx[i] < desc.size[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

HostMat HostMat::operator()(const std::vector<Range>& ranges) const {
  constexpr const char* fn = "HostMat::operator()";
  if (empty()) fail(ErrorCode::InvalidState, std::string(fn) + ": the array is empty");
  // The ranges are checked against `size`, a public field: it must still describe the
  // memory, or a view could start past it (where its size would be unknown, unchecked).
  detail::checkHeaderInsideMemory(*this, fn);
  const auto r = detail::resolveRanges(fn, size, ranges);
  HostMat v = *this;
  std::size_t off = 0;
  bool sub = isSubmatrix();
  for (std::size_t i = 0; i < r.size(); ++i) {
    off += static_cast<std::size_t>(r[i].start) * step[i];
    v.size[i] = r[i].size();
    if (r[i].size() != size[i]) sub = true;
  }
  v.data_ = data_ + off;
  v.capacity_ = capacity_ > off ? capacity_ - off : 0;
  v.flags = kMagic | type() | (detail::isPacked(v.size, v.step, elemSize()) ? kContinuous : 0) |
            (sub ? kSubmatrix : 0);
  return v;
}

void HostMat::release() { *this = HostMat(); }

int HostMat::type() const { return flags & kTypeMask; }
int HostMat::depth() const { return static_cast<int>(depthOf(type())); }
int HostMat::channels() const { return channelsOf(type()); }
std::size_t HostMat::elemSize() const { return detail::elemSizeOf(type()); }
std::size_t HostMat::elemSize1() const { return depthSize(depthOf(type())); }
bool HostMat::isContinuous() const { return (flags & kContinuous) != 0; }
bool HostMat::isSubmatrix() const { return (flags & kSubmatrix) != 0; }

std::size_t HostMat::total() const {
  if (empty()) return 0;
  std::size_t t = 1;
  for (int s : size) t *= static_cast<std::size_t>(s);
  return t;
}

uchar* HostMat::ptr(const std::vector<int>& idx) const {
  constexpr const char* fn = "HostMat::ptr";
  if (empty()) fail(ErrorCode::InvalidState, std::string(fn) + ": the array is empty");
  if (idx.size() != size.size())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + std::to_string(idx.size()) + " indices for " +
                                         std::to_string(size.size()) + " axes");
  std::size_t off = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= size[i])
      fail(ErrorCode::OutOfRange, std::string(fn) + ": index " + std::to_string(idx[i]) + " is outside axis " +
                                      std::to_string(i) + " of size " + std::to_string(size[i]));
    off += static_cast<std::size_t>(idx[i]) * step[i];
  }
  return data_ + off;
}

}  // namespace devicearray

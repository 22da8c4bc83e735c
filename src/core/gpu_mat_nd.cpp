#include "devicearray/gpu_mat_nd.hpp"

#include <utility>

#include "backend/backend_registry.hpp"
#include "core/array_access.hpp"
#include "core/array_ops.hpp"
#include "core/layout.hpp"

namespace devicearray {

using detail::fail;

namespace {

std::shared_ptr<detail::DeviceImpl> checkedDevice(const ComputeDevice& device, const char* fn) {
  if (!device.isValid()) fail(ErrorCode::InvalidArgument, std::string(fn) + ": invalid ComputeDevice");
  return device.impl();
}

void requireNonEmpty(const GpuMatND& m, const char* fn) {
  if (m.empty()) fail(ErrorCode::InvalidState, std::string(fn) + ": the array is empty");
}

detail::Region regionOf(const GpuMatND& m) { return detail::Region::device(detail::allocationOf(m), detail::offsetOf(m), m.step); }

/// The host side of a copy; a header edited past the library's own memory (its fields
/// are public) is refused, since host memory has no bounds the copy could check.
detail::Region regionOf(const HostMat& m, const char* fn) {
  detail::checkHeaderInsideMemory(m, fn);
  return detail::Region::host(m.data(), m.step);
}

/// New continuous memory of `size` x `type` on the device of `q`, its first use
/// recorded on `q` (so work enqueued on `q` needs no other queue to use it).
GpuMatND continuousOn(const GpuMatND::SizeArray& size, int type, detail::QueueImpl& q, const char* fn) {
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  const std::size_t total = detail::validateShape(fn, size, es);
  return detail::makeGpuMatND(detail::allocateFor(fn, *q.device(), total * es, q), 0, size, type,
                              detail::continuousSteps(size, es));
}

/// A continuous copy of `src` in new memory on the device of `q`, enqueued on `q`
/// (clone, and copyTo into an array of another shape or on another device).
GpuMatND continuousCopyOn(const GpuMatND& src, detail::QueueImpl& q, const char* fn) {
  GpuMatND out = continuousOn(src.size, src.type(), q, fn);
  detail::enqueueCopy(fn, q, src.size, src.elemSize(), regionOf(out), regionOf(src));
  return out;
}

}  // namespace

GpuMatND::GpuMatND() = default;
GpuMatND::~GpuMatND() = default;

GpuMatND::GpuMatND(SizeArray sz, int type) : GpuMatND(std::move(sz), type, ComputeDevice::defaultDevice()) {}

GpuMatND::GpuMatND(SizeArray sz, int type, const ComputeDevice& device) {
  constexpr const char* fn = "GpuMatND::GpuMatND";
  auto dev = checkedDevice(device, fn);
  detail::requireNotForked(fn);
  *this = continuousOn(sz, type, *dev->libraryQueue(), fn);
}

GpuMatND::GpuMatND(SizeArray sz, int type, void* data, StepArray st) {
  constexpr const char* fn = "GpuMatND::GpuMatND(external CUDA memory)";
  detail::requireNotForked(fn);  // before the per-device adopt() attempts below swallow the error
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  detail::validateShape(fn, sz, es);
  if (data == nullptr) fail(ErrorCode::InvalidArgument, std::string(fn) + ": data pointer is null");
  auto fullStep = detail::normalizeSteps(fn, sz, es, depthSize(depthOf(type)), st);
  const std::size_t bytes = detail::spanBytes(sz, fullStep, es);
  const detail::Backend& cuda = detail::backendOf(ComputeBackend::cuda);
  const auto devices = cuda.devices();
  if (devices.empty())
    fail(ErrorCode::BackendUnavailable, std::string(fn) + ": no CUDA device: " + cuda.unavailableReason());
  // The pointer's device decides where the array lives.
  std::string reasons;
  for (const auto& d : devices) {
    try {
      data_ = d->adopt(data, bytes);
      break;
    } catch (const Error& e) {
      reasons += std::string(reasons.empty() ? "" : "; ") + e.what();
    }
  }
  if (!data_) fail(ErrorCode::InvalidArgument, std::string(fn) + ": pointer is not CUDA device memory (" + reasons + ")");
  step = std::move(fullStep);
  size = std::move(sz);
  dims = static_cast<int>(size.size());
  flags = MAGIC_VAL | type;
  updateFlags();
}

GpuMatND::GpuMatND(SizeArray sz, int type, OpenCLBufferPtr data, const ComputeDevice& device, StepArray st) {
  constexpr const char* fn = "GpuMatND::GpuMatND(external OpenCL buffer)";
  auto dev = checkedDevice(device, fn);
  if (dev->backend() != ComputeBackend::opencl)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + device.toString() + " is not an OpenCL device");
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  detail::validateShape(fn, sz, es);
  if (data.buffer == nullptr) fail(ErrorCode::InvalidArgument, std::string(fn) + ": cl_mem is null");
  auto fullStep = detail::normalizeSteps(fn, sz, es, depthSize(depthOf(type)), st);
  const std::size_t need = detail::checkedAdd(data.offset, detail::spanBytes(sz, fullStep, es), fn);
  auto alloc = dev->adopt(data.buffer, 0);
  if (alloc->bytes() != 0 && need > alloc->bytes())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the layout needs " + std::to_string(need) +
                                    " bytes from the buffer start but the cl_mem holds " + std::to_string(alloc->bytes()));
  data_ = std::move(alloc);
  offset_ = data.offset;
  step = std::move(fullStep);
  size = std::move(sz);
  dims = static_cast<int>(size.size());
  flags = MAGIC_VAL | type;
  updateFlags();
}

namespace detail {

namespace {

/// The bytes from the first element to one past the last that a header (dims, size,
/// step, type: public fields) describes, after the checks its constructors make.
template <class Mat>
std::size_t describedBytes(const Mat& m, const char* what, const char* fn) {
  if (m.dims < 1 || m.size.size() != static_cast<std::size_t>(m.dims))
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the " + what + " header's dims (" + std::to_string(m.dims) +
                                         ") and its " + std::to_string(m.size.size()) + " sizes disagree");
  validateType(fn, m.type());
  const std::size_t es = elemSizeOf(m.type());
  validateShape(fn, m.size, es);
  return spanBytes(m.size, normalizeSteps(fn, m.size, es, depthSize(depthOf(m.type())), m.step), es);
}

}  // namespace

void checkHeaderInsideMemory(const GpuMatND& m, const char* fn) {
  const std::shared_ptr<Allocation>& storage = allocationOf(m);
  if (!storage) return;  // empty: nothing to reach
  const std::size_t need = checkedAdd(offsetOf(m), describedBytes(m, "GpuMatND", fn), fn);
  if (storage->bytes() != 0 && need > storage->bytes())
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the header describes bytes up to " + std::to_string(need) +
                                    " of a " + std::to_string(storage->bytes()) + "-byte buffer");
}

void checkHeaderInsideMemory(const HostMat& m, const char* fn) {
  const std::size_t capacity = ArrayAccess::capacity(m);
  if (m.empty() || capacity == 0) return;
  const std::size_t need = describedBytes(m, "HostMat", fn);
  if (need > capacity)
    fail(ErrorCode::OutOfRange, std::string(fn) + ": the HostMat header describes " + std::to_string(need) +
                                    " bytes of its " + std::to_string(capacity) + "-byte memory");
}

}  // namespace detail

GpuMatND ArrayAccess::makeGpuMatND(std::shared_ptr<detail::Allocation> storage, std::size_t offset,
                                   GpuMatND::SizeArray sz, int type, GpuMatND::StepArray st) {
  constexpr const char* fn = "GpuMatND header";
  if (!storage) fail(ErrorCode::InvalidArgument, std::string(fn) + ": null storage");
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  detail::validateShape(fn, sz, es);
  GpuMatND m;
  m.step = detail::normalizeSteps(fn, sz, es, depthSize(depthOf(type)), st);
  const std::size_t need = detail::checkedAdd(offset, detail::spanBytes(sz, m.step, es), fn);
  if (storage->bytes() != 0 && need > storage->bytes())
    fail(ErrorCode::OutOfRange, std::string(fn) + ": layout needs " + std::to_string(need) + " bytes, storage has " +
                                    std::to_string(storage->bytes()));
  m.data_ = std::move(storage);
  m.offset_ = offset;
  m.size = std::move(sz);
  m.dims = static_cast<int>(m.size.size());
  m.flags = GpuMatND::MAGIC_VAL | type;
  m.updateFlags();
  return m;
}

GpuMatND squeeze(const GpuMatND& array, const std::vector<int>& axes) {
  constexpr const char* fn = "squeeze";
  requireNonEmpty(array, fn);
  std::vector<bool> removed(static_cast<std::size_t>(array.dims), false);
  for (int axis : axes) {
    if (axis < 0 || axis >= array.dims)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": axis " + std::to_string(axis) + " is outside the " +
                                           std::to_string(array.dims) + " axes");
    if (removed[static_cast<std::size_t>(axis)])
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": axis " + std::to_string(axis) + " is listed twice");
    if (array.size[axis] != 1)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": axis " + std::to_string(axis) + " has length " +
                                           std::to_string(array.size[axis]) + ", not 1");
    removed[static_cast<std::size_t>(axis)] = true;
  }
  GpuMatND::SizeArray size;
  GpuMatND::StepArray step;
  for (int i = 0; i < array.dims; ++i) {
    if (removed[static_cast<std::size_t>(i)]) continue;
    size.push_back(array.size[i]);
    step.push_back(array.step[i]);
  }
  if (size.empty()) {
    size.push_back(1);
    step.push_back(array.elemSize());
  }
  GpuMatND out = detail::makeGpuMatND(detail::allocationOf(array), detail::offsetOf(array), std::move(size),
                                      array.type(), std::move(step));
  if (array.isSubmatrix()) out.flags |= GpuMatND::SUBMATRIX_FLAG;
  return out;
}

void GpuMatND::updateFlags() {
  if (detail::isPacked(size, step, elemSize()))
    flags |= CONTINUOUS_FLAG;
  else
    flags &= ~CONTINUOUS_FLAG;
}

GpuMatND GpuMatND::clone() const {
  requireNonEmpty(*this, "GpuMatND::clone");
  Stream s(data_->device()->libraryQueue());
  GpuMatND out = clone(s);
  out.data_->waitIdle();
  return out;
}

GpuMatND GpuMatND::clone(Stream& stream) const {
  constexpr const char* fn = "GpuMatND::clone";
  requireNonEmpty(*this, fn);
  detail::requireNotForked(fn);
  return continuousCopyOn(*this, detail::queueFor(fn, stream, data_->device()), fn);
}

GpuMatND GpuMatND::clone(const ComputeDevice& device) const {
  constexpr const char* fn = "GpuMatND::clone";
  requireNonEmpty(*this, fn);
  Stream s(checkedDevice(device, fn)->libraryQueue());
  GpuMatND out;
  copyTo(out, s);
  out.data_->waitIdle();
  return out;
}

void GpuMatND::copyTo(GpuMatND& dst) const {
  constexpr const char* fn = "GpuMatND::copyTo";
  requireNonEmpty(*this, fn);
  if (&dst == this) return;
  const bool inPlace = !dst.empty() && dst.size == size && dst.type() == type();
  // Filled before it replaces dst: a failure leaves dst as it was.
  GpuMatND fresh = inPlace ? dst : GpuMatND(size, type(), device());
  detail::enqueueCopy(fn, *fresh.data_->device()->libraryQueue(), size, elemSize(), regionOf(fresh), regionOf(*this))
      ->synchronize();
  if (!inPlace) dst = std::move(fresh);
}

void GpuMatND::copyTo(GpuMatND& dst, Stream& stream) const {
  constexpr const char* fn = "GpuMatND::copyTo";
  requireNonEmpty(*this, fn);
  if (&dst == this) return;
  if (!dst.empty() && dst.size == size && dst.type() == type()) {
    detail::enqueueCopy(fn, detail::queueFor(fn, stream, dst.data_->device()), size, elemSize(), regionOf(dst),
                        regionOf(*this));
    return;
  }
  dst = continuousCopyOn(*this, *stream.impl(), fn);
}

void GpuMatND::create(SizeArray sz, int type) {
  constexpr const char* fn = "GpuMatND::create";
  detail::validateType(fn, type);
  const std::size_t es = detail::elemSizeOf(type);
  detail::validateShape(fn, sz, es);
  if (!empty() && sz == size && type == this->type() && !external() && isContinuous() && !isSubmatrix()) return;
  const ComputeDevice device = empty() ? ComputeDevice::defaultDevice() : this->device();
  GpuMatND fresh(std::move(sz), type, device);
  swap(fresh);
}

GpuMat GpuMatND::createGpuMatHeader() const {
  constexpr const char* fn = "GpuMatND::createGpuMatHeader";
  requireNonEmpty(*this, fn);
  for (int i = 0; i + 2 < dims; ++i)
    if (size[i] > 1)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": shape " + detail::shapeString(size) +
                                           " is not effectively 2-D (axis " + std::to_string(i) + " has size " +
                                           std::to_string(size[i]) + ")");
  const int rows = dims == 1 ? 1 : size[dims - 2];
  const int cols = size[dims - 1];
  const std::size_t rowStep = dims == 1 ? static_cast<std::size_t>(cols) * elemSize() : step[dims - 2];
  // A non-owning alias: the header neither frees nor keeps the memory alive.
  auto alias = std::make_shared<detail::Allocation>(data_->device(), data_->handle(), data_->bytes(), false);
  alias->shareOrderingWith(data_);
  return detail::makeGpuMat(std::move(alias), offset_, rows, cols, type(), rowStep);
}

GpuMat GpuMatND::createGpuMatHeader(IndexArray idx, Range rowRange, Range colRange) const {
  constexpr const char* fn = "GpuMatND::createGpuMatHeader";
  requireNonEmpty(*this, fn);
  if (dims < 2)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": needs an array of at least 2 axes, this one has " +
                                         std::to_string(dims));
  if (static_cast<int>(idx.size()) != dims - 2)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + std::to_string(idx.size()) +
                                         " indices given, expected " + std::to_string(dims - 2));
  std::size_t off = offset_;
  for (int i = 0; i < dims - 2; ++i) {
    if (idx[static_cast<std::size_t>(i)] < 0 || idx[static_cast<std::size_t>(i)] >= size[i])
      fail(ErrorCode::OutOfRange, std::string(fn) + ": index " + std::to_string(idx[static_cast<std::size_t>(i)]) +
                                      " is outside axis " + std::to_string(i) + " of size " + std::to_string(size[i]));
    off += static_cast<std::size_t>(idx[static_cast<std::size_t>(i)]) * step[i];
  }
  const Range rr = detail::resolveRange(fn, dims - 2, size[dims - 2], rowRange);
  const Range cr = detail::resolveRange(fn, dims - 1, size[dims - 1], colRange);
  off += static_cast<std::size_t>(rr.start) * step[dims - 2] + static_cast<std::size_t>(cr.start) * step[dims - 1];
  auto alias = std::make_shared<detail::Allocation>(data_->device(), data_->handle(), data_->bytes(), false);
  alias->shareOrderingWith(data_);
  return detail::makeGpuMat(std::move(alias), off, rr.size(), cr.size(), type(), step[dims - 2]);
}

// upload / download write into the existing destination when it already has the
// size and type (OpenCV's reuse); otherwise they fill a new one and only then hand it
// over, so a failing allocation or copy leaves the argument as it was.

void GpuMatND::download(HostMat& dst) const {
  constexpr const char* fn = "GpuMatND::download";
  requireNonEmpty(*this, fn);
  detail::requireNotForked(fn);
  Stream s(data_->device()->libraryQueue());
  if (!dst.empty() && dst.size == size && dst.type() == type()) {
    detail::enqueueCopy(fn, *s.impl(), size, elemSize(), regionOf(dst, fn), regionOf(*this), true)->synchronize();
    return;
  }
  HostMat fresh(size, type());
  detail::enqueueCopy(fn, *s.impl(), size, elemSize(), regionOf(fresh, fn), regionOf(*this), true)->synchronize();
  dst = std::move(fresh);
}

void GpuMatND::download(HostMat& dst, Stream& stream) const {
  constexpr const char* fn = "GpuMatND::download";
  requireNonEmpty(*this, fn);
  auto& q = detail::queueFor(fn, stream, data_->device());
  if (!dst.empty() && dst.size == size && dst.type() == type()) {
    detail::enqueueCopy(fn, q, size, elemSize(), regionOf(dst, fn), regionOf(*this));
    return;
  }
  // A copy that fails to enqueue leaves nothing writing into `fresh` (the backends'
  // contract), so dropping it is safe; on success dst takes its memory over.
  HostMat fresh(size, type());
  detail::enqueueCopy(fn, q, size, elemSize(), regionOf(fresh, fn), regionOf(*this));
  dst = std::move(fresh);
}

void GpuMatND::upload(const HostMat& src) {
  constexpr const char* fn = "GpuMatND::upload";
  if (src.empty()) fail(ErrorCode::InvalidArgument, std::string(fn) + ": the source HostMat is empty");
  detail::requireNotForked(fn);
  if (!empty() && src.size == size && src.type() == type()) {
    Stream s(data_->device()->libraryQueue());
    detail::enqueueCopy(fn, *s.impl(), size, elemSize(), regionOf(*this), regionOf(src, fn), true)->synchronize();
    return;
  }
  GpuMatND fresh(src.size, src.type(), empty() ? ComputeDevice::defaultDevice() : device());
  Stream s(fresh.data_->device()->libraryQueue());
  detail::enqueueCopy(fn, *s.impl(), fresh.size, fresh.elemSize(), regionOf(fresh), regionOf(src, fn), true)
      ->synchronize();
  swap(fresh);
}

void GpuMatND::upload(const HostMat& src, Stream& stream) {
  constexpr const char* fn = "GpuMatND::upload";
  if (src.empty()) fail(ErrorCode::InvalidArgument, std::string(fn) + ": the source HostMat is empty");
  if (!empty() && src.size == size && src.type() == type()) {
    auto& q = detail::queueFor(fn, stream, data_->device());
    detail::enqueueCopy(fn, q, size, elemSize(), regionOf(*this), regionOf(src, fn));
    return;
  }
  // Allocate on the stream's device, in the stream's own order: memory from the
  // library's queue would make the copy wait for that queue, which may be waiting for
  // other streams' work before it frees memory.
  const auto dev = checkedDevice(stream.device(), fn);
  detail::requireNotForked(fn);
  auto& q = detail::queueFor(fn, stream, dev);
  GpuMatND fresh = continuousOn(src.size, src.type(), q, fn);
  detail::enqueueCopy(fn, q, fresh.size, fresh.elemSize(), regionOf(fresh), regionOf(src, fn));
  swap(fresh);
}

std::size_t GpuMatND::elemSize() const { return detail::elemSizeOf(type()); }
std::size_t GpuMatND::elemSize1() const { return depthSize(depthOf(type())); }
bool GpuMatND::empty() const { return !data_; }
bool GpuMatND::external() const { return data_ && data_->external(); }
bool GpuMatND::isContinuous() const { return (flags & CONTINUOUS_FLAG) != 0; }
bool GpuMatND::isSubmatrix() const { return (flags & SUBMATRIX_FLAG) != 0; }

uchar* GpuMatND::getDevicePtr() const {
  if (empty()) return nullptr;
  if (data_->device()->backend() != ComputeBackend::cuda)
    fail(ErrorCode::Unsupported, "GpuMatND::getDevicePtr: the array lives on " + device().toString() +
                                     "; OpenCL memory has no device pointer (use getOpenCLBuffer())");
  return static_cast<uchar*>(data_->handle()) + offset_;
}

OpenCLBufferPtr GpuMatND::getOpenCLBuffer() const {
  if (empty()) return OpenCLBufferPtr{};
  if (data_->device()->backend() != ComputeBackend::opencl)
    fail(ErrorCode::Unsupported, "GpuMatND::getOpenCLBuffer: the array lives on " + device().toString() +
                                     " (use getDevicePtr())");
  return OpenCLBufferPtr{data_->handle(), offset_};
}

GpuMatND::operator GpuMat() const { return createGpuMatHeader().clone(); }

GpuMatND GpuMatND::operator()(const std::vector<Range>& ranges) const {
  constexpr const char* fn = "GpuMatND::operator()";
  requireNonEmpty(*this, fn);
  const auto r = detail::resolveRanges(fn, size, ranges);
  GpuMatND v = *this;
  bool sub = isSubmatrix();
  for (std::size_t i = 0; i < r.size(); ++i) {
    v.offset_ += static_cast<std::size_t>(r[i].start) * step[i];
    v.size[i] = r[i].size();
    if (r[i].size() != size[i]) sub = true;
  }
  v.flags = MAGIC_VAL | type() | (sub ? SUBMATRIX_FLAG : 0);
  v.updateFlags();
  return v;
}

GpuMat GpuMatND::operator()(IndexArray idx, Range rowRange, Range colRange) const {
  return createGpuMatHeader(std::move(idx), rowRange, colRange).clone();
}

void GpuMatND::release() {
  GpuMatND empty;
  swap(empty);
}

void GpuMatND::swap(GpuMatND& m) noexcept {
  std::swap(flags, m.flags);
  std::swap(dims, m.dims);
  size.swap(m.size);
  step.swap(m.step);
  data_.swap(m.data_);
  std::swap(offset_, m.offset_);
}

std::size_t GpuMatND::total() const {
  if (empty()) return 0;
  std::size_t t = 1;
  for (int s : size) t *= static_cast<std::size_t>(s);
  return t;
}

std::size_t GpuMatND::totalMemSize() const { return empty() ? 0 : static_cast<std::size_t>(size[0]) * step[0]; }
int GpuMatND::type() const { return flags & kTypeMask; }
int GpuMatND::depth() const { return static_cast<int>(depthOf(type())); }
int GpuMatND::channels() const { return channelsOf(type()); }
ComputeDevice GpuMatND::device() const { return empty() ? ComputeDevice() : ComputeDevice(data_->device()); }

ComputeBackend GpuMatND::backend() const {
  requireNonEmpty(*this, "GpuMatND::backend");
  return data_->device()->backend();
}

}  // namespace devicearray

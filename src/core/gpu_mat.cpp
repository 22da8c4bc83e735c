#include <utility>

#include "core/array_access.hpp"
#include "core/array_ops.hpp"
#include "core/layout.hpp"
#include "core/saturate.hpp"
#include "devicearray/gpu_mat_nd.hpp"

namespace devicearray {

using detail::fail;

namespace {

void requireNonEmpty(const GpuMat& m, const char* fn) {
  if (m.empty()) fail(ErrorCode::InvalidState, std::string(fn) + ": the matrix is empty");
}

void validateRowsCols(const char* fn, int rows, int cols) {
  if (rows <= 0 || cols <= 0)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": size " + std::to_string(rows) + "x" + std::to_string(cols) +
                                         " is not positive");
}

detail::Region regionOf(const GpuMat& m) {
  return detail::Region::device(detail::allocationOf(m), detail::offsetOf(m), {m.step, m.elemSize()});
}

std::shared_ptr<detail::EventImpl> copyInto(const char* fn, detail::QueueImpl& q, const GpuMat& src, GpuMat& dst) {
  return detail::enqueueCopy(fn, q, {src.rows, src.cols}, src.elemSize(), regionOf(dst), regionOf(src));
}

detail::QueueImpl& libraryQueueOf(const GpuMat& m) { return *detail::allocationOf(m)->device()->libraryQueue(); }

}  // namespace

GpuMat::GpuMat() = default;

GpuMat::GpuMat(int rows_, int cols_, int type) : GpuMat(rows_, cols_, type, ComputeDevice::defaultDevice()) {}

GpuMat::GpuMat(int rows_, int cols_, int type, const ComputeDevice& device) {
  constexpr const char* fn = "GpuMat::GpuMat";
  if (!device.isValid()) fail(ErrorCode::InvalidArgument, std::string(fn) + ": invalid ComputeDevice");
  validateRowsCols(fn, rows_, cols_);
  GpuMatND nd({rows_, cols_}, type, device);
  *this = detail::makeGpuMat(detail::allocationOf(nd), 0, rows_, cols_, type, nd.step[0]);
}

GpuMat::GpuMat(int rows_, int cols_, int type, void* data_, std::size_t step_) {
  validateRowsCols("GpuMat::GpuMat(external CUDA memory)", rows_, cols_);
  GpuMatND nd({rows_, cols_}, type, data_, step_ == 0 ? GpuMatND::StepArray() : GpuMatND::StepArray{step_});
  *this = detail::makeGpuMat(detail::allocationOf(nd), detail::offsetOf(nd), rows_, cols_, type, nd.step[0]);
}

GpuMat::GpuMat(int rows_, int cols_, int type, OpenCLBufferPtr buffer, const ComputeDevice& device, std::size_t step_) {
  validateRowsCols("GpuMat::GpuMat(external OpenCL buffer)", rows_, cols_);
  GpuMatND nd({rows_, cols_}, type, buffer, device, step_ == 0 ? GpuMatND::StepArray() : GpuMatND::StepArray{step_});
  *this = detail::makeGpuMat(detail::allocationOf(nd), detail::offsetOf(nd), rows_, cols_, type, nd.step[0]);
}

GpuMat ArrayAccess::makeGpuMat(std::shared_ptr<detail::Allocation> storage, std::size_t offset, int rows_, int cols_,
                               int type, std::size_t step_) {
  // Validation (type, sizes, steps, bounds) is GpuMatND's.
  GpuMatND nd = detail::makeGpuMatND(storage, offset, {rows_, cols_}, type, {step_});
  GpuMat m;
  m.storage_ = std::move(storage);
  m.offset_ = offset;
  m.rows = rows_;
  m.cols = cols_;
  m.step = nd.step[0];
  m.flags = GpuMatND::MAGIC_VAL | type | (nd.isContinuous() ? GpuMatND::CONTINUOUS_FLAG : 0);
  if (m.storage_->device()->backend() == ComputeBackend::cuda)
    m.data = static_cast<uchar*>(m.storage_->handle()) + offset;
  return m;
}

void GpuMat::create(int rows_, int cols_, int type) {
  constexpr const char* fn = "GpuMat::create";
  validateRowsCols(fn, rows_, cols_);
  detail::validateType(fn, type);
  if (!empty() && rows == rows_ && cols == cols_ && this->type() == type && !external() && isContinuous() &&
      !isSubmatrix())
    return;
  *this = GpuMat(rows_, cols_, type, empty() ? ComputeDevice::defaultDevice() : device());
}

void GpuMat::release() { *this = GpuMat(); }

GpuMatND GpuMat::asGpuMatND() const {
  if (empty()) return GpuMatND();
  GpuMatND nd = detail::makeGpuMatND(storage_, offset_, {rows, cols}, type(), {step});
  if (isSubmatrix()) nd.flags |= GpuMatND::SUBMATRIX_FLAG;
  return nd;
}

void GpuMat::upload(const HostMat& src) {
  constexpr const char* fn = "GpuMat::upload";
  if (src.empty() || src.dims > 2)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the source must be a non-empty 1-D or 2-D HostMat");
  detail::checkHeaderInsideMemory(src, fn);  // before the 1-D view below forgets the memory's size
  const int r = src.dims == 1 ? 1 : src.size[0];
  const int c = src.dims == 1 ? src.size[0] : src.size[1];
  const HostMat view2d = src.dims == 2 ? src : HostMat({1, c}, src.type(), src.data());
  if (!empty() && rows == r && cols == c && type() == src.type()) {
    asGpuMatND().upload(view2d);
    return;
  }
  // Filled before it replaces *this: a failure leaves this matrix as it was.
  GpuMat fresh(r, c, src.type(), empty() ? ComputeDevice::defaultDevice() : device());
  fresh.asGpuMatND().upload(view2d);
  *this = std::move(fresh);
}

void GpuMat::upload(const HostMat& src, Stream& stream) {
  constexpr const char* fn = "GpuMat::upload";
  if (src.empty() || src.dims > 2)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the source must be a non-empty 1-D or 2-D HostMat");
  detail::checkHeaderInsideMemory(src, fn);  // before the 1-D view below forgets the memory's size
  const int r = src.dims == 1 ? 1 : src.size[0];
  const int c = src.dims == 1 ? src.size[0] : src.size[1];
  const HostMat view2d = src.dims == 2 ? src : HostMat({1, c}, src.type(), src.data());
  if (!empty() && rows == r && cols == c && type() == src.type()) {
    asGpuMatND().upload(view2d, stream);
    return;
  }
  GpuMat fresh(r, c, src.type(), stream.device());
  fresh.asGpuMatND().upload(view2d, stream);
  *this = std::move(fresh);
}

void GpuMat::download(HostMat& dst) const {
  requireNonEmpty(*this, "GpuMat::download");
  asGpuMatND().download(dst);
}

void GpuMat::download(HostMat& dst, Stream& stream) const {
  requireNonEmpty(*this, "GpuMat::download");
  asGpuMatND().download(dst, stream);
}

GpuMat GpuMat::clone() const {
  requireNonEmpty(*this, "GpuMat::clone");
  GpuMat out(rows, cols, type(), device());
  copyInto("GpuMat::clone", libraryQueueOf(*this), *this, out)->synchronize();
  return out;
}

GpuMat GpuMat::clone(Stream& stream) const {
  constexpr const char* fn = "GpuMat::clone";
  requireNonEmpty(*this, fn);
  auto& q = detail::queueFor(fn, stream, storage_->device());
  GpuMatND nd({rows, cols}, type(), device());
  GpuMat out = detail::makeGpuMat(detail::allocationOf(nd), 0, rows, cols, type(), nd.step[0]);
  copyInto(fn, q, *this, out);
  return out;
}

void GpuMat::copyTo(GpuMat& dst) const {
  constexpr const char* fn = "GpuMat::copyTo";
  requireNonEmpty(*this, fn);
  if (&dst == this) return;
  if (!dst.empty() && dst.rows == rows && dst.cols == cols && dst.type() == type()) {
    copyInto(fn, libraryQueueOf(dst), *this, dst)->synchronize();
    return;
  }
  // Filled before it replaces dst: a failure leaves dst as it was.
  GpuMat fresh(rows, cols, type(), device());
  copyInto(fn, libraryQueueOf(fresh), *this, fresh)->synchronize();
  dst = std::move(fresh);
}

void GpuMat::copyTo(GpuMat& dst, Stream& stream) const {
  constexpr const char* fn = "GpuMat::copyTo";
  requireNonEmpty(*this, fn);
  if (&dst == this) return;
  if (!dst.empty() && dst.rows == rows && dst.cols == cols && dst.type() == type()) {
    copyInto(fn, detail::queueFor(fn, stream, dst.storage_->device()), *this, dst);
    return;
  }
  GpuMat fresh(rows, cols, type(), stream.device());
  copyInto(fn, detail::queueFor(fn, stream, fresh.storage_->device()), *this, fresh);
  dst = std::move(fresh);
}

namespace {

std::array<unsigned char, 32> scalarPattern(const char* fn, const GpuMat& m, Scalar value) {
  const int cn = m.channels();
  if (cn > 4)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": a Scalar holds 4 values but the matrix has " +
                                         std::to_string(cn) + " channels");
  std::array<unsigned char, 32> pattern{};
  const Depth d = depthOf(m.type());
  for (int c = 0; c < cn; ++c)
    detail::storeSaturated(d, value[c], pattern.data() + static_cast<std::size_t>(c) * depthSize(d));
  return pattern;
}

}  // namespace

GpuMat& GpuMat::setTo(Scalar value) {
  constexpr const char* fn = "GpuMat::setTo";
  requireNonEmpty(*this, fn);
  const auto pattern = scalarPattern(fn, *this, value);
  detail::enqueueFill(libraryQueueOf(*this), {rows, cols}, elemSize(), regionOf(*this), pattern.data())->synchronize();
  return *this;
}

GpuMat& GpuMat::setTo(Scalar value, Stream& stream) {
  constexpr const char* fn = "GpuMat::setTo";
  requireNonEmpty(*this, fn);
  const auto pattern = scalarPattern(fn, *this, value);
  detail::enqueueFill(detail::queueFor(fn, stream, storage_->device()), {rows, cols}, elemSize(), regionOf(*this),
                      pattern.data());
  return *this;
}

namespace {

std::shared_ptr<detail::EventImpl> convertOn(const char* fn, detail::QueueImpl& q, const GpuMat& src, GpuMat& dst,
                                             int rtype, double alpha, double beta, const ComputeDevice& fresh) {
  if (src.empty()) fail(ErrorCode::InvalidState, std::string(fn) + ": the matrix is empty");
  if (rtype >= 0) {
    detail::validateType(fn, rtype);
    // rtype names a depth (one channel, like CV_32F) or the full type of the result.
    if (channelsOf(rtype) != 1 && channelsOf(rtype) != src.channels())
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": rtype " + std::to_string(rtype) + " has " +
                                           std::to_string(channelsOf(rtype)) + " channels but the source has " +
                                           std::to_string(src.channels()));
  }
  const int dstType = makeType(rtype < 0 ? depthOf(src.type()) : depthOf(rtype), src.channels());
  // Writing into the source's own memory with another element size would read
  // values already overwritten: convert into fresh memory then.
  const bool aliases = !dst.empty() && detail::allocationOf(dst) && detail::allocationOf(src) &&
                       detail::allocationOf(dst)->handle() == detail::allocationOf(src)->handle();
  GpuMat target = dst;
  if (target.empty() || target.rows != src.rows || target.cols != src.cols || target.type() != dstType || aliases)
    target = GpuMat(src.rows, src.cols, dstType, fresh);
  detail::ConvertDesc c;
  c.rows = src.rows;
  c.values = static_cast<std::int64_t>(src.cols) * src.channels();
  c.srcDepth = depthOf(src.type());
  c.dstDepth = depthOf(dstType);
  c.srcStep = static_cast<std::int64_t>(src.step);
  c.dstStep = static_cast<std::int64_t>(target.step);
  c.alpha = alpha;
  c.beta = beta;
  c.src = detail::MemRef{nullptr, detail::bufferOf(src)};
  c.dst = detail::MemRef{nullptr, detail::bufferOf(target)};
  if (detail::allocationOf(target)->device() != detail::allocationOf(src)->device())
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": source and destination live on different devices");
  detail::OrderedUse use(q, {detail::allocationOf(src).get(), detail::allocationOf(target).get()});
  q.device()->convert(c, q);
  auto ev = use.commit();
  if (aliases && !dst.empty() && dst.rows == src.rows && dst.cols == src.cols && dst.type() == dstType) {
    // Same size and type: the result must land in dst's memory (in place).
    copyInto(fn, q, target, dst);
    return q.recordEvent();
  }
  dst = target;
  return ev;
}

}  // namespace

void GpuMat::convertTo(GpuMat& dst, int rtype, double alpha, double beta) const {
  constexpr const char* fn = "GpuMat::convertTo";
  requireNonEmpty(*this, fn);
  convertOn(fn, libraryQueueOf(*this), *this, dst, rtype, alpha, beta, device())->synchronize();
}

void GpuMat::convertTo(GpuMat& dst, int rtype, double alpha, double beta, Stream& stream) const {
  constexpr const char* fn = "GpuMat::convertTo";
  requireNonEmpty(*this, fn);
  convertOn(fn, detail::queueFor(fn, stream, storage_->device()), *this, dst, rtype, alpha, beta, device());
}

void GpuMat::convertTo(GpuMat& dst, int rtype, Stream& stream) const { convertTo(dst, rtype, 1.0, 0.0, stream); }

GpuMat GpuMat::operator()(Range rowRange, Range colRange) const {
  constexpr const char* fn = "GpuMat::operator()";
  requireNonEmpty(*this, fn);
  const Range rr = detail::resolveRange(fn, 0, rows, rowRange);
  const Range cr = detail::resolveRange(fn, 1, cols, colRange);
  GpuMat v = detail::makeGpuMat(storage_, offset_ + static_cast<std::size_t>(rr.start) * step +
                                          static_cast<std::size_t>(cr.start) * elemSize(),
                            rr.size(), cr.size(), type(), step);
  if (isSubmatrix() || rr.size() != rows || cr.size() != cols) v.flags |= GpuMatND::SUBMATRIX_FLAG;
  return v;
}

std::size_t GpuMat::elemSize() const { return detail::elemSizeOf(type()); }
std::size_t GpuMat::elemSize1() const { return depthSize(depthOf(type())); }
bool GpuMat::external() const { return storage_ && storage_->external(); }
ComputeDevice GpuMat::device() const { return storage_ ? ComputeDevice(storage_->device()) : ComputeDevice(); }

ComputeBackend GpuMat::backend() const {
  requireNonEmpty(*this, "GpuMat::backend");
  return storage_->device()->backend();
}

OpenCLBufferPtr GpuMat::getOpenCLBuffer() const {
  if (empty()) return OpenCLBufferPtr{};
  if (backend() != ComputeBackend::opencl)
    fail(ErrorCode::Unsupported, "GpuMat::getOpenCLBuffer: the matrix lives on " + device().toString());
  return OpenCLBufferPtr{storage_->handle(), offset_};
}

}  // namespace devicearray

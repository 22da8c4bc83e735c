// devicearray — zero-copy interop with OpenCV (optional; needs OpenCV's core module).
//
//   cv::Mat             <-> HostMat               views, no copies (every depth incl. CV_16F,
//                                                  N-d Mats, steps preserved)
//   cv::cuda::GpuMat    <-> GpuMat / GpuMatND     headers over CUDA memory, no copies
//   cv::UMat            <-> GpuMatND              OpenCL buffers shared through one cl_context
//
// Type codes are numerically identical to OpenCV's (CV_8UC3 == makeType(Depth::U8,
// 3)), so `type()` passes through unchanged in both directions.
//
// Lifetime: like OpenCV's user-data headers (and GpuMatND::createGpuMatHeader), the
// view and header functions here do NOT keep the memory alive; the source object
// must outlive what is made from it. The one exception is fromUMat(), which keeps
// the UMat alive because OpenCV would otherwise recycle its buffer.
//
// Stream ordering (docs/stream-queue-context.md) with OpenCV's OpenCL queue: OpenCV enqueues its
// OpenCL work on the queue of the thread's cv::ocl::OpenCLExecutionContext, which
// the library does not see. fromUMat() and toUMat() order the hand-over in both
// directions; work OpenCV does on a UMat made by toUMat() afterwards is ordered for
// later library calls by passing openCVStream(device) to the next call (or by
// adopting OpenCV's queue as the library's own with deviceFromOpenCV()).
#pragma once

#if !__has_include(<opencv2/core.hpp>)
#error "devicearray/opencv.hpp needs OpenCV (opencv2/core.hpp was not found): install OpenCV's core module (e.g. Debian's libopencv-dev) and build devicearray with DEVICEARRAY_WITH_OPENCV=ON"
#endif

#include <opencv2/core.hpp>
#include <opencv2/core/ocl.hpp>
#if __has_include(<opencv2/core/cuda.hpp>)
#include <opencv2/core/cuda.hpp>
#define DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT 1
#endif

#include <cstddef>
#include <string>
#include <vector>

#include "devicearray/device.hpp"
#include "devicearray/error.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/stream.hpp"
#include "devicearray/types.hpp"

namespace devicearray {

static_assert(CV_8U == static_cast<int>(Depth::U8) && CV_8S == static_cast<int>(Depth::S8) &&
                  CV_16U == static_cast<int>(Depth::U16) && CV_16S == static_cast<int>(Depth::S16) &&
                  CV_32S == static_cast<int>(Depth::S32) && CV_32F == static_cast<int>(Depth::F32) &&
                  CV_64F == static_cast<int>(Depth::F64) && CV_16F == static_cast<int>(Depth::F16),
              "OpenCV's depth codes must equal devicearray::Depth");
static_assert(CV_CN_MAX == kMaxChannels, "OpenCV's channel limit must equal devicearray's");

/// Throws Unsupported naming `function` when the depth of OpenCV type code `cvType` has
/// no Depth here (OpenCV 5 adds bool, bfloat16, 64-bit integers, ...); the functions of
/// this header check every OpenCV object they are given with it.
inline void requireKnownDepth(int cvType, const char* function) {
  if (CV_MAT_DEPTH(cvType) > CV_16F)
    throw Error(ErrorCode::Unsupported, std::string(function) + ": OpenCV depth " +
                                            std::to_string(CV_MAT_DEPTH(cvType)) +
                                            " has no devicearray::Depth (supported: CV_8U..CV_16F)");
}

// ----------------------------------------------------------- cv::Mat / HostMat --

/// A HostMat viewing the pixels of `mat` (no copy): same size per axis, type and
/// steps, so ROIs and other non-continuous Mats stay views of the same bytes. The
/// view does not keep `mat`'s memory alive. An empty Mat gives an empty HostMat.
/// Non-blocking (no device work). Throws Unsupported for a depth without a Depth
/// (OpenCV 5's new depths) and InvalidArgument for steps HostMat cannot hold.
inline HostMat hostMatView(const cv::Mat& mat) {
  constexpr const char* fn = "hostMatView";
  if (mat.empty()) return HostMat();
  requireKnownDepth(mat.type(), fn);
  HostMat::SizeArray size(mat.size.p, mat.size.p + mat.dims);
  HostMat::StepArray step(mat.step.p, mat.step.p + mat.dims);
  return HostMat(std::move(size), mat.type(), mat.data, std::move(step));
}

/// A cv::Mat viewing the elements of `host` (no copy), with its type and steps. A
/// 1-D HostMat of N elements gives a 1 x N Mat (the convention of OpenCV's GpuMat
/// headers); N-d HostMats give N-d Mats. The Mat does not keep `host`'s memory
/// alive. An empty HostMat gives an empty Mat. Non-blocking. Throws InvalidArgument
/// when a step is not a multiple of elemSize1() (OpenCV requires it).
inline cv::Mat cvMatView(const HostMat& host) {
  constexpr const char* fn = "cvMatView";
  if (host.empty()) return cv::Mat();
  for (std::size_t i = 0; i < host.step.size(); ++i)
    if (host.step[i] % host.elemSize1() != 0)
      throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": step " + std::to_string(host.step[i]) +
                                                  " of axis " + std::to_string(i) + " is not a multiple of the " +
                                                  std::to_string(host.elemSize1()) +
                                                  "-byte channel size; cv::Mat cannot express it");
  if (host.dims == 1) return cv::Mat(1, host.size[0], host.type(), host.data(), host.step[0] * static_cast<std::size_t>(host.size[0]));
  // cv::Mat takes dims-1 steps; the last one is the element size, which HostMat guarantees.
  return cv::Mat(host.dims, host.size.data(), host.type(), host.data(), host.step.data());
}

// ------------------------------------------------- cv::cuda::GpuMat / GpuMat --

#if defined(DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT)

/// A cv::cuda::GpuMat header over the CUDA memory of `mat` (no copy, same rows, cols,
/// type and step). The header does not keep the memory alive. Works with every
/// OpenCV build (the header needs no CUDA support in OpenCV); using it in OpenCV's
/// CUDA functions needs an OpenCV built with CUDA. Non-blocking. Throws InvalidState
/// for an empty matrix and Unsupported for an OpenCL matrix (it has no device pointer).
inline cv::cuda::GpuMat cudaGpuMatHeader(const GpuMat& mat) {
  constexpr const char* fn = "cudaGpuMatHeader";
  if (mat.empty()) throw Error(ErrorCode::InvalidState, std::string(fn) + ": the GpuMat is empty");
  if (mat.backend() != ComputeBackend::cuda)
    throw Error(ErrorCode::Unsupported, std::string(fn) + ": the GpuMat lives on " + mat.device().toString() +
                                            "; cv::cuda::GpuMat needs CUDA memory (use toUMat for OpenCL)");
  return cv::cuda::GpuMat(mat.rows, mat.cols, mat.type(), mat.data, mat.step);
}

/// A cv::cuda::GpuMat header over an effectively 2-D GpuMatND (see
/// GpuMatND::createGpuMatHeader). Throws as createGpuMatHeader() and cudaGpuMatHeader(GpuMat).
inline cv::cuda::GpuMat cudaGpuMatHeader(const GpuMatND& mat) {
  if (mat.empty()) throw Error(ErrorCode::InvalidState, "cudaGpuMatHeader: the GpuMatND is empty");
  return cudaGpuMatHeader(mat.createGpuMatHeader());
}

/// A cv::cuda::GpuMat header over the 2-D plane at `idx` (the leading dims-2 indices)
/// of an N-d GpuMatND, restricted to `rowRange` x `colRange`. Throws as
/// GpuMatND::createGpuMatHeader(idx, rowRange, colRange) and cudaGpuMatHeader(GpuMat).
inline cv::cuda::GpuMat cudaGpuMatHeader(const GpuMatND& mat, const GpuMatND::IndexArray& idx,
                                         Range rowRange = Range::all(), Range colRange = Range::all()) {
  if (mat.empty()) throw Error(ErrorCode::InvalidState, "cudaGpuMatHeader: the GpuMatND is empty");
  return cudaGpuMatHeader(mat.createGpuMatHeader(idx, rowRange, colRange));
}

/// A GpuMat header over the memory of a cv::cuda::GpuMat (external(): not freed, not
/// kept alive). Non-blocking. Throws InvalidArgument for an empty matrix or memory that is not
/// CUDA device memory, BackendUnavailable without a CUDA device, Unsupported for an
/// unknown depth.
inline GpuMat gpuMatHeader(const cv::cuda::GpuMat& mat) {
  constexpr const char* fn = "gpuMatHeader";
  if (mat.empty() || mat.data == nullptr)
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the cv::cuda::GpuMat is empty");
  requireKnownDepth(mat.type(), fn);
  return GpuMat(mat.rows, mat.cols, mat.type(), mat.data, mat.step);
}

/// A 2-D GpuMatND {rows, cols} over the memory of a cv::cuda::GpuMat (external, not
/// kept alive), with its row step. Throws as gpuMatHeader().
inline GpuMatND gpuMatNDHeader(const cv::cuda::GpuMat& mat) {
  constexpr const char* fn = "gpuMatNDHeader";
  if (mat.empty() || mat.data == nullptr)
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the cv::cuda::GpuMat is empty");
  requireKnownDepth(mat.type(), fn);
  return GpuMatND({mat.rows, mat.cols}, mat.type(), mat.data, {mat.step});
}

#endif  // DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT

// ------------------------------------------------------- cv::UMat / OpenCL ----

/// A ComputeDevice adopting the OpenCL context, device and queue of the calling
/// thread's current OpenCV execution context (ComputeDevice::fromOpenCL): the library
/// then runs on OpenCV's own queue, so OpenCV's work and the library's are ordered
/// without events. Non-blocking. Throws Unsupported when OpenCV has no OpenCL or
/// OpenCL is disabled (cv::ocl::useOpenCL() false), InvalidArgument as fromOpenCL.
inline ComputeDevice deviceFromOpenCV() {
  constexpr const char* fn = "deviceFromOpenCV";
  if (!cv::ocl::haveOpenCL() || !cv::ocl::useOpenCL())
    throw Error(ErrorCode::Unsupported, std::string(fn) + ": OpenCV's OpenCL is unavailable or disabled "
                                                          "(cv::ocl::haveOpenCL() / cv::ocl::useOpenCL())");
  cv::ocl::OpenCLExecutionContext& current = cv::ocl::OpenCLExecutionContext::getCurrent();
  if (current.empty())
    throw Error(ErrorCode::Unsupported, std::string(fn) + ": OpenCV has no OpenCL execution context");
  return ComputeDevice::fromOpenCL(current.getContext().ptr(), current.getDevice().ptr(), current.getQueue().ptr());
}

/// The queue of the calling thread's current OpenCV execution context, wrapped for
/// `device` (whose cl_context it must share). Pass it to a library call to order that
/// call after the OpenCV work enqueued so far. Non-blocking. Throws Unsupported
/// without an OpenCV OpenCL context, InvalidArgument when the queue is of another
/// context or device.
inline Stream openCVStream(const ComputeDevice& device) {
  if (!cv::ocl::haveOpenCL())
    throw Error(ErrorCode::Unsupported, "openCVStream: OpenCV has no OpenCL runtime");
  void* queue = cv::ocl::Queue::getDefault().ptr();
  if (queue == nullptr)
    throw Error(ErrorCode::Unsupported, "openCVStream: OpenCV has no OpenCL queue on this thread");
  return Stream::wrap(device, OpenCLCommandQueuePtr{queue});
}

#if defined(DEVICEARRAY_HAS_OPENCV)
// Implemented in the library (src/interop/opencv.cpp); present when devicearray was
// built with OpenCV.

/// An OpenCV OpenCL execution context on `device`'s cl_context and cl_device_id, with
/// a new queue of OpenCV's. Bind it (ctx.bind() or cv::ocl::OpenCLExecutionContextScope)
/// so that OpenCV's UMat operations on this thread allocate in the library's context
/// and toUMat()/fromUMat() can exchange buffers. Non-blocking. Throws InvalidArgument
/// for a non-OpenCL device, Unsupported when OpenCV has no usable OpenCL
/// (cv::ocl::haveOpenCL() is false) and BackendError when OpenCV refuses the context.
cv::ocl::OpenCLExecutionContext openCVExecutionContext(const ComputeDevice& device);

/// A GpuMatND sharing the OpenCL buffer of `umat` (no copy): same size per axis, type
/// and steps, the UMat's offset kept as the view offset. The result keeps `umat`
/// alive (OpenCV would otherwise recycle the buffer); when its last handle goes, the
/// host waits for the library's work on it before releasing the UMat.
/// `access` is passed to UMat::handle(): ACCESS_READ for reading only, ACCESS_RW (the
/// default) or ACCESS_WRITE when the library will write, so that OpenCV treats its
/// host copy as stale. The UMat must live in `device`'s cl_context (bind
/// openCVExecutionContext(device), or use deviceFromOpenCV()).
/// Ordering: later library work on any queue waits (device-side) for the OpenCV work
/// enqueued so far on the thread's OpenCV queue. Non-blocking, except that OpenCV
/// itself may upload the UMat's host data first. Throws InvalidArgument for an empty
/// UMat, a non-OpenCL device or a buffer of another context; Unsupported without
/// OpenCV OpenCL or for an unknown depth.
GpuMatND fromUMat(const cv::UMat& umat, const ComputeDevice& device, cv::AccessFlag access = cv::ACCESS_RW);

/// A 2-D cv::UMat sharing the OpenCL buffer of an effectively 2-D GpuMatND (1-D
/// arrays give 1 x N; see createGpuMatHeader), in the context of the calling thread's
/// OpenCV execution context, which must be `mat`'s cl_context. No copy. The UMat does
/// not keep `mat`'s memory alive: keep `mat` alive until OpenCV's work on the UMat is
/// complete. Ordering: OpenCV's queue waits (device-side) for the library's work on
/// `mat` enqueued so far; order OpenCV's later work for library calls with
/// openCVStream(). Non-blocking. Throws InvalidState for an empty array, Unsupported
/// for a CUDA array or without OpenCV OpenCL, InvalidArgument when the array is not
/// effectively 2-D, its row step is not a multiple of elemSize1() or its context is
/// not OpenCV's current one.
cv::UMat toUMat(const GpuMatND& mat);
#endif

}  // namespace devicearray

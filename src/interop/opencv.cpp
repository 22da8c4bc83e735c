// OpenCV interop that needs the library's internals (include/devicearray/opencv.hpp):
// sharing OpenCL buffers with cv::UMat in both directions.
//
// fromUMat wraps the UMat's cl_mem through the backend's adopt() (which verifies the
// context and retains the cl_mem) and then replaces the allocation with one that
// also holds the UMat: OpenCV keeps released UMat buffers in a pool and hands them
// to the next UMat, so retaining the cl_mem alone would not stop OpenCV from
// overwriting it. The hand-over in both directions is ordered through the
// allocation's event list with OpenCV's queue wrapped as a library queue.
#if defined(DEVICEARRAY_HAS_OPENCV)

#include "devicearray/opencv.hpp"

#include <climits>
#include <memory>
#include <string>
#include <utility>

#include "backend/backend.hpp"
#include "core/array_access.hpp"

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

namespace devicearray {
namespace {

[[noreturn]] void opencvFail(ErrorCode code, const char* fn, const std::string& what) {
  throw Error(code, std::string(fn) + ": " + what);
}

/// Keeps a UMat (and thus its pooled buffer) alive for as long as library handles use it.
class UMatAllocation final : public detail::Allocation {
 public:
  UMatAllocation(std::shared_ptr<detail::Allocation> adopted, cv::UMat umat)
      : Allocation(adopted->device(), adopted->handle(), adopted->bytes(), /*owned=*/false),
        adopted_(std::move(adopted)),
        umat_(std::move(umat)) {}

  ~UMatAllocation() override {
    // Once the UMat goes, OpenCV may give its buffer to another UMat at once, so the
    // library's enqueued work on it must be finished first. A failing wait (lost
    // device) cannot be reported from a destructor; the UMat is released regardless.
    try {
      waitIdle();
    } catch (...) {  // NOLINT(bugprone-empty-catch)
    }
    adopted_.reset();
    umat_.release();
  }

 private:
  std::shared_ptr<detail::Allocation> adopted_;
  cv::UMat umat_;
};

void requireOpenCVOpenCL(const char* fn) {
  if (!cv::ocl::haveOpenCL())
    opencvFail(ErrorCode::Unsupported, fn, "OpenCV was built without OpenCL or found no OpenCL runtime");
  if (!cv::ocl::useOpenCL())
    opencvFail(ErrorCode::Unsupported, fn, "OpenCV's OpenCL is disabled (call cv::ocl::setUseOpenCL(true))");
}

/// OpenCV's queue of the calling thread as a library queue of `device` (validated to
/// share its context and device).
std::shared_ptr<detail::QueueImpl> openCVQueue(const ComputeDevice& device, const char* fn) {
  void* queue = cv::ocl::Queue::getDefault().ptr();
  if (queue == nullptr) opencvFail(ErrorCode::Unsupported, fn, "OpenCV has no OpenCL queue on this thread");
  return device.impl()->wrapQueue(queue);
}

void requireOpenCVContextOf(const ComputeDevice& device, const char* fn) {
  void* current = cv::ocl::Context::getDefault(false).ptr();
  if (current != device.nativeContext())
    opencvFail(ErrorCode::InvalidArgument, fn,
               "OpenCV's current OpenCL context is not the cl_context of " + device.toString() +
                   " (bind devicearray::openCVExecutionContext(device) on this thread, or adopt OpenCV's context "
                   "with devicearray::deviceFromOpenCV())");
}

}  // namespace

cv::ocl::OpenCLExecutionContext openCVExecutionContext(const ComputeDevice& device) {
  constexpr const char* fn = "openCVExecutionContext";
  if (!device.isValid() || device.backend() != ComputeBackend::opencl)
    opencvFail(ErrorCode::InvalidArgument, fn,
               (device.isValid() ? device.toString() : std::string("an invalid device")) +
                   " is not an OpenCL device");
  if (!cv::ocl::haveOpenCL())
    opencvFail(ErrorCode::Unsupported, fn, "OpenCV was built without OpenCL or found no OpenCL runtime");
#if defined(DEVICEARRAY_HAS_OPENCL)
  auto clDevice = static_cast<cl_device_id>(device.nativeDevice());
  cl_platform_id platform = nullptr;
  std::size_t nameSize = 0;
  if (clGetDeviceInfo(clDevice, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr) != CL_SUCCESS ||
      clGetPlatformInfo(platform, CL_PLATFORM_NAME, 0, nullptr, &nameSize) != CL_SUCCESS)
    opencvFail(ErrorCode::BackendError, fn, "cannot query the OpenCL platform of " + device.toString());
  std::string platformName(nameSize, '\0');
  if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, nameSize, platformName.data(), nullptr) != CL_SUCCESS)
    opencvFail(ErrorCode::BackendError, fn, "cannot query the OpenCL platform name of " + device.toString());
  while (!platformName.empty() && platformName.back() == '\0') platformName.pop_back();
  // OpenCV takes over one reference of each object on success: give it its own.
  auto context = static_cast<cl_context>(device.nativeContext());
  if (clRetainContext(context) != CL_SUCCESS)
    opencvFail(ErrorCode::BackendError, fn, "clRetainContext failed for " + device.toString());
  clRetainDevice(clDevice);
  try {
    return cv::ocl::OpenCLExecutionContext::create(platformName, platform, context, clDevice);
  } catch (const cv::Exception& e) {
    clReleaseContext(context);
    clReleaseDevice(clDevice);
    opencvFail(ErrorCode::BackendError, fn, std::string("OpenCV refused the context: ") + e.what());
  }
#else
  opencvFail(ErrorCode::Unsupported, fn, "devicearray was built without OpenCL");
#endif
}

GpuMatND fromUMat(const cv::UMat& umat, const ComputeDevice& device, cv::AccessFlag access) {
  constexpr const char* fn = "fromUMat";
  if (umat.empty()) opencvFail(ErrorCode::InvalidArgument, fn, "the UMat is empty");
  if (!device.isValid() || device.backend() != ComputeBackend::opencl)
    opencvFail(ErrorCode::InvalidArgument, fn,
               (device.isValid() ? device.toString() : std::string("an invalid device")) +
                   " is not an OpenCL device; cv::UMat buffers are OpenCL memory");
  const int known = cv::ACCESS_READ | cv::ACCESS_WRITE;
  if ((static_cast<int>(access) & known) == 0 || (static_cast<int>(access) & ~known) != 0)
    opencvFail(ErrorCode::InvalidArgument, fn,
               "access flags " + std::to_string(static_cast<int>(access)) +
                   " are not ACCESS_READ, ACCESS_WRITE or ACCESS_RW");
  requireKnownDepth(umat.type(), fn);
  requireOpenCVOpenCL(fn);
  requireOpenCVContextOf(device, fn);

  void* mem = nullptr;
  try {
    mem = umat.handle(access);
  } catch (const cv::Exception& e) {
    opencvFail(ErrorCode::BackendError, fn, std::string("UMat::handle failed: ") + e.what());
  }
  if (mem == nullptr)
    opencvFail(ErrorCode::Unsupported, fn, "the UMat has no OpenCL buffer (OpenCV keeps it in host memory)");

  GpuMatND::SizeArray size(umat.size.p, umat.size.p + umat.dims);
  GpuMatND::StepArray step(umat.step.p, umat.step.p + umat.dims);
  // The external constructor validates the layout against the cl_mem's size and the
  // context (through adopt); its allocation is then wrapped to also hold the UMat.
  const GpuMatND wrapped(size, umat.type(), OpenCLBufferPtr{mem, umat.offset}, device, step);
  auto keep = std::make_shared<UMatAllocation>(detail::allocationOf(wrapped), umat);

  // OpenCV produced the UMat on its queue: later library work on any queue waits for it.
  {
    auto q = openCVQueue(device, fn);
    detail::OrderedUse use(*q, {keep.get()});
    use.commit();
  }
  return detail::makeGpuMatND(std::move(keep), detail::offsetOf(wrapped), std::move(size), umat.type(),
                              std::move(step));
}

cv::UMat toUMat(const GpuMatND& mat) {
  constexpr const char* fn = "toUMat";
  if (mat.empty()) opencvFail(ErrorCode::InvalidState, fn, "the GpuMatND is empty");
  if (mat.backend() != ComputeBackend::opencl)
    opencvFail(ErrorCode::Unsupported, fn,
               "the array lives on " + mat.device().toString() +
                   "; cv::UMat shares OpenCL buffers only (use cudaGpuMatHeader for CUDA)");
  requireKnownDepth(mat.type(), fn);
  requireOpenCVOpenCL(fn);
  const ComputeDevice device = mat.device();
  requireOpenCVContextOf(device, fn);

  // Validates "effectively 2-D" and gives rows, cols, row step and the view offset.
  const GpuMat plane = mat.createGpuMatHeader();
  const std::size_t es = plane.elemSize();
  if (plane.step % plane.elemSize1() != 0)
    opencvFail(ErrorCode::InvalidArgument, fn,
               "row step " + std::to_string(plane.step) + " is not a multiple of the " +
                   std::to_string(plane.elemSize1()) + "-byte channel size; cv::UMat cannot express it");
  const OpenCLBufferPtr buffer = plane.getOpenCLBuffer();
  if (buffer.offset % es != 0)
    opencvFail(ErrorCode::InvalidArgument, fn,
               "the view starts at byte " + std::to_string(buffer.offset) + " of its buffer, not a multiple of the " +
                   std::to_string(es) + "-byte element size; a cv::UMat ROI cannot express it");

  // cv::ocl::convertFromBuffer has no offset parameter: wrap the buffer from its start
  // and cut the view out as a ROI. A single row may use any step, so its offset is
  // expressed as a column offset within one wider row.
  const std::size_t rowBytes = static_cast<std::size_t>(plane.cols) * es;
  std::size_t step = plane.step;
  int rowOffset = 0;
  int colOffset = 0;
  if (plane.rows == 1) {
    step = buffer.offset + rowBytes;
    colOffset = static_cast<int>(buffer.offset / es);
  } else {
    const std::size_t rem = buffer.offset % step;
    if (rem + rowBytes > step)
      opencvFail(ErrorCode::InvalidArgument, fn,
                 "the view's offset " + std::to_string(buffer.offset) + " and row step " + std::to_string(step) +
                     " cannot be expressed as a cv::UMat ROI (its rows would wrap)");
    if (buffer.offset / step > static_cast<std::size_t>(INT_MAX - plane.rows))
      opencvFail(ErrorCode::OutOfRange, fn,
                 "the view starts " + std::to_string(buffer.offset / step) +
                     " rows into its buffer; OpenCV's row count would exceed INT_MAX");
    rowOffset = static_cast<int>(buffer.offset / step);
    colOffset = static_cast<int>(rem / es);
  }
  if (step / es > static_cast<std::size_t>(INT_MAX))
    opencvFail(ErrorCode::OutOfRange, fn,
               "the view starts " + std::to_string(buffer.offset) + " bytes into its buffer; the row OpenCV would "
               "need is wider than INT_MAX elements");
  const int fullRows = rowOffset + plane.rows;
  const int fullCols = static_cast<int>(step / es);

#if defined(DEVICEARRAY_HAS_OPENCL)
  std::size_t memBytes = 0;
  if (clGetMemObjectInfo(static_cast<cl_mem>(buffer.buffer), CL_MEM_SIZE, sizeof memBytes, &memBytes, nullptr) ==
          CL_SUCCESS &&
      static_cast<std::size_t>(fullRows) * step > memBytes)
    // OpenCV requires whole rows of `step` bytes inside the buffer, including the last one.
    opencvFail(ErrorCode::InvalidArgument, fn,
               "cv::UMat needs " + std::to_string(fullRows) + " full rows of " + std::to_string(step) +
                   " bytes, but the cl_mem holds only " + std::to_string(memBytes) + " bytes");
#endif

  // OpenCV's queue waits (device-side) for the library's work on this memory.
  {
    auto q = openCVQueue(device, fn);
    detail::OrderedUse use(*q, {detail::allocationOf(mat).get()});
    use.commit();
  }

  cv::UMat whole;
  try {
    cv::ocl::convertFromBuffer(buffer.buffer, step, fullRows, fullCols, mat.type(), whole);
  } catch (const cv::Exception& e) {
    opencvFail(ErrorCode::BackendError, fn, std::string("cv::ocl::convertFromBuffer failed: ") + e.what());
  }
  if (rowOffset == 0 && colOffset == 0 && plane.cols == fullCols) return whole;
  return whole(cv::Rect(colOffset, rowOffset, plane.cols, plane.rows));
}

}  // namespace devicearray

#endif  // DEVICEARRAY_HAS_OPENCV

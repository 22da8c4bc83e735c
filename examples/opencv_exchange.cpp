// opencv_exchange: devicearray and OpenCV sharing memory without copies.
//   1. cv::Mat <-> HostMat views: upload from a Mat, download in place into a Mat ROI.
//   2. OpenCL (every OpenCL device): a GpuMatND consumed by an OpenCV operation as a
//      cv::UMat, and an OpenCV result read through a GpuMatND, in one shared context.
//   3. CUDA (when OpenCV has cv::cuda::GpuMat): a cv::cuda::GpuMat header over our memory.
// Built when OpenCV is found; exits 0 with "skipped" for the parts no device allows.
#include <cstdio>

#include <opencv2/core.hpp>

#include <devicearray/devicearray.hpp>
#include <devicearray/opencv.hpp>

namespace da = devicearray;

namespace {

bool matViews(const da::ComputeDevice& device) {
  cv::Mat src(37, 53, CV_8UC3);
  cv::randu(src, 0, 255);
  cv::Mat canvas(40, 60, CV_8UC3, cv::Scalar(9, 9, 9));
  cv::Mat window = canvas(cv::Rect(4, 2, 53, 37));  // a non-continuous ROI

  da::GpuMatND gpu({37, 53}, CV_8UC3, device);
  gpu.upload(da::hostMatView(src));     // reads the Mat's pixels directly
  da::HostMat dst = da::hostMatView(window);
  gpu.download(dst);                    // same size and type: written into the ROI in place

  const bool same = cv::norm(src, window, cv::NORM_INF) == 0;
  const bool untouched = canvas.at<cv::Vec3b>(0, 0) == cv::Vec3b(9, 9, 9);
  std::printf("  cv::Mat views: %s\n", same && untouched ? "ok" : "MISMATCH");
  return same && untouched;
}

bool umatExchange(const da::ComputeDevice& device) {
  // OpenCV's OpenCL runs in the library's context on this thread from here on.
  cv::ocl::OpenCLExecutionContext context = da::openCVExecutionContext(device);
  cv::ocl::OpenCLExecutionContextScope scope(context);

  // Ours -> OpenCV: the UMat is our cl_mem; OpenCV's queue waits for our upload.
  cv::Mat ramp(8, 16, CV_32FC1);
  for (int i = 0; i < ramp.rows * ramp.cols; ++i) ramp.at<float>(i) = static_cast<float>(i);
  da::GpuMatND ours({8, 16}, CV_32FC1, device);
  ours.upload(da::hostMatView(ramp));
  cv::UMat u = da::toUMat(ours);
  const bool shared = u.handle(cv::ACCESS_READ) == ours.getOpenCLBuffer().buffer;
  cv::add(u, cv::Scalar(0.5), u);          // OpenCV writes into our buffer
  da::Stream openCV = da::openCVStream(device);
  da::HostMat back;
  ours.download(back, openCV);             // ordered after OpenCV's kernel
  openCV.waitForCompletion();
  bool added = true;
  for (int i = 0; i < 8 * 16; ++i) added &= back.ptr<float>()[i] == static_cast<float>(i) + 0.5f;

  // OpenCV -> ours: read an OpenCV result through a GpuMatND without a copy.
  cv::UMat a(16, 24, CV_8UC1, cv::Scalar(20));
  cv::UMat sum;
  cv::add(a, cv::Scalar(100), sum);        // OpenCV's kernel, on OpenCV's queue
  const da::GpuMatND view = da::fromUMat(sum, device, cv::ACCESS_READ);  // keeps `sum` alive
  da::HostMat h;
  view.download(h);                        // ordered after OpenCV's kernel by fromUMat
  bool read = view.getOpenCLBuffer().buffer == sum.handle(cv::ACCESS_READ);
  for (int i = 0; i < 16 * 24; ++i) read &= h.ptr<std::uint8_t>()[i] == 120;

  std::printf("  cv::UMat exchange: %s\n", shared && added && read ? "ok" : "MISMATCH");
  return shared && added && read;
}

#if defined(DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT)
bool cudaHeader(const da::ComputeDevice& device) {
  da::GpuMat g(6, 7, CV_16SC3, device);
  g.setTo(da::Scalar(1, -2, 3));
  const da::GpuMat roi = g(da::Range(1, 5), da::Range(2, 6));
  const cv::cuda::GpuMat header = da::cudaGpuMatHeader(roi);  // no copy, no ownership
  const da::GpuMat back = da::gpuMatHeader(header);
  const bool ok = header.data == roi.data && header.step == roi.step && header.rows == 4 && header.cols == 4 &&
                  back.data == roi.data && back.external();
  std::printf("  cv::cuda::GpuMat header: %s\n", ok ? "ok" : "MISMATCH");
  return ok;
}
#endif

}  // namespace

int main() {
  try {
    bool ok = true;
    for (const da::ComputeDevice& device : da::ComputeDevice::all()) {
      std::printf("%s\n", device.toString().c_str());
      ok &= matViews(device);
      if (device.backend() == da::ComputeBackend::opencl) {
        if (cv::ocl::haveOpenCL()) {
          cv::ocl::setUseOpenCL(true);
          ok &= umatExchange(device);
        } else {
          std::printf("  cv::UMat exchange: skipped (this OpenCV has no OpenCL)\n");
        }
      } else {
#if defined(DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT)
        ok &= cudaHeader(device);
#else
        std::printf("  cv::cuda::GpuMat header: skipped (this OpenCV has no cv::cuda::GpuMat)\n");
#endif
      }
    }
    if (da::ComputeDevice::all().empty()) std::printf("skipped: no device\n");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opencv_exchange: error: %s\n", e.what());
    return 1;
  }
}

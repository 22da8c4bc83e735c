// OpenCV interop (include/devicearray/opencv.hpp): cv::Mat <-> HostMat views,
// cv::cuda::GpuMat headers, and zero-copy cv::UMat exchange through a shared OpenCL
// context. Built everywhere; without OpenCV every test skips with the reason.
#include <gtest/gtest.h>

#if defined(DEVICEARRAY_HAS_OPENCV)

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#if defined(DEVICEARRAY_HAS_OPENCL)
#include <CL/cl.h>
#endif

#include "devicearray/opencv.hpp"
#include "test_support.hpp"

namespace {

using namespace devicearray;

/// Random bytes into every element of a (possibly non-continuous, N-d) Mat.
void fillRandom(cv::Mat& m, std::uint32_t seed) {
  datest::writePacked(hostMatView(m), datest::nonZeroBytes(m.total() * m.elemSize(), seed));
}

/// Packed bytes of a Mat, walked with OpenCV's own steps (independent of hostMatView).
std::vector<std::uint8_t> matBytes(const cv::Mat& m) {
  std::vector<std::uint8_t> out;
  std::vector<int> shape(m.size.p, m.size.p + m.dims);
  datest::forEachIndex(shape, [&](const std::vector<int>& idx) {
    const std::uint8_t* p = m.ptr<std::uint8_t>(idx.data());
    out.insert(out.end(), p, p + m.elemSize());
  });
  return out;
}

// ------------------------------------------------------ cv::Mat <-> HostMat --

TEST(OpenCVMat, HostMatViewSharesThePixelsOfEveryDepthAndChannelCount) {
  for (Depth depth : datest::allDepths()) {
    for (int channels : {1, 2, 3, 4}) {
      const int type = makeType(depth, channels);
      cv::Mat m(5, 7, type);
      fillRandom(m, static_cast<std::uint32_t>(type));
      const HostMat h = hostMatView(m);
      SCOPED_TRACE(cv::typeToString(type));
      EXPECT_EQ(h.type(), m.type());
      EXPECT_EQ(h.data(), m.data) << "a view, not a copy";
      EXPECT_EQ(h.size, (std::vector<int>{5, 7}));
      EXPECT_EQ(h.step, (std::vector<std::size_t>{m.step[0], m.step[1]}));
      EXPECT_EQ(datest::packedBytes(h), matBytes(m));
    }
  }
}

TEST(OpenCVMat, RoiOfAnNdHalfFloatMatKeepsItsSteps) {
  const int sizes[] = {4, 6, 9};
  cv::Mat whole(3, sizes, CV_16FC2);
  fillRandom(whole, 7);
  const cv::Range ranges[] = {cv::Range(1, 3), cv::Range(2, 5), cv::Range(3, 8)};
  cv::Mat roi = whole(ranges);
  const HostMat h = hostMatView(roi);
  EXPECT_EQ(h.dims, 3);
  EXPECT_EQ(h.size, (std::vector<int>{2, 3, 5}));
  EXPECT_EQ(h.step, (std::vector<std::size_t>{whole.step[0], whole.step[1], whole.step[2]}));
  EXPECT_FALSE(h.isContinuous());
  EXPECT_EQ(h.data(), roi.data);
  EXPECT_EQ(datest::packedBytes(h), matBytes(roi));
  // Writing through the view changes the Mat.
  *reinterpret_cast<std::uint16_t*>(h.data()) = 0x3C00;  // 1.0 in binary16
  EXPECT_EQ(roi.at<cv::float16_t>(0, 0, 0), cv::float16_t(1.0f));
}

TEST(OpenCVMat, CvMatViewOfHostMatsOfOneTwoAndThreeAxes) {
  HostMat line = datest::randomHostMat({11}, makeType(Depth::S16, 3), 1);
  const cv::Mat m1 = cvMatView(line);
  EXPECT_EQ(m1.dims, 2);
  EXPECT_EQ(m1.rows, 1) << "a 1-D HostMat is a 1 x N Mat";
  EXPECT_EQ(m1.cols, 11);
  EXPECT_EQ(m1.data, line.data());
  EXPECT_EQ(matBytes(m1), datest::packedBytes(line));

  HostMat cube = datest::randomHostMat({3, 4, 5}, makeType(Depth::F64, 2), 2);
  const HostMat sub = cube({Range(1, 3), Range(0, 4), Range(2, 4)});
  const cv::Mat m3 = cvMatView(sub);
  EXPECT_EQ(m3.dims, 3);
  EXPECT_EQ(m3.type(), sub.type());
  EXPECT_EQ(m3.data, sub.data());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m3.step[i], sub.step[static_cast<std::size_t>(i)]);
  EXPECT_FALSE(m3.isContinuous());
  EXPECT_EQ(matBytes(m3), datest::packedBytes(sub));

  // Round trip: the Mat's view is the HostMat again.
  const HostMat back = hostMatView(m3);
  EXPECT_EQ(back.data(), sub.data());
  EXPECT_EQ(back.step, sub.step);
}

TEST(OpenCVMat, EmptyInEmptyOutAndUnrepresentableStepsAreRefused) {
  EXPECT_TRUE(hostMatView(cv::Mat()).empty());
  EXPECT_TRUE(cvMatView(HostMat()).empty());
  // A 2-byte-channel array whose row step is odd: legal for HostMat? If so, cv::Mat
  // cannot express it and cvMatView must say so instead of producing a wrong Mat.
  std::vector<std::uint8_t> bytes(64);
  try {
    const HostMat odd({2, 3}, makeType(Depth::U16, 1), bytes.data(), {7});
    datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cvMatView(odd); }, "odd row step");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();  // HostMat refused it itself
  }
}

class OpenCVUpload : public testing::TestWithParam<ComputeDevice> {};

TEST_P(OpenCVUpload, MatViewsUploadAndDownloadInPlaceOnEveryDevice) {
  cv::Mat src(37, 53, CV_8UC3);
  fillRandom(src, 3);
  cv::Mat canvas(40, 60, CV_8UC3, cv::Scalar(9, 9, 9));
  cv::Mat window = canvas(cv::Rect(4, 2, 53, 37));  // non-continuous destination
  GpuMatND g({37, 53}, CV_8UC3, GetParam());
  g.upload(hostMatView(src));
  HostMat dst = hostMatView(window);
  g.download(dst);  // same size and type: written in place into the Mat's ROI
  EXPECT_EQ(dst.data(), window.data);
  EXPECT_EQ(matBytes(window), matBytes(src));
  EXPECT_EQ(canvas.at<cv::Vec3b>(0, 0), cv::Vec3b(9, 9, 9)) << "bytes around the ROI must stay untouched";
  EXPECT_EQ(canvas.at<cv::Vec3b>(39, 59), cv::Vec3b(9, 9, 9));
}

DATEST_INSTANTIATE_OVER_DEVICES(OpenCVUpload);

// --------------------------------------------------------- cv::cuda::GpuMat --

#if defined(DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT)

class OpenCVCudaHeaders : public testing::TestWithParam<ComputeDevice> {};

TEST_P(OpenCVCudaHeaders, HeadersShareCudaMemoryAndOpenCLArraysAreRefused) {
  const ComputeDevice device = GetParam();
  if (device.backend() != ComputeBackend::cuda) {
    GpuMat g(4, 5, CV_32FC2, device);
    datest::expectError(ErrorCode::Unsupported, [&] { (void)cudaGpuMatHeader(g); }, "OpenCL GpuMat");
    GpuMatND nd({2, 4, 5}, CV_8UC1, device);
    datest::expectError(ErrorCode::Unsupported, [&] { (void)cudaGpuMatHeader(nd, {1}); }, "OpenCL plane");
    return;
  }
  GpuMat g(6, 7, CV_16SC3, device);
  g.setTo(Scalar(1, -2, 3));
  const GpuMat roi = g(Range(1, 5), Range(2, 6));
  const cv::cuda::GpuMat header = cudaGpuMatHeader(roi);
  EXPECT_EQ(header.data, roi.data);
  EXPECT_EQ(header.step, roi.step);
  EXPECT_EQ(header.rows, 4);
  EXPECT_EQ(header.cols, 4);
  EXPECT_EQ(header.type(), CV_16SC3);
  const GpuMat back = gpuMatHeader(header);
  EXPECT_TRUE(back.external());
  EXPECT_EQ(back.data, roi.data);
  HostMat h;
  back.download(h);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      const auto* px = reinterpret_cast<const std::int16_t*>(h.ptr({r, c}));
      EXPECT_EQ(px[0], 1);
      EXPECT_EQ(px[1], -2);
      EXPECT_EQ(px[2], 3);
    }

  GpuMatND volume({3, 8, 9}, CV_32FC1, device);
  const cv::cuda::GpuMat plane = cudaGpuMatHeader(volume, {2}, Range(1, 4), Range::all());
  EXPECT_EQ(plane.data, volume.getDevicePtr() + 2 * volume.step[0] + 1 * volume.step[1]);
  EXPECT_EQ(plane.step, volume.step[1]);
  const GpuMatND nd = gpuMatNDHeader(plane);
  EXPECT_TRUE(nd.external());
  EXPECT_EQ(nd.size, (std::vector<int>{3, 9}));
  EXPECT_EQ(nd.getDevicePtr(), plane.data);
}

TEST_P(OpenCVCudaHeaders, EmptyHeadersAreRefused) {
  datest::expectError(ErrorCode::InvalidArgument, [] { (void)gpuMatHeader(cv::cuda::GpuMat()); });
  datest::expectError(ErrorCode::InvalidArgument, [] { (void)gpuMatNDHeader(cv::cuda::GpuMat()); });
  datest::expectError(ErrorCode::InvalidState, [] { (void)cudaGpuMatHeader(GpuMat()); });
  datest::expectError(ErrorCode::InvalidState, [] { (void)cudaGpuMatHeader(GpuMatND()); });
}

DATEST_INSTANTIATE_OVER_DEVICES(OpenCVCudaHeaders);

TEST(OpenCVCudaHeaders, HostMemoryIsNotMistakenForDeviceMemory) {
  std::vector<float> host(12);
  const cv::cuda::GpuMat fake(3, 4, CV_32FC1, host.data(), 4 * sizeof(float));
  try {
    (void)gpuMatHeader(fake);
    ADD_FAILURE() << "host memory accepted as CUDA device memory";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::BackendUnavailable) << e.what();
  }
}

#endif  // DEVICEARRAY_OPENCV_HAS_CUDA_GPUMAT

// ------------------------------------------------------- cv::UMat / OpenCL --

#if defined(DEVICEARRAY_HAS_OPENCL)
/// A device adopting a fresh cl_context (and queue) on the same OpenCL device: a
/// context neither the library nor OpenCV has seen.
ComputeDevice deviceInAFreshContext(const ComputeDevice& device) {
  auto clDevice = static_cast<cl_device_id>(device.nativeDevice());
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &clDevice, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return ComputeDevice();
  cl_command_queue queue = clCreateCommandQueue(context, clDevice, 0, &err);
  if (err != CL_SUCCESS) {
    clReleaseContext(context);
    return ComputeDevice();
  }
  ComputeDevice adopted = ComputeDevice::fromOpenCL(context, clDevice, queue);
  clReleaseCommandQueue(queue);  // the adopted device holds its own references
  clReleaseContext(context);
  return adopted;
}
#endif

/// OpenCL devices with OpenCV's OpenCL bound to the library's context of the device.
class OpenCVUMat : public testing::TestWithParam<ComputeDevice> {
 protected:
  void SetUp() override {
    device_ = GetParam();
    if (device_.backend() != ComputeBackend::opencl)
      GTEST_SKIP() << "cv::UMat shares OpenCL buffers; " << device_.toString() << " is not an OpenCL device";
    if (!cv::ocl::haveOpenCL()) GTEST_SKIP() << "OpenCV found no OpenCL runtime (cv::ocl::haveOpenCL() is false)";
    cv::ocl::setUseOpenCL(true);
    context_ = openCVExecutionContext(device_);
    scope_ = std::make_unique<cv::ocl::OpenCLExecutionContextScope>(context_);
    ASSERT_TRUE(cv::ocl::useOpenCL());
    ASSERT_EQ(cv::ocl::Context::getDefault(false).ptr(), device_.nativeContext());
  }
  void TearDown() override {
    if (scope_) cv::ocl::finish();
    scope_.reset();
  }

  ComputeDevice device_;
  cv::ocl::OpenCLExecutionContext context_;
  std::unique_ptr<cv::ocl::OpenCLExecutionContextScope> scope_;
};

TEST_P(OpenCVUMat, ResultOfAnOpenCVOperationIsReadWithoutACopy) {
  cv::Mat a(45, 61, CV_8UC1);
  fillRandom(a, 11);
  cv::UMat ua = a.getUMat(cv::ACCESS_READ);
  cv::UMat sum;
  cv::add(ua, cv::Scalar(100), sum);  // OpenCV's OpenCL kernel, on OpenCV's queue
  const GpuMatND g = fromUMat(sum, device_, cv::ACCESS_READ);
  EXPECT_EQ(g.getOpenCLBuffer().buffer, sum.handle(cv::ACCESS_READ)) << "the same cl_mem: no copy";
  EXPECT_EQ(g.getOpenCLBuffer().offset, sum.offset);
  EXPECT_EQ(g.size, (std::vector<int>{45, 61}));
  EXPECT_EQ(g.type(), CV_8UC1);
  HostMat h;
  g.download(h);  // ordered after OpenCV's kernel by fromUMat
  for (int r = 0; r < 45; ++r)
    for (int c = 0; c < 61; ++c)
      ASSERT_EQ(*h.ptr({r, c}), std::min(255, a.at<std::uint8_t>(r, c) + 100)) << r << "," << c;
}

TEST_P(OpenCVUMat, RoiUMatKeepsItsOffsetAndStep) {
  cv::Mat a(30, 40, CV_32FC2);
  for (int r = 0; r < 30; ++r)
    for (int c = 0; c < 40; ++c) a.at<cv::Vec2f>(r, c) = cv::Vec2f(static_cast<float>(r), static_cast<float>(c));
  cv::UMat whole;
  a.copyTo(whole);
  cv::UMat roi = whole(cv::Rect(5, 7, 20, 10));
  const GpuMatND g = fromUMat(roi, device_, cv::ACCESS_READ);
  EXPECT_EQ(g.getOpenCLBuffer().offset, roi.offset);
  EXPECT_EQ(g.step[0], whole.step[0]);
  EXPECT_FALSE(g.isContinuous());
  HostMat h;
  g.download(h);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 20; ++c) {
      const auto* px = reinterpret_cast<const float*>(h.ptr({r, c}));
      ASSERT_EQ(px[0], static_cast<float>(r + 7));
      ASSERT_EQ(px[1], static_cast<float>(c + 5));
    }
}

TEST_P(OpenCVUMat, ArrayOfOursIsConsumedAndWrittenByOpenCV) {
  const int rows = 33, cols = 47;
  cv::Mat values(rows, cols, CV_32FC1);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) values.at<float>(r, c) = static_cast<float>(r * 100 + c);
  GpuMatND ours({rows, cols}, CV_32FC1, device_);
  ours.upload(hostMatView(values));

  cv::UMat u = toUMat(ours);  // OpenCV's queue waits for our upload
  EXPECT_EQ(u.handle(cv::ACCESS_READ), ours.getOpenCLBuffer().buffer) << "the same cl_mem: no copy";
  EXPECT_EQ(u.rows, rows);
  EXPECT_EQ(u.cols, cols);
  cv::UMat scaled;
  cv::multiply(u, cv::Scalar(2.0), scaled);
  const cv::Mat scaledHost = scaled.getMat(cv::ACCESS_READ);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ASSERT_EQ(scaledHost.at<float>(r, c), 2.0f * values.at<float>(r, c));

  // OpenCV writes into our memory; the next library call is ordered after it by
  // passing OpenCV's queue.
  cv::add(u, cv::Scalar(0.5), u);
  Stream openCV = openCVStream(device_);
  HostMat back;
  ours.download(back, openCV);
  openCV.waitForCompletion();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ASSERT_EQ(*reinterpret_cast<const float*>(back.ptr({r, c})), values.at<float>(r, c) + 0.5f);
}

TEST_P(OpenCVUMat, ViewOfOursBecomesAUMatRoiOfTheSameBuffer) {
  const int rows = 12, cols = 16;
  cv::Mat values(rows, cols, CV_16UC1);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) values.at<std::uint16_t>(r, c) = static_cast<std::uint16_t>(r * 1000 + c);
  GpuMatND ours({rows, cols}, CV_16UC1, device_);
  ours.upload(hostMatView(values));
  const GpuMatND view = ours({Range(3, 9), Range(4, 13)});
  cv::UMat u = toUMat(view);
  EXPECT_EQ(u.rows, 6);
  EXPECT_EQ(u.cols, 9);
  EXPECT_EQ(u.offset, view.getOpenCLBuffer().offset);
  EXPECT_EQ(u.handle(cv::ACCESS_READ), ours.getOpenCLBuffer().buffer);
  const cv::Mat got = u.getMat(cv::ACCESS_READ);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 9; ++c) ASSERT_EQ(got.at<std::uint16_t>(r, c), values.at<std::uint16_t>(r + 3, c + 4));

  // A single row at an offset that is not on a row boundary.
  const GpuMatND row = ours({Range(5, 6), Range(3, 10)});
  cv::UMat ur = toUMat(row);
  const cv::Mat gotRow = ur.getMat(cv::ACCESS_READ);
  ASSERT_EQ(gotRow.cols, 7);
  for (int c = 0; c < 7; ++c) EXPECT_EQ(gotRow.at<std::uint16_t>(0, c), values.at<std::uint16_t>(5, c + 3));
}

TEST_P(OpenCVUMat, ImportedUMatStaysAliveAfterOpenCVDropsIt) {
  cv::Mat expected(64, 64, CV_8UC4, cv::Scalar(1, 2, 3, 4));
  GpuMatND g;
  {
    cv::UMat u;
    expected.copyTo(u);
    g = fromUMat(u, device_);
  }
  // OpenCV recycles released buffers for same-size UMats; ours must not be among them.
  std::vector<cv::UMat> others;
  for (int i = 0; i < 4; ++i) {
    others.emplace_back(64, 64, CV_8UC4);
    others.back().setTo(cv::Scalar(200, 200, 200, 200));
  }
  cv::ocl::finish();
  HostMat h;
  g.download(h);
  EXPECT_EQ(datest::packedBytes(h), matBytes(expected));
}

TEST_P(OpenCVUMat, RefusesWhatCannotBeShared) {
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)fromUMat(cv::UMat(), device_); }, "empty UMat");
  datest::expectError(ErrorCode::InvalidState, [&] { (void)toUMat(GpuMatND()); }, "empty array");
  cv::UMat u(4, 4, CV_8UC1, cv::Scalar(0));
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)fromUMat(u, ComputeDevice()); }, "invalid device");
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)fromUMat(u, device_, static_cast<cv::AccessFlag>(0)); }, "no access flags");
  GpuMatND cube({2, 3, 4}, CV_8UC1, device_);
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)toUMat(cube); }, "not effectively 2-D");
}

#if defined(DEVICEARRAY_HAS_OPENCL)
TEST_P(OpenCVUMat, ArraysOfAnotherContextAreRefusedWithAClearMessage) {
  const ComputeDevice other = deviceInAFreshContext(device_);
  ASSERT_TRUE(other.isValid());
  ASSERT_NE(other.nativeContext(), device_.nativeContext());
  GpuMatND theirs({4, 4}, CV_8UC1, other);  // OpenCV is bound to device_'s context
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)toUMat(theirs); }, "array of another context");
  cv::UMat u(4, 4, CV_8UC1, cv::Scalar(1));  // allocated in device_'s context
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)fromUMat(u, other); }, "UMat of another context");
}

TEST_P(OpenCVUMat, AdoptingOpenCVsContextRunsTheLibraryOnOpenCVsQueue) {
  // OpenCV runs in a context the library did not make (here: a fresh one, given to
  // OpenCV); deviceFromOpenCV adopts it together with OpenCV's queue.
  const ComputeDevice fresh = deviceInAFreshContext(device_);
  ASSERT_TRUE(fresh.isValid());
  cv::ocl::OpenCLExecutionContextScope bindFresh(openCVExecutionContext(fresh));
  const ComputeDevice adopted = deviceFromOpenCV();
  EXPECT_EQ(adopted.nativeContext(), cv::ocl::Context::getDefault().ptr());
  EXPECT_EQ(adopted.nativeStreamHandle(), cv::ocl::Queue::getDefault().ptr());
  cv::Mat a(20, 30, CV_8UC1, cv::Scalar(40));
  cv::UMat u = a.getUMat(cv::ACCESS_READ);
  cv::UMat doubled;
  cv::add(u, u, doubled);
  const GpuMatND g = fromUMat(doubled, adopted, cv::ACCESS_READ);
  const GpuMatND copy = g.clone();  // on OpenCV's queue, which the library adopted
  HostMat h;
  copy.download(h);
  EXPECT_EQ(datest::packedBytes(h), std::vector<std::uint8_t>(600, 80));
  // And back: one of ours in OpenCV's context feeds an OpenCV operation.
  cv::UMat viaOpenCV = toUMat(copy);
  cv::UMat plusOne;
  cv::add(viaOpenCV, cv::Scalar(1), plusOne);
  const cv::Mat result = plusOne.getMat(cv::ACCESS_READ);
  EXPECT_EQ(cv::countNonZero(result != 81), 0);
}
#endif  // DEVICEARRAY_HAS_OPENCL

DATEST_INSTANTIATE_OVER_DEVICES(OpenCVUMat);

}  // namespace

#else  // DEVICEARRAY_HAS_OPENCV

TEST(OpenCV, Interop) { GTEST_SKIP() << "devicearray was built without OpenCV (find_package(OpenCV) failed)"; }

#endif

// Uses the installed library as a user would: the default device, a round trip of a
// host array, and (when the installed library was built with OpenCV) a cv::Mat view.
// Exit status 0 only when every value came back.
#include <devicearray/devicearray.hpp>
#if defined(DEVICEARRAY_HAS_OPENCV)
#include <devicearray/opencv.hpp>
#endif

#include <cstdio>
#include <vector>

namespace da = devicearray;

int main() {
  const da::ComputeDevice device = da::ComputeDevice::defaultDevice();
  std::vector<float> values(6 * 5);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i);
  const int type = da::makeType(da::Depth::F32, 1);
  da::GpuMatND gpu({6, 5}, type, device);
  gpu.upload(da::HostMat({6, 5}, type, values.data()));
  std::vector<float> back(values.size(), -1.0f);
  da::HostMat out({6, 5}, type, back.data());
  gpu.download(out);
  if (back != values) {
    std::fprintf(stderr, "consumer: the round trip on %s changed the values\n", device.toString().c_str());
    return 1;
  }
#if defined(DEVICEARRAY_HAS_OPENCV)
  cv::Mat image(6, 5, CV_32FC1, values.data());
  da::GpuMatND fromCv({6, 5}, type, device);
  fromCv.upload(da::hostMatView(image));
  std::vector<float> viaCv(values.size(), -1.0f);
  da::HostMat viaCvOut({6, 5}, type, viaCv.data());
  fromCv.download(viaCvOut);
  if (viaCv != values) {
    std::fprintf(stderr, "consumer: the cv::Mat round trip changed the values\n");
    return 1;
  }
  std::printf("consumer: OpenCV interop ok\n");
#endif
  std::printf("consumer: round trip ok on %s\n", device.toString().c_str());
  return 0;
}

// Frame2D: a colour image on one device, stored as 8-bit codes in their colour space.
#include "pointcloud/pointcloud_internal.hpp"

namespace devicearray {

namespace pc = detail::pc;

Frame2D::Frame2D(DeviceArray<ColorRGBA> image) {
  constexpr const char* fn = "Frame2D::Frame2D";
  if (image.isEmpty()) pc::raise(ErrorCode::InvalidArgument, fn, "the image array is empty");
  if (!image.isOrganized())
    pc::raise(ErrorCode::InvalidArgument, fn, "the image array is unorganized; a Frame2D needs an H x W array");
  image_ = std::move(image);
}

Frame2D Frame2D::fromHost(const HostImage& image, const ComputeDevice& device) {
  constexpr const char* fn = "Frame2D::fromHost";
  image.validate();
  if (image.empty()) pc::raise(ErrorCode::InvalidArgument, fn, "the image is empty");
  const std::size_t n = static_cast<std::size_t>(image.height) * static_cast<std::size_t>(image.width);
  std::vector<ColorRGBA_SRGB> pixels(n);
  const auto to8 = [&](int y, int x, int c) -> std::uint8_t {
    const unsigned v = image.sample(y, x, c);
    return static_cast<std::uint8_t>(image.bitDepth == 16 ? (v * 255u + 32767u) / 65535u : v);
  };
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      ColorRGBA_SRGB& p = pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) +
                                 static_cast<std::size_t>(x)];
      if (image.channels == 1) {
        p.r = p.g = p.b = to8(y, x, 0);
        p.a = 255;
      } else {
        p.r = to8(y, x, 0);
        p.g = to8(y, x, 1);
        p.b = to8(y, x, 2);
        p.a = image.channels == 4 ? to8(y, x, 3) : 255;
      }
    }
  return fromHost(pixels.data(), image.height, image.width, device);
}

ComputeDevice Frame2D::device() const {
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, "Frame2D::device", "the frame is empty");
  return image_.device();
}

const DeviceArray<ColorRGBA>& Frame2D::requireImage(const char* fn) const {
  if (isEmpty()) pc::raise(ErrorCode::InvalidState, fn, "the frame is empty");
  return image_;
}

void Frame2D::checkDestination(bool valid, int height, int width, bool organized, const ComputeDevice& device) const {
  constexpr const char* fn = "Frame2D::imageDeviceArray";
  if (!valid) pc::raise(ErrorCode::InvalidState, fn, "the destination view is empty or its array is gone");
  if (!organized || height != image_.height() || width != image_.width())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the destination is " + std::to_string(height) + "x" + std::to_string(width) +
                  (organized ? "" : " (unorganized)") + " but the frame is " + std::to_string(image_.height()) + "x" +
                  std::to_string(image_.width()));
  if (device != image_.device())
    pc::raise(ErrorCode::InvalidArgument, fn,
              "the destination lives on " + device.toString() + " but the frame on " + image_.device().toString());
}

}  // namespace devicearray

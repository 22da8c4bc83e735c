// libFuzzer target: readXyz on arbitrary bytes, each input written to a file on
// tmpfs first.
//
// Invariants beyond "no crash, no sanitizer report, only Error thrown": an accepted
// cloud passes validate(), every point is finite or missing, colours are opaque, and
// writing it and reading it back gives the same cloud bit for bit (the file holds no
// grid: the original's is given back through the read options).
#include "devicearray/io.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string in = dafuzz::tempPath("in", ".xyz");
  static const std::string out = dafuzz::tempPath("out", ".xyz");
  static const devicearray::PointCloudReadOptions options = dafuzz::quietReadOptions();
  return dafuzz::fuzzFileReader(
      data, size, in, [](const std::string& path) { return devicearray::readXyz(path, options); },
      [](const devicearray::HostPointCloud& cloud) {
        for (std::size_t i = 3; i < cloud.rgba.size(); i += 4) DAFUZZ_CHECK(cloud.rgba[i] == 255);
        devicearray::writeXyz(out, cloud);
        devicearray::PointCloudReadOptions grid = options;
        grid.height = cloud.height;
        grid.width = cloud.width;
        dafuzz::checkSameCloud(cloud, devicearray::readXyz(out, grid));
      });
}

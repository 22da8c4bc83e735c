// libFuzzer target: readPcd on arbitrary bytes (ascii, binary and LZF-compressed
// bodies), each input written to a file on tmpfs first.
//
// Invariants beyond "no crash, no sanitizer report, only Error thrown": an accepted
// cloud passes validate(), every point is finite or missing, and writing it in each
// DATA encoding (binary_compressed exercises the LZF compressor) and reading it back
// gives the same cloud bit for bit.
#include "devicearray/io.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string in = dafuzz::tempPath("in", ".pcd");
  static const std::string out = dafuzz::tempPath("out", ".pcd");
  static const devicearray::PointCloudReadOptions options = dafuzz::quietReadOptions();
  return dafuzz::fuzzFileReader(
      data, size, in, [](const std::string& path) { return devicearray::readPcd(path, options); },
      [](const devicearray::HostPointCloud& cloud) {
        for (auto format : {devicearray::PcdFormat::ascii, devicearray::PcdFormat::binary,
                            devicearray::PcdFormat::binaryCompressed}) {
          devicearray::writePcd(out, cloud, format);
          dafuzz::checkSameCloud(cloud, devicearray::readPcd(out, options));
        }
      });
}

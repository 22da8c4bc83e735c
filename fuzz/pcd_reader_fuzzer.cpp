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
  dafuzz::writeInput(in, data, size);
  const devicearray::PointCloudReadOptions options = dafuzz::quietReadOptions();
  devicearray::HostPointCloud cloud;
  try {
    cloud = devicearray::readPcd(in, options);
  } catch (const devicearray::Error&) {
    return 0;
  }
  dafuzz::checkReadCloud(cloud);
  if (cloud.size() == 0) return 0;
  for (auto format : {devicearray::PcdFormat::ascii, devicearray::PcdFormat::binary,
                      devicearray::PcdFormat::binaryCompressed}) {
    devicearray::writePcd(out, cloud, format);
    dafuzz::checkSameCloud(cloud, devicearray::readPcd(out, options));
  }
  return 0;
}

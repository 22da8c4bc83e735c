// libFuzzer target: readPly on arbitrary bytes. io.hpp reads files only, so each
// input is written to a file on tmpfs (/dev/shm) first.
//
// Invariants beyond "no crash, no sanitizer report, only Error thrown": an accepted
// cloud passes validate(), every point is either finite or missing (NaN in x, y and z;
// never inf), and writing it (binary little-endian) and reading it back gives the same
// cloud bit for bit.
#include "devicearray/io.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string in = dafuzz::tempPath("in", ".ply");
  static const std::string out = dafuzz::tempPath("out", ".ply");
  static const devicearray::PointCloudReadOptions options = dafuzz::quietReadOptions();
  return dafuzz::fuzzFileReader(
      data, size, in, [](const std::string& path) { return devicearray::readPly(path, options); },
      [](const devicearray::HostPointCloud& cloud) {
        devicearray::writePly(out, cloud, devicearray::PlyFormat::binaryLittleEndian);
        dafuzz::checkSameCloud(cloud, devicearray::readPly(out, options));
      });
}

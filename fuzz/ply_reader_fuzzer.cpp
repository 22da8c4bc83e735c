// libFuzzer target: readPly on arbitrary bytes. io.hpp reads files only, so each
// input is written to a file on tmpfs (/dev/shm) first.
//
// Invariants beyond "no crash, no sanitizer report, only Error thrown": an accepted
// cloud passes validate(), every point is either finite or missing (NaN in x, y and z;
// never inf), and writing it (binary little-endian) and reading it back gives the same
// cloud bit for bit.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "devicearray/io.hpp"
#include "fuzz_common.hpp"

namespace {

std::string tempPath(const char* tag) {
  const char* dir = std::getenv("DAFUZZ_TMPDIR");
  return std::string(dir != nullptr ? dir : "/dev/shm") + "/devicearray-fuzz-" + tag + "-" +
         std::to_string(static_cast<long>(getpid())) + ".ply";
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string in = tempPath("in");
  static const std::string out = tempPath("out");
  {
    std::FILE* f = std::fopen(in.c_str(), "wb");
    if (f == nullptr) dafuzz::invariantBroken("cannot create the temporary input file (set DAFUZZ_TMPDIR)");
    if (size > 0 && std::fwrite(data, 1, size, f) != size) dafuzz::invariantBroken("short write to tmpfs");
    std::fclose(f);
  }
  devicearray::HostPointCloud cloud;
  try {
    cloud = devicearray::readPly(in);
  } catch (const devicearray::Error&) {
    return 0;
  }
  cloud.validate();  // throws (uncaught: a finding) if the reader produced an invalid cloud
  if (cloud.size() == 0) return 0;
  for (std::size_t i = 0; i < cloud.size(); ++i)
    DAFUZZ_CHECK(cloud.isValid(i) || (std::isnan(cloud.xyz[3 * i]) && std::isnan(cloud.xyz[3 * i + 1]) &&
                                      std::isnan(cloud.xyz[3 * i + 2])));
  devicearray::writePly(out, cloud, devicearray::PlyFormat::binaryLittleEndian);
  const devicearray::HostPointCloud back = devicearray::readPly(out);
  DAFUZZ_CHECK(back.height == cloud.height && back.width == cloud.width);
  DAFUZZ_CHECK(sameBits(back.xyz, cloud.xyz));
  DAFUZZ_CHECK(sameBits(back.rgba, cloud.rgba));
  DAFUZZ_CHECK(sameBits(back.snr, cloud.snr));
  DAFUZZ_CHECK(sameBits(back.normals, cloud.normals));
  return 0;
}

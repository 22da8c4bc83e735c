// Hostile input and safe output of the host file functions (readPly, readPng, writePly,
// writePng): pipes and devices are read only as far as the header says, headers parse in
// linear time, and a write never damages what is already at the path, whether it fails,
// is interrupted or targets a device node or a FIFO.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "devicearray/io.hpp"
#include "interrupted_write.hpp"
#include "file_test_support.hpp"
#include "scratch_dir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;
using devicearray::PlyFormat;

namespace {

fs::path tempDir() { return datest::scratchDir(); }

class RemoveTempDir : public ::testing::Environment {
 public:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }  // pipe writers below see EPIPE instead
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tempDir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

/// The error message of `fn`, which must throw devicearray::Error with `code`.
template <class Fn>
std::string errorOf(ErrorCode code, Fn&& fn) {
  try {
    fn();
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected devicearray::Error(" << devicearray::toString(code) << ")";
  return {};
}

/// A fresh, empty directory for one test.
fs::path freshDir(const std::string& name) {
  const fs::path d = tempDir() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

HostPointCloud smallCloud(std::size_t points) {
  HostPointCloud c;
  c.xyz.resize(3 * points);
  for (std::size_t i = 0; i < c.xyz.size(); ++i) c.xyz[i] = 0.25f * static_cast<float>(i % 1000) + 1.0f / 3.0f;
  return c;
}

/// Feeds `prefix`, then up to `junkLimit` bytes of `junk` repeated, into the FIFO at `path`
/// on its own thread; bytesWritten() tells how much the reader took before closing.
class FifoFeeder {
 public:
  FifoFeeder(const fs::path& path, std::string prefix, std::string junk, std::size_t junkLimit)
      : thread_([this, path, prefix = std::move(prefix), junk = std::move(junk), junkLimit] {
          const int fd = ::open(path.c_str(), O_WRONLY);
          if (fd < 0) return;
          std::string chunk = prefix;
          std::size_t junkLeft = junkLimit;
          while (true) {
            while (junkLeft > 0 && chunk.size() < (1u << 16) && !junk.empty()) {
              const std::size_t k = std::min(junk.size(), junkLeft);
              chunk.append(junk, 0, k);
              junkLeft -= k;
            }
            if (chunk.empty()) break;
            const ssize_t w = ::write(fd, chunk.data(), chunk.size());
            if (w <= 0) break;  // EPIPE: the reader closed its end
            written_ += static_cast<std::size_t>(w);
            chunk.erase(0, static_cast<std::size_t>(w));
          }
          ::close(fd);
        }) {}
  ~FifoFeeder() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::size_t bytesWritten() {
    join();
    return written_;
  }

 private:
  std::atomic<std::size_t> written_{0};
  std::thread thread_;
};

fs::path makeFifo(const std::string& name) {
  const fs::path p = tempDir() / name;
  fs::remove(p);
  if (::mkfifo(p.c_str(), 0600) != 0) ADD_FAILURE() << "mkfifo " << p << ": " << std::strerror(errno);
  return p;
}

const std::string kTwoVertexHeader =
    "ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
    "property float z\nend_header\n";

std::string twoVertexBody() {
  const float v[6] = {1, 2, 3, 4, 5, 6};
  return std::string(reinterpret_cast<const char*>(v), sizeof v);
}

// ------------------------------------------------------------ reading -------

TEST(HostileInput, DevZeroIsRefusedAtOnce) {
  if (!fs::is_character_file("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  // In a child with limits on time and (outside sanitizer builds, which reserve huge
  // address ranges) memory: a reader that read to the end would never return.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(5);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    const rlimit fourGiB{rlim_t{4} << 30, rlim_t{4} << 30};
    ::setrlimit(RLIMIT_AS, &fourGiB);
#endif
    try {
      devicearray::readPly("/dev/zero");
    } catch (const devicearray::Error& e) {
      ::_exit(std::string(e.what()).find("not a PLY file") != std::string::npos ? 0 : 3);
    }
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " (the 5 s alarm?)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [] { devicearray::readPly("/dev/zero"); });
  EXPECT_NE(msg.find("begins with '\\x00\\x00\\x00\\x00'"), std::string::npos) << msg;
  if (devicearray::pngSupported())
    errorOf(ErrorCode::InvalidArgument, [] { devicearray::readPng("/dev/zero"); });
}

TEST(HostileInput, ANonPlyStreamIsReadNoFurtherThanItsFirstBytes) {
  const fs::path fifo = makeFifo("zeros.fifo");
  FifoFeeder feeder(fifo, "", std::string(4096, '\0'), std::size_t{64} << 20);
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPly(fifo.string()); });
  EXPECT_NE(msg.find("not a PLY file"), std::string::npos) << msg;
  // One 64 KiB read plus what the pipe buffers: nowhere near the 64 MiB on offer.
  EXPECT_LT(feeder.bytesWritten(), std::size_t{4} << 20);
}

TEST(HostileInput, AStreamIsReadNoFurtherThanTheHeaderDeclares) {
  const fs::path fifo = makeFifo("trailing.fifo");
  FifoFeeder feeder(fifo, kTwoVertexHeader + twoVertexBody(), std::string(4096, 'j'), std::size_t{64} << 20);
  // Bytes after the last record are ignored, as Open3D and plyfile do, and not read.
  const HostPointCloud c = devicearray::readPly(fifo.string());
  EXPECT_EQ(c.size(), 2u);
  EXPECT_LT(feeder.bytesWritten(), std::size_t{4} << 20);
}

TEST(HostileInput, APcdStreamIsReadOnlyAsFarAsItsPointsArrive) {
  // 10^8 points declared, 1 MiB delivered: the cloud grows with what arrives.
  const std::string header = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 100000000\nDATA ";
  {
    const fs::path fifo = makeFifo("points.fifo");
    FifoFeeder feeder(fifo, header + "binary\n", std::string(4096, '\x01'), std::size_t{1} << 20);
    const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPcd(fifo.string()); });
    EXPECT_NE(msg.find("ends inside point"), std::string::npos) << msg;
  }
  {
    // binary_compressed declaring 1.2 GB of data in 4 GiB of LZF: read in steps as it arrives.
    const fs::path fifo = makeFifo("compressed.fifo");
    const std::string sizes("\xff\xff\xff\xff\x00\x8c\x86\x47", 8);  // 4294967295, 1200000000
    FifoFeeder feeder(fifo, header + "binary_compressed\n" + sizes, std::string(4096, '\x1f'), std::size_t{1} << 20);
    const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPcd(fifo.string()); });
    EXPECT_NE(msg.find("ends inside the 4294967295 bytes of compressed data"), std::string::npos) << msg;
  }
}

TEST(HostileInput, AStreamGivesTheSameCloudAsAFile) {
  HostPointCloud c = HostPointCloud::organized(30, 40, true, true, true);
  for (std::size_t i = 0; i < c.xyz.size(); ++i) c.xyz[i] = static_cast<float>(i) * 0.5f;
  for (PlyFormat format : {PlyFormat::ascii, PlyFormat::binaryBigEndian}) {
    const fs::path file = tempDir() / "stream_source.ply";
    devicearray::writePly(file.string(), c, format);
    const fs::path fifo = makeFifo("valid.fifo");
    FifoFeeder feeder(fifo, datest::readFile(file), "", 0);
    const HostPointCloud fromPipe = devicearray::readPly(fifo.string());
    const HostPointCloud fromFile = devicearray::readPly(file.string());
    EXPECT_EQ(fromPipe.height, 30);
    EXPECT_EQ(fromPipe.width, 40);
    EXPECT_EQ(fromPipe.xyz, fromFile.xyz);
    EXPECT_EQ(fromPipe.rgba, fromFile.rgba);
    EXPECT_EQ(fromPipe.snr, fromFile.snr);
    EXPECT_EQ(fromPipe.normals.size(), fromFile.normals.size());
  }
}

TEST(HostileInput, AStreamDeclaringAbsurdCountsAllocatesOnlyWhatArrives) {
  // 10^12 vertices declared (12 TB), two delivered: the reader must not allocate for
  // the declaration (that would be OutOfMemory or a crash), only fail at the end of data.
  const fs::path fifo = makeFifo("absurd.fifo");
  std::string header = kTwoVertexHeader;
  header.replace(header.find("vertex 2"), 8, "vertex 1000000000000");
  FifoFeeder feeder(fifo, header + twoVertexBody(), "", 0);
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPly(fifo.string()); });
  EXPECT_NE(msg.find("the file ends inside 'vertex' record 2 of 1000000000000"), std::string::npos) << msg;
}

TEST(HostileInput, HeaderSizeIsBounded) {
  const fs::path path = tempDir() / "huge_header.ply";
  std::string header = "ply\nformat ascii 1.0\n";
  const std::string comment = "comment " + std::string(100, 'c') + "\n";
  while (header.size() <= (17u << 20)) header += comment;
  datest::writeFile(path, header + "end_header\n");
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPly(path.string()); });
  EXPECT_NE(msg.find("no 'end_header' within the first 16 MiB"), std::string::npos) << msg;
}

double secondsToRead(const fs::path& path, HostPointCloud* out = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  HostPointCloud c = devicearray::readPly(path.string());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out) *out = std::move(c);
  return s;
}

TEST(HostileInput, HeaderParsingIsLinearInTheNumberOfProperties) {
  // 200 000 properties took minutes when each was compared with all before it.
  constexpr int kExtra = 200000;
  std::string header = "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n";
  for (int i = 0; i < kExtra; ++i) header += "property float p" + std::to_string(i) + "\n";
  header += "property float y\nproperty float z\nend_header\n";
  std::vector<float> record(kExtra + 3, 1.0f);
  record[0] = 7.0f;
  record[kExtra + 1] = 8.0f;
  record[kExtra + 2] = 9.0f;
  const fs::path path = tempDir() / "many_properties.ply";
  datest::writeFile(path, header + std::string(reinterpret_cast<const char*>(record.data()), record.size() * sizeof(float)));
  HostPointCloud c;
  // Quadratic parsing took minutes; the bound leaves room for a loaded machine and the
  // sanitizers' slowdown (a linear read takes a few seconds at most, even under ASan).
  constexpr double kLinearBoundSeconds = 30.0;
  EXPECT_LT(secondsToRead(path, &c), kLinearBoundSeconds);
  EXPECT_EQ(c.xyz, (std::vector<float>{7.0f, 8.0f, 9.0f}));

  // The same for elements (each was compared with all earlier ones too).
  std::string elements = "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n";
  for (int i = 0; i < kExtra; ++i) elements += "element e" + std::to_string(i) + " 0\nproperty uchar v\n";
  const fs::path manyElements = tempDir() / "many_elements.ply";
  datest::writeFile(manyElements, elements + "end_header\n");
  EXPECT_LT(secondsToRead(manyElements), kLinearBoundSeconds);
}

TEST(HostileInput, NulBytesInAHeaderAreEscapedInTheMessage) {
  const fs::path path = tempDir() / "nul.ply";
  static const char kHeader[] = "ply\nformat ascii 1.0\nelement vertex 1\nproperty flo\0at x\nend_header\n";
  datest::writeFile(path, std::string(kHeader, sizeof kHeader - 1));
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPly(path.string()); });
  EXPECT_EQ(msg.find('\0'), std::string::npos);
  EXPECT_NE(msg.find("flo\\x00at"), std::string::npos) << msg;
}

TEST(HostileInput, PngDeclaringMoreThanTheFileCanHoldIsRefusedBeforeAllocating) {
  if (!devicearray::pngSupported()) GTEST_SKIP() << "this build has no libpng";
  const fs::path path = tempDir() / "huge.png";
  devicearray::writePng(path.string(), devicearray::HostImage(2, 2, 3, 8));
  std::string png = datest::readFile(path);
  // IHDR: length(4) "IHDR"(4) width(4) height(4) ... CRC(4) after the 8-byte signature.
  ASSERT_EQ(png.substr(12, 4), "IHDR");
  const auto be32 = [&](std::size_t at, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) png[at + static_cast<std::size_t>(k)] = static_cast<char>(v >> (24 - 8 * k));
  };
  be32(16, 1000000);  // 1e6 x 1e6 RGB: 3 TB of samples in a file of ~80 bytes
  be32(20, 1000000);
  std::uint32_t crc = 0xFFFFFFFFu;  // CRC-32 of "IHDR" + the 13 data bytes
  for (std::size_t i = 12; i < 12 + 17; ++i) {
    crc ^= static_cast<unsigned char>(png[i]);
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  be32(29, crc ^ 0xFFFFFFFFu);
  datest::writeFile(path, png);
  const std::string msg = errorOf(ErrorCode::InvalidArgument, [&] { devicearray::readPng(path.string()); });
  EXPECT_NE(msg.find("1000000 x 1000000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("can hold"), std::string::npos) << msg;
}

// ------------------------------------------------------------ writing -------

TEST(SafeWrite, ReplacingAFileKeepsItsPermissionsAndLeavesNoTemporary) {
  const fs::path dir = freshDir("perm");
  const fs::path path = dir / "cloud.ply";
  datest::writeFile(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  devicearray::writePly(path.string(), smallCloud(4));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(devicearray::readPly(path.string()).size(), 4u);
  EXPECT_TRUE(datest::temporariesIn(dir).empty());

  // A new file is created like any other: 0666 less the umask.
  const mode_t mask = ::umask(022);
  ::umask(mask);
  const fs::path fresh = dir / "new.ply";
  devicearray::writePly(fresh.string(), smallCloud(4));
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u & ~mask);
}

TEST(SafeWrite, ASymlinkStaysAndItsTargetIsReplaced) {
  const fs::path dir = freshDir("link");
  datest::writeFile(dir / "target.ply", "old");
  fs::create_symlink("target.ply", dir / "link.ply");
  devicearray::writePly((dir / "link.ply").string(), smallCloud(2));
  EXPECT_TRUE(fs::is_symlink(dir / "link.ply"));
  EXPECT_EQ(devicearray::readPly((dir / "target.ply").string()).size(), 2u);
}

/// Runs `body` in a child process whose files may not grow beyond `limit` bytes;
/// returns the child's exit status (body's return value).
template <class Body>
int inChildWithFileSizeLimit(rlim_t limit, Body&& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
    const rlimit r{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &r);
    ::alarm(20);
    ::_exit(body());
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(SafeWrite, AFailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const fs::path dir = freshDir("failed");
  const fs::path ply = dir / "cloud.ply", png = dir / "image.png";
  datest::writeFile(ply, "the old cloud");
  datest::writeFile(png, "the old image");
  const int plyStatus = inChildWithFileSizeLimit(4096, [&] {
    try {
      devicearray::writePly(ply.string(), smallCloud(100000));
    } catch (const devicearray::Error& e) {
      return std::string(e.what()).find("cloud.ply") != std::string::npos ? 0 : 2;
    }
    return 1;
  });
  EXPECT_EQ(plyStatus, 0) << "1: the write did not fail; 2: the message does not name the file";
  EXPECT_EQ(datest::readFile(ply), "the old cloud");
  if (devicearray::pngSupported()) {
    const int pngStatus = inChildWithFileSizeLimit(4096, [&] {
      devicearray::HostImage noise(256, 256, 3, 8);
      std::uint32_t x = 2463534242u;  // xorshift32: noise does not compress below the limit
      for (auto& v : noise.data) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v = static_cast<std::uint8_t>(x >> 24);
      }
      try {
        devicearray::writePng(png.string(), noise);
      } catch (const devicearray::Error&) {
        return 0;
      }
      return 1;
    });
    EXPECT_EQ(pngStatus, 0);
    EXPECT_EQ(datest::readFile(png), "the old image");
  }
  EXPECT_TRUE(datest::temporariesIn(dir).empty()) << datest::temporariesIn(dir)[0];
}

TEST(SafeWrite, AnInterruptedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const fs::path dir = freshDir("interrupted");
  const fs::path path = dir / "cloud.ply";
  datest::writeFile(path, "the old cloud");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct sigaction action {};
    action.sa_handler = [](int) {
      devicearray::removeUnfinishedOutputFiles();
      ::_exit(130);
    };
    ::sigaction(SIGINT, &action, nullptr);
    ::alarm(30);
    const HostPointCloud big = smallCloud(3000000);  // ~90 MB of ascii: long enough to be caught
    try {
      devicearray::writePly(path.string(), big, PlyFormat::ascii);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  // Interrupt as soon as the temporary exists, i.e. while the write is under way.
  const datest::Interruption run = datest::interruptOnceWriting(pid, dir, std::chrono::seconds(30));
  ASSERT_FALSE(run.endedFirst) << "the write ended (status " << run.status << ") before its temporary was seen";
  ASSERT_TRUE(run.sent) << "no temporary appeared within 30 s";
  const int status = run.status;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << "0: the write finished before the signal";
  EXPECT_EQ(datest::readFile(path), "the old cloud");
  EXPECT_TRUE(datest::temporariesIn(dir).empty()) << datest::temporariesIn(dir)[0];
}

TEST(SafeWrite, AFifoIsWrittenInPlaceAndStaysAFifo) {
  const fs::path fifo = makeFifo("out.fifo");
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  devicearray::writePly(fifo.string(), smallCloud(1000));
  reader.join();
  EXPECT_TRUE(fs::is_fifo(fifo));
  const fs::path file = tempDir() / "fifo_reference.ply";
  devicearray::writePly(file.string(), smallCloud(1000));
  EXPECT_EQ(received, datest::readFile(file));
  EXPECT_TRUE(datest::temporariesIn(tempDir()).empty());
}

TEST(SafeWrite, AFailingDeviceNodeIsNeverRemoved) {
  // A copy of /dev/full (char 1:7: every write fails with ENOSPC), made with mknod.
  const fs::path dir = freshDir("device");
  const fs::path node = dir / "full";
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "mknod needs privileges: " << std::strerror(errno);
  const int fd = ::open(node.c_str(), O_WRONLY);
  const bool isFull = fd >= 0 && ::write(fd, "x", 1) < 0 && errno == ENOSPC;
  if (fd >= 0) ::close(fd);
  if (!isFull) GTEST_SKIP() << "char 1:7 is not /dev/full here (nodev mount?)";
  const std::string msg =
      errorOf(ErrorCode::InvalidArgument, [&] { devicearray::writePly(node.string(), smallCloud(100000)); });
  EXPECT_NE(msg.find("No space left"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_character_file(node)) << "the device node was removed or replaced";
  if (devicearray::pngSupported()) {
    errorOf(ErrorCode::InvalidArgument, [&] { devicearray::writePng(node.string(), devicearray::HostImage(64, 64, 3)); });
    EXPECT_TRUE(fs::is_character_file(node));
  }
  EXPECT_TRUE(datest::temporariesIn(dir).empty());
}

// ---------------------------------------------------- non-finite points -----

TEST(NonFinitePoints, AreWrittenAsMissingAndReadBackAsMissing) {
  const float inf = std::numeric_limits<float>::infinity();
  HostPointCloud c = HostPointCloud::organized(1, 4);
  c.xyz = {1, 2, 3, inf, 2, 3, 1, -inf, 3, 4, 5, 6};
  c.xyz[8] = std::numeric_limits<float>::quiet_NaN();  // point 2: -inf and NaN
  for (PlyFormat format : {PlyFormat::ascii, PlyFormat::binaryLittleEndian, PlyFormat::binaryBigEndian}) {
    const fs::path path = tempDir() / "inf.ply";
    devicearray::writePly(path.string(), c, format);
    const std::string text = datest::readFile(path);
    if (format == PlyFormat::ascii) EXPECT_EQ(text.find("inf", text.find("end_header")), std::string::npos) << text;
    const HostPointCloud back = devicearray::readPly(path.string());
    ASSERT_EQ(back.size(), 4u);
    EXPECT_EQ(back.validCount(), 2u);
    for (std::size_t i : {1u, 2u})
      for (int k = 0; k < 3; ++k) EXPECT_TRUE(std::isnan(back.xyz[3 * i + k])) << i << "," << k;
    EXPECT_EQ(back.xyz[9], 4.0f);
  }
  // A file that holds inf (written by another tool) reads the same way.
  const fs::path other = tempDir() / "inf_ascii.ply";
  datest::writeFile(other, "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
                   "end_header\n1 2 3\ninf 5 -inf\n");
  const HostPointCloud read = devicearray::readPly(other.string());
  EXPECT_EQ(read.validCount(), 1u);
  EXPECT_TRUE(std::isnan(read.xyz[3]) && std::isnan(read.xyz[4]) && std::isnan(read.xyz[5]));
}

}  // namespace

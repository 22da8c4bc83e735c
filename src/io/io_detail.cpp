#include "io/io_detail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "devicearray/output_files.hpp"

namespace devicearray::io_detail {

std::string systemErrorText(int err) {
  // strerror is not thread-safe; the GNU/XSI strerror_r variants differ, so copy
  // from the thread-safe strerrordesc_np where glibc has it and fall back to the code.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* text = strerrordesc_np(err)) return text;
#endif
  return "system error " + std::to_string(err);
}

std::string printable(std::string_view text, std::size_t maxLength) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const bool cut = text.size() > maxLength;
  if (cut) text = text.substr(0, maxLength);
  out.reserve(text.size());
  const auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (a non-ASCII file name) stays as it is.
    const std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool utf8 = len != 0 && i + len <= text.size();
    for (std::size_t k = 1; utf8 && k < len; ++k) utf8 = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (utf8) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      escape(c);
      ++i;
    }
  }
  if (cut) out += "...";
  return out;
}

std::string byteSizeText(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, v < 10 ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  return text;
}

void File::open(const char* function, const std::string& path, const char* mode) {
  if (path.empty()) invalid(std::string(function) + ": the file path is empty");
  errno = 0;
  f_ = std::fopen(path.c_str(), mode);
  if (!f_) {
    const bool writing = mode[0] == 'w';
    invalid(std::string(function) + ": cannot open '" + printable(path) + "' for " +
            (writing ? "writing" : "reading") + ": " + systemErrorText(errno));
  }
}

std::optional<std::uint64_t> File::regularFileSize() const {
  struct stat st {};
  if (f_ == nullptr || ::fstat(::fileno(f_), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

// ----------------------------------------------------- temporary outputs ---

namespace {

// The temporaries of writes in progress, for removeUnfinishedOutputFiles(), which may
// run in a signal handler: fixed storage, lock-free atomics, no allocation.
// state: 0 free, 1 claimed (path being written), 2 armed (path complete).
struct TempSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
constexpr int kTempSlots = 32;
TempSlot gTempSlots[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int claimTempSlot() noexcept {
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (gTempSlots[i].state.compare_exchange_strong(expected, 1)) return i;
  }
  return -1;  // more concurrent writes than slots: that temporary is simply not registered
}

void armTempSlot(int slot, const std::string& path) noexcept {
  if (slot < 0) return;
  TempSlot& s = gTempSlots[slot];
  s.state.store(1);
  if (path.size() >= sizeof s.path) return;  // stays unarmed: a handler must not see half a path
  std::memcpy(s.path, path.c_str(), path.size() + 1);
  s.state.store(2);
}

void releaseTempSlot(int& slot) noexcept {
  if (slot >= 0) gTempSlots[slot].state.store(0);
  slot = -1;
}

/// Six characters that make a temporary's name unlikely to be taken.
std::string randomSuffix() {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t z = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
                    static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    (counter.fetch_add(1) << 40);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(6, 'X');
  for (char& c : s) {
    c = kAlphabet[z % 62];
    z /= 62;
  }
  return s;
}

}  // namespace

OutputFile::OutputFile(const char* function, std::string path) : function_(function), path_(std::move(path)) {
  const std::string fn = function_ + ": ";
  if (path_.empty()) invalid(fn + "the file path is empty");
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  struct stat lst {};
  const bool isLink = ::lstat(path_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  if ((exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || (isLink && !exists)) {
    // A device, a FIFO or a socket (or a dangling link): write through, never rename or remove.
    errno = 0;
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) invalid(fn + "cannot open '" + printable(path_) + "' for writing: " + systemErrorText(errno));
    return;
  }
  if (exists && S_ISDIR(st.st_mode))
    invalid(fn + "cannot open '" + printable(path_) + "' for writing: " + systemErrorText(EISDIR));
  // A rename would replace a file we may not write (as mv does); refuse as open would.
  if (exists && ::access(path_.c_str(), W_OK) != 0)
    invalid(fn + "cannot open '" + printable(path_) + "' for writing: " + systemErrorText(errno));
  target_ = path_;
  if (isLink) {
    // Replace the file the link points to, and keep the link.
    if (char* real = ::realpath(path_.c_str(), nullptr)) {
      target_ = real;
      std::free(real);
    }
  }
  const std::filesystem::path targetPath(target_);
  std::string base = targetPath.filename().string();
  if (base.empty()) invalid(fn + "'" + printable(path_) + "' names a directory, not a file");
  if (base.size() > 200) base.resize(200);  // the temporary's name must stay within NAME_MAX
  const std::filesystem::path dir = targetPath.parent_path();
  slot_ = claimTempSlot();
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp_ = (dir / ("." + base + ".tmp-" + randomSuffix())).string();
    armTempSlot(slot_, temp_);  // before the file exists, so a signal cannot miss it
    // 0666 lets the umask and default ACLs decide, as for any new file; a replaced
    // file's mode is copied below.
    fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    const int err = errno;
    temp_.clear();
    releaseTempSlot(slot_);
    if (exists)
      invalid(fn + "cannot create a temporary file in '" + printable(dir.empty() ? "." : dir.string()) +
              "' to replace '" + printable(path_) + "' safely: " + systemErrorText(err));
    invalid(fn + "cannot open '" + printable(path_) + "' for writing: " + systemErrorText(err));
  }
  if (exists) {
    // Same owner (when we may) and permissions as the file being replaced.
    if (::fchown(fd, st.st_uid, st.st_gid) != 0) { /* not permitted: keep ours */ }
    (void)::fchmod(fd, st.st_mode & 07777);
  }
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    const int err = errno;
    ::close(fd);
    abandon();
    invalid(fn + "cannot open '" + printable(path_) + "' for writing: " + systemErrorText(err));
  }
}

OutputFile::~OutputFile() { abandon(); }

void OutputFile::abandon() noexcept {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  releaseTempSlot(slot_);
}

void OutputFile::commit() {
  const std::string fn = function_ + ": '" + printable(path_) + "': ";
  std::FILE* f = f_;
  f_ = nullptr;
  errno = 0;
  const bool flushed = std::fflush(f) == 0 && !std::ferror(f);
  int err = flushed ? 0 : errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && err == 0) err = errno;
  if (!flushed || !closed) {
    abandon();
    invalid(fn + "writing the file failed: " + systemErrorText(err != 0 ? err : EIO));
  }
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    err = errno;
    abandon();
    invalid(fn + "cannot replace it with the written file: " + systemErrorText(err));
  }
  // Renamed: the temporary's name no longer exists, so nothing is left to remove.
  temp_.clear();
  releaseTempSlot(slot_);
}

}  // namespace devicearray::io_detail

namespace devicearray {

void removeUnfinishedOutputFiles() noexcept {
  // Async-signal-safe: atomics and unlink only.
  for (auto& slot : io_detail::gTempSlots)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

}  // namespace devicearray

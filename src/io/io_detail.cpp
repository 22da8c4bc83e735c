#include "io/io_detail.hpp"

#include <cerrno>
#include <cstring>

namespace devicearray::io_detail {

std::string systemErrorText(int err) {
  // strerror is not thread-safe; the GNU/XSI strerror_r variants differ, so copy
  // from the thread-safe strerrordesc_np where glibc has it and fall back to the code.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* text = strerrordesc_np(err)) return text;
#endif
  return "system error " + std::to_string(err);
}

void File::open(const char* function, const std::string& path, const char* mode) {
  if (path.empty()) invalid(std::string(function) + ": the file path is empty");
  errno = 0;
  f_ = std::fopen(path.c_str(), mode);
  if (!f_) {
    const bool writing = mode[0] == 'w';
    invalid(std::string(function) + ": cannot open '" + path + "' for " + (writing ? "writing" : "reading") +
            ": " + systemErrorText(errno));
  }
}

}  // namespace devicearray::io_detail

// HostImage and PNG files through libpng.
//
// libpng reports errors by longjmp. Jumping over C++ frames with live destructors is
// undefined, so every libpng call runs inside a small function whose frame holds only
// trivially destructible locals and that calls setjmp itself; C++ objects (the pixel
// buffer, row pointers, strings) are created before or after those calls.
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "devicearray/png.hpp"
#include "io/io_detail.hpp"

#ifdef DEVICEARRAY_HAS_PNG
#include <png.h>
#include <csetjmp>
#endif

namespace devicearray {

using io_detail::checkedMul;
using io_detail::invalid;

// --------------------------------------------------------------- HostImage ---

HostImage::HostImage(int h, int w, int c, int depth) : height(h), width(w), channels(c), bitDepth(depth) {
  if (h <= 0 || w <= 0)
    invalid("HostImage: size " + std::to_string(h) + " x " + std::to_string(w) + " must be positive");
  if (c != 1 && c != 3 && c != 4) invalid("HostImage: channels " + std::to_string(c) + " must be 1, 3 or 4");
  if (depth != 8 && depth != 16) invalid("HostImage: bitDepth " + std::to_string(depth) + " must be 8 or 16");
  std::size_t bytes = checkedMul(static_cast<std::size_t>(h), static_cast<std::size_t>(w), "HostImage: pixel count");
  bytes = checkedMul(bytes, bytesPerPixel(), "HostImage: byte count");
  try {
    data.assign(bytes, 0);
  } catch (const std::exception&) {  // bad_alloc or length_error
    io_detail::fail(ErrorCode::OutOfMemory, "HostImage: cannot allocate " + std::to_string(bytes) + " bytes for a " +
                                                std::to_string(h) + " x " + std::to_string(w) + " image");
  }
}

void HostImage::validate() const {
  const std::string fn = "HostImage::validate: ";
  if (height < 0 || width < 0)
    invalid(fn + "size " + std::to_string(height) + " x " + std::to_string(width) + " is negative");
  if (channels != 1 && channels != 3 && channels != 4)
    invalid(fn + "channels " + std::to_string(channels) + " must be 1, 3 or 4");
  if (bitDepth != 8 && bitDepth != 16) invalid(fn + "bitDepth " + std::to_string(bitDepth) + " must be 8 or 16");
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(height), static_cast<std::size_t>(width), &bytes) ||
      __builtin_mul_overflow(bytes, bytesPerPixel(), &bytes))
    invalid(fn + "size " + std::to_string(height) + " x " + std::to_string(width) + " overflows");
  if (data.size() != bytes)
    invalid(fn + "data has " + std::to_string(data.size()) + " bytes; " + std::to_string(height) + " x " +
            std::to_string(width) + " x " + std::to_string(channels) + " samples of " + std::to_string(bitDepth) +
            " bits need " + std::to_string(bytes));
}

namespace {
std::size_t sampleOffset(const HostImage& im, int y, int x, int c, const char* fn) {
  if (y < 0 || y >= im.height || x < 0 || x >= im.width || c < 0 || c >= im.channels)
    io_detail::fail(ErrorCode::OutOfRange, std::string(fn) + ": sample (" + std::to_string(y) + ", " +
                                               std::to_string(x) + ", " + std::to_string(c) + ") is outside the " +
                                               std::to_string(im.height) + " x " + std::to_string(im.width) + " x " +
                                               std::to_string(im.channels) + " image");
  return (static_cast<std::size_t>(y) * static_cast<std::size_t>(im.width) + static_cast<std::size_t>(x)) *
             im.bytesPerPixel() +
         static_cast<std::size_t>(c) * im.bytesPerSample();
}
}  // namespace

unsigned HostImage::sample(int y, int x, int c) const {
  const std::size_t o = sampleOffset(*this, y, x, c, "HostImage::sample");
  if (o + bytesPerSample() > data.size()) invalid("HostImage::sample: data is smaller than the image size says");
  if (bitDepth == 8) return data[o];
  std::uint16_t v;
  std::memcpy(&v, data.data() + o, 2);
  return v;
}

void HostImage::setSample(int y, int x, int c, unsigned value) {
  const std::size_t o = sampleOffset(*this, y, x, c, "HostImage::setSample");
  if (o + bytesPerSample() > data.size()) invalid("HostImage::setSample: data is smaller than the image size says");
  const unsigned maxValue = bitDepth == 8 ? 255u : 65535u;
  if (value > maxValue)
    invalid("HostImage::setSample: value " + std::to_string(value) + " exceeds " + std::to_string(maxValue) +
            " for a " + std::to_string(bitDepth) + "-bit image");
  if (bitDepth == 8) {
    data[o] = static_cast<std::uint8_t>(value);
  } else {
    const auto v = static_cast<std::uint16_t>(value);
    std::memcpy(data.data() + o, &v, 2);
  }
}

// --------------------------------------------------------------------- PNG ---

#ifdef DEVICEARRAY_HAS_PNG

bool pngSupported() noexcept { return true; }

namespace {

struct PngContext {
  png_structp png = nullptr;
  png_infop info = nullptr;
  bool writing = false;
  char message[256] = {};
};

extern "C" void pngErrorHandler(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof ctx->message, "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}

extern "C" void pngWarningHandler(png_structp, png_const_charp) {
  // Warnings (unknown chunks, gamma hints) do not affect the decoded samples.
}

struct PngHeaderInfo {
  png_uint_32 width = 0, height = 0;
  int channels = 0, bitDepth = 0;
  std::size_t rowBytes = 0;
  std::uint64_t storedBytes = 0;  // the samples as stored in the file (before expansion), no filter bytes
};

// zlib's deflate cannot pack more than 1032 bytes into one (a 258-byte match in 2 bits),
// so a regular file of F bytes cannot hold an image of more than about 1032 * F bytes
// of samples: anything larger is truncated or corrupt, and is refused before allocating.
constexpr std::uint64_t kDeflateMaxRatio = 1032;
// A pipe or device has no size to bound the image by: such a PNG may decode to at most
// this much.
constexpr std::uint64_t kMaxStreamedPngBytes = std::uint64_t{1} << 30;

// The functions below hold only trivial locals: see the comment at the top.

bool pngReadHeader(PngContext* ctx, std::FILE* f, PngHeaderInfo* out) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  png_init_io(ctx->png, f);
  // Refuse dimensions that could not be real images before libpng allocates for them.
  png_set_user_limits(ctx->png, 1u << 20, 1u << 20);
  // Ancillary chunks (text, ICC profiles) are decompressed into memory: keep them small.
  png_set_chunk_malloc_max(ctx->png, 8u << 20);
  png_set_chunk_cache_max(ctx->png, 1000);
  png_read_info(ctx->png, ctx->info);
  const int colorType = png_get_color_type(ctx->png, ctx->info);
  const int depth = png_get_bit_depth(ctx->png, ctx->info);
  const std::uint64_t storedBits = static_cast<std::uint64_t>(png_get_image_width(ctx->png, ctx->info)) *
                                   static_cast<std::uint64_t>(depth) * png_get_channels(ctx->png, ctx->info);
  out->storedBytes = (storedBits + 7) / 8 * png_get_image_height(ctx->png, ctx->info);
  if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(ctx->png);
  if (colorType == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(ctx->png);
  if (png_get_valid(ctx->png, ctx->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(ctx->png);
  if (colorType == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(ctx->png);
  if (colorType == PNG_COLOR_TYPE_GRAY && png_get_valid(ctx->png, ctx->info, PNG_INFO_tRNS))
    png_set_gray_to_rgb(ctx->png);
  if (depth == 16 && std::endian::native == std::endian::little) png_set_swap(ctx->png);
  png_set_interlace_handling(ctx->png);
  png_read_update_info(ctx->png, ctx->info);
  out->width = png_get_image_width(ctx->png, ctx->info);
  out->height = png_get_image_height(ctx->png, ctx->info);
  out->channels = png_get_channels(ctx->png, ctx->info);
  out->bitDepth = png_get_bit_depth(ctx->png, ctx->info);
  out->rowBytes = png_get_rowbytes(ctx->png, ctx->info);
  return true;
}

bool pngReadRows(PngContext* ctx, png_bytepp rows) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  png_read_image(ctx->png, rows);
  png_read_end(ctx->png, nullptr);
  return true;
}

bool pngWrite(PngContext* ctx, std::FILE* f, const PngHeaderInfo* in, png_bytepp rows) {
  if (setjmp(png_jmpbuf(ctx->png))) return false;
  png_init_io(ctx->png, f);
  const int colorType = in->channels == 1 ? PNG_COLOR_TYPE_GRAY
                        : in->channels == 3 ? PNG_COLOR_TYPE_RGB
                                            : PNG_COLOR_TYPE_RGB_ALPHA;
  png_set_IHDR(ctx->png, ctx->info, in->width, in->height, in->bitDepth, colorType, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // Level 6 is zlib's default trade-off; previews are written often and read rarely.
  png_set_compression_level(ctx->png, 6);
  png_write_info(ctx->png, ctx->info);
  if (in->bitDepth == 16 && std::endian::native == std::endian::little) png_set_swap(ctx->png);
  png_write_image(ctx->png, rows);
  png_write_end(ctx->png, nullptr);
  return true;
}

/// Owns the libpng structures of one read or write.
class PngSession {
 public:
  explicit PngSession(bool writing) {
    ctx_.writing = writing;
    ctx_.png = writing ? png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx_, pngErrorHandler, pngWarningHandler)
                       : png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx_, pngErrorHandler, pngWarningHandler);
    if (ctx_.png) ctx_.info = png_create_info_struct(ctx_.png);
    if (!ctx_.png || !ctx_.info) {
      destroy();
      io_detail::fail(ErrorCode::OutOfMemory, writing ? "writePng: libpng could not allocate its state"
                                                      : "readPng: libpng could not allocate its state");
    }
  }
  PngSession(const PngSession&) = delete;
  PngSession& operator=(const PngSession&) = delete;
  ~PngSession() { destroy(); }
  PngContext* get() { return &ctx_; }

 private:
  void destroy() {
    if (ctx_.writing) png_destroy_write_struct(ctx_.png ? &ctx_.png : nullptr, ctx_.info ? &ctx_.info : nullptr);
    else png_destroy_read_struct(ctx_.png ? &ctx_.png : nullptr, ctx_.info ? &ctx_.info : nullptr, nullptr);
    ctx_.png = nullptr;
    ctx_.info = nullptr;
  }
  PngContext ctx_;
};

}  // namespace

HostImage readPng(const std::string& path) {
  io_detail::File file;
  file.open("readPng", path, "rb");
  unsigned char signature[8] = {};
  const std::size_t got = std::fread(signature, 1, sizeof signature, file.get());
  if (got != sizeof signature || png_sig_cmp(signature, 0, sizeof signature) != 0)
    invalid("readPng: '" + path + "': not a PNG file (bad signature in the first 8 bytes)");
  PngSession session(false);
  PngContext* ctx = session.get();
  png_set_sig_bytes(ctx->png, sizeof signature);
  PngHeaderInfo hdr;
  if (!pngReadHeader(ctx, file.get(), &hdr)) invalid("readPng: '" + path + "': " + io_detail::printable(ctx->message));
  const std::string size = std::to_string(hdr.width) + " x " + std::to_string(hdr.height);
  if (const auto fileSize = file.regularFileSize()) {
    if (hdr.storedBytes > kDeflateMaxRatio * *fileSize + 65536)
      invalid("readPng: '" + path + "': the header declares a " + size + " image (" +
              io_detail::byteSizeText(hdr.storedBytes) + " of samples), more than a " + std::to_string(*fileSize) +
              "-byte file can hold even at zlib's highest compression (1032:1); the file is truncated or corrupt");
  } else if (static_cast<std::uint64_t>(hdr.rowBytes) * hdr.height > kMaxStreamedPngBytes) {
    invalid("readPng: '" + path + "': the header declares a " + size + " image (" +
            io_detail::byteSizeText(static_cast<std::uint64_t>(hdr.rowBytes) * hdr.height) +
            "); from a pipe or device, whose size cannot vouch for it, at most " +
            io_detail::byteSizeText(kMaxStreamedPngBytes) + " is read");
  }
  if ((hdr.channels != 1 && hdr.channels != 3 && hdr.channels != 4) || (hdr.bitDepth != 8 && hdr.bitDepth != 16))
    invalid("readPng: '" + path + "': decodes to " + std::to_string(hdr.channels) + " channels of " +
            std::to_string(hdr.bitDepth) + " bits, which HostImage cannot hold");
  HostImage image(static_cast<int>(hdr.height), static_cast<int>(hdr.width), hdr.channels, hdr.bitDepth);
  if (hdr.rowBytes != image.rowBytes())
    invalid("readPng: '" + path + "': libpng row size " + std::to_string(hdr.rowBytes) + " differs from the expected " +
            std::to_string(image.rowBytes()));
  std::vector<png_bytep> rows(static_cast<std::size_t>(image.height));
  for (int y = 0; y < image.height; ++y) rows[static_cast<std::size_t>(y)] = image.row(y);
  if (!pngReadRows(ctx, rows.data())) invalid("readPng: '" + path + "': " + io_detail::printable(ctx->message));
  return image;
}

void writePng(const std::string& path, const HostImage& image) {
  image.validate();
  if (image.empty()) invalid("writePng: '" + path + "': the image is empty");
  if (image.width > (1 << 20) || image.height > (1 << 20))
    invalid("writePng: '" + path + "': size " + std::to_string(image.height) + " x " + std::to_string(image.width) +
            " exceeds the 1048576-pixel limit per axis this library reads back");
  std::vector<png_bytep> rows(static_cast<std::size_t>(image.height));
  for (int y = 0; y < image.height; ++y)
    rows[static_cast<std::size_t>(y)] = const_cast<png_bytep>(image.row(y));  // libpng does not write through these
  PngHeaderInfo hdr;
  hdr.width = static_cast<png_uint_32>(image.width);
  hdr.height = static_cast<png_uint_32>(image.height);
  hdr.channels = image.channels;
  hdr.bitDepth = image.bitDepth;
  io_detail::OutputFile file("writePng", path);
  PngSession session(true);
  if (!pngWrite(session.get(), file.get(), &hdr, rows.data()))
    invalid("writePng: '" + path + "': " + io_detail::printable(session.get()->message));
  file.commit();
}

#else  // !DEVICEARRAY_HAS_PNG

bool pngSupported() noexcept { return false; }

HostImage readPng(const std::string& path) {
  io_detail::fail(ErrorCode::Unsupported, "readPng: '" + path + "': this build of devicearray has no libpng");
}

void writePng(const std::string& path, const HostImage&) {
  io_detail::fail(ErrorCode::Unsupported, "writePng: '" + path + "': this build of devicearray has no libpng");
}

#endif

}  // namespace devicearray

// `devicearray layout FORMAT -H h -W w | -N n`: the DeviceArray layout table for one
// format and size, and the flat memory order of its first elements.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "devicearray/formats.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

struct LayoutArgs {
  std::string format;
  int height = 0;
  int width = 0;
  long long count = 0;
};

std::string join(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

FormatId parseFormat(const std::string& name) {
  if (auto id = formatFromName(name)) return *id;
  // Friendly: accept any capitalisation ("pointxyz", "colorrgba_srgb").
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  for (const FormatInfo& info : formatInfos())
    if (lower(info.name) == lower(name)) return info.id;
  std::string all;
  for (const FormatInfo& info : formatInfos()) all += (all.empty() ? "" : ", ") + std::string(info.name);
  throw CommandError("unknown format '" + name + "' (one of: " + all + ")");
}

/// Letter of channel `c` of `info` as the diagrams of docs/data-layout.md name it.
std::string channelLetter(const FormatInfo& info, int c) {
  if (info.isColor) {
    if (c == info.red) return "R";
    if (c == info.green) return "G";
    if (c == info.blue) return "B";
    return "A";
  }
  switch (info.id) {
    case FormatId::PointZ: return "Z";
    case FormatId::SNR: return "S";
    default: return std::string(1, "XYZW"[c]);
  }
}

/// "X01" as in docs/data-layout.md; "X(12,3)" once an index has two digits.
std::string cellLabel(const FormatInfo& info, int c, bool organized, long long row, long long col) {
  const std::string l = channelLetter(info, c);
  if (!organized) return l + std::to_string(col);
  if (row < 10 && col < 10) return l + std::to_string(row) + std::to_string(col);
  return l + "(" + std::to_string(row) + "," + std::to_string(col) + ")";
}

std::string depthName(Depth d) {
  switch (d) {
    case Depth::U8: return "uint8_t";
    case Depth::F32: return "float";
    default: return "?";
  }
}

void printFlatMemory(const FormatInfo& info, bool organized, long long width, std::size_t elements) {
  const std::size_t values = std::min<std::size_t>(elements * static_cast<std::size_t>(info.channels), 12);
  std::vector<std::string> labels;
  for (std::size_t k = 0; k < values; ++k) {
    const long long e = static_cast<long long>(k / static_cast<std::size_t>(info.channels));
    const int c = static_cast<int>(k % static_cast<std::size_t>(info.channels));
    labels.push_back(organized ? cellLabel(info, c, true, e / width, e % width) : cellLabel(info, c, false, 0, e));
  }
  std::size_t cell = 3;
  for (const auto& l : labels) cell = std::max(cell, l.size());
  const bool more = elements * static_cast<std::size_t>(info.channels) > values;
  const std::string unit = info.depth == Depth::F32 ? "floats" : "bytes";
  std::ostringstream offsets, border, row;
  offsets << "offset (" << unit << "): ";
  const std::string indent(offsets.str().size(), ' ');
  border << indent << "+";
  row << indent << "|";
  std::string off = offsets.str();
  for (std::size_t k = 0; k < values; ++k) {
    std::string o = std::to_string(k);
    off += std::string(cell + 1 - o.size(), ' ') + o;
    border << std::string(cell, '-') << "+";
    row << labels[k] << std::string(cell - labels[k].size(), ' ') << "|";
  }
  std::printf("Flat memory (row-major, channel-interleaved):\n\n%s%s\n%s\n%s%s\n%s\n", off.c_str(), more ? " ..." : "",
              border.str().c_str(), row.str().c_str(), more ? "..." : "", border.str().c_str());
}

void printGrid(const FormatInfo& info, int height, int width) {
  // The pixel grid of the diagrams in docs/data-layout.md, for arrays small enough to draw.
  if (height > 8 || width > 8) return;
  std::vector<std::vector<std::string>> cells(static_cast<std::size_t>(height));
  std::size_t cellWidth = 6;
  for (int r = 0; r < height; ++r)
    for (int c = 0; c < width; ++c) {
      std::string s;
      for (int ch = 0; ch < info.channels; ++ch) s += (ch ? " " : "") + cellLabel(info, ch, true, r, c);
      cellWidth = std::max(cellWidth, s.size() + 2);
      cells[static_cast<std::size_t>(r)].push_back(s);
    }
  std::string header = " ", sep = "+";
  for (int c = 0; c < width; ++c) {
    std::string h = " col " + std::to_string(c);
    header += h + std::string(cellWidth + 1 - h.size(), ' ');
    sep += std::string(cellWidth, '-') + "+";
  }
  std::printf("Pixel grid:\n\n%s\n%s\n", header.c_str(), sep.c_str());
  for (int r = 0; r < height; ++r) {
    std::string line = "|";
    for (const auto& s : cells[static_cast<std::size_t>(r)]) line += " " + s + std::string(cellWidth - 1 - s.size(), ' ') + "|";
    std::printf("%s  row %d\n%s\n", line.c_str(), r, sep.c_str());
  }
  std::printf("\n");
}

void runLayout(const LayoutArgs& a, bool organized) {
  const FormatId id = parseFormat(a.format);
  const FormatInfo& info = formatInfo(id);
  const ArrayLayout layout =
      organized ? organizedLayout(id, a.height, a.width) : unorganizedLayout(id, static_cast<std::size_t>(a.count));
  std::printf("format            %s (%d x %s, %zu bytes/element%s)\n", std::string(info.name).c_str(), info.channels,
              depthName(info.depth).c_str(), info.bytes, info.isSRGB ? ", sRGB-encoded" : "");
  if (organized)
    std::printf("organization      organized, height %d x width %d\n", a.height, a.width);
  else
    std::printf("organization      unorganized, %lld elements\n", a.count);
  std::printf("shape             %s\n", join(layout.shape).c_str());
  std::printf("strides           %s (elements)\n", join(layout.strides).c_str());
  std::printf("strides in bytes  %s\n", join(layout.stridesInBytes).c_str());
  std::printf("size              %zu elements (points/pixels)\n", layout.size);
  std::printf("bytes             %zu\n\n", layout.sizeInBytes);
  if (organized) printGrid(info, a.height, a.width);
  printFlatMemory(info, organized, organized ? a.width : 0, layout.size);
}

}  // namespace

void addLayoutCommand(CLI::App& app) {
  auto args = std::make_shared<LayoutArgs>();
  CLI::App* cmd = app.add_subcommand(
      "layout", "Print the data layout of a DeviceArray: shape, strides (elements and bytes), size, and the flat "
                "memory order of its first values.");
  cmd->add_option("format", args->format, "Format name, e.g. PointXYZ, SNR, ColorBGRA_SRGB")->required();
  // integerIn: CLI11's PositiveNumber would print its range up to DBL_MAX written out.
  const auto maxInt = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  auto* h = cmd->add_option("-H,--height", args->height, "Rows of an organized array")->check(integerIn(1, maxInt));
  auto* w = cmd->add_option("-W,--width", args->width, "Columns of an organized array")->check(integerIn(1, maxInt));
  auto* n = cmd->add_option("-N,--count", args->count, "Elements of an unorganized array")
                ->check(integerIn(1, static_cast<std::uint64_t>(std::numeric_limits<long long>::max())));
  n->excludes(h)->excludes(w);
  cmd->callback([args, h, w, n] {
    const bool organized = h->count() > 0 || w->count() > 0;
    if (organized && (h->count() == 0 || w->count() == 0))
      throw CommandError("layout: an organized array needs both -H/--height and -W/--width");
    if (!organized && n->count() == 0)
      throw CommandError("layout: give -H and -W (organized) or -N (unorganized)");
    runLayout(*args, organized);
  });
}

}  // namespace devicearray::cli

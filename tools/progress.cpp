#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace devicearray::cli {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(double fraction) {
  if (!enabled_ || finished_) return;
  const int percent = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 100.0);
  const auto now = std::chrono::steady_clock::now();
  if (percent == lastPercent_ || (percent < 100 && now - lastDraw_ < std::chrono::milliseconds(100))) return;
  lastPercent_ = percent;
  lastDraw_ = now;
  draw(fraction);
}

void ProgressBar::draw(double fraction) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%", label_.c_str(), bar.c_str(), lastPercent_);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (lastPercent_ >= 0) {
    lastPercent_ = 100;
    draw(1.0);
    std::fputc('\n', stderr);
  }
}

}  // namespace devicearray::cli

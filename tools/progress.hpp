// A one-line progress bar on stderr for long subcommands.
#pragma once

#include <chrono>
#include <string>

namespace devicearray::cli {

/// Draws "label [#####.....]  45%" on stderr, redrawing in place. It draws only when
/// stderr is a terminal, so logs and tests capturing stderr stay free of it, and at
/// most every 100 ms. finish() (or the destructor) ends the line.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();
  /// `fraction` in [0, 1]; values outside are clamped.
  void update(double fraction);
  void finish();

 private:
  void draw(double fraction);
  std::string label_;
  bool enabled_;
  bool finished_ = false;
  int lastPercent_ = -1;
  std::chrono::steady_clock::time_point lastDraw_{};
};

}  // namespace devicearray::cli

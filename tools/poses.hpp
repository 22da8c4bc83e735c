// Camera poses on the command line: `synth --rotate/--translate` and `stitch --poses`.
// A pose is a rigid transform, row-major like Matrix4x4, that maps points of a view's
// camera frame into the common frame.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace devicearray::cli {

using Pose = std::array<float, 16>;

/// Three numbers separated by commas and/or whitespace ("--rotate" etc. in messages);
/// throws CommandError otherwise.
std::array<double, 3> parseTriple(const std::string& text, const char* option);

/// The pose that rotates by rx, then ry, then rz degrees about the x, y and z axes and
/// then translates by t (mm).
Pose poseFromRotationTranslation(const std::array<double, 3>& degrees, const std::array<double, 3>& t);

/// The poses of a JSON file (at most 1 MiB) holding an array of 4x4 matrices (each an
/// array of 4 rows or of 16 numbers, row-major), each a rigid transform. Throws
/// CommandError for anything else, naming the file (and the matrix, by index).
std::vector<Pose> readPosesFile(const std::string& path);

/// a^-1 b for rigid a (the pose of b's frame in a's frame).
Pose relativePose(const Pose& a, const Pose& b);

/// The 16 numbers as a one-line JSON array of rows.
std::string poseJson(const Pose& p);

}  // namespace devicearray::cli

// `devicearray synth -o OUT.ply`: a synthetic organized point cloud of a scene as a
// structured-light 3-D camera sees it (see synthesizeScene in devicearray/io.hpp).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "devicearray/io.hpp"
#include "poses.hpp"
#include "progress.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

struct SynthArgs {
  int height = 1200;
  int width = 1920;
  double fovDegrees = 60.0;
  std::uint64_t seed = 1;
  std::string output;
  std::string format = "binary";
  double noise = SynthOptions{}.depthNoiseCoefficient;
  double dropout = SynthOptions{}.dropoutProbability;
  bool noColor = false;
  bool noSNR = false;
  bool normals = false;
  std::string rotate;
  std::string translate;
};

void runSynth(const SynthArgs& a) {
  SynthOptions options;
  options.camera = PinholeCamera::withFieldOfView(a.width, a.height, a.fovDegrees);
  options.seed = a.seed;
  options.depthNoiseCoefficient = a.noise;
  options.dropoutProbability = a.dropout;
  options.withColors = !a.noColor;
  options.withSNR = !a.noSNR;
  options.withNormals = a.normals;
  const std::array<double, 3> degrees = a.rotate.empty() ? std::array<double, 3>{} : parseTriple(a.rotate, "--rotate");
  const std::array<double, 3> shift =
      a.translate.empty() ? std::array<double, 3>{} : parseTriple(a.translate, "--translate");
  options.cameraPose = poseFromRotationTranslation(degrees, shift);
  const PlyFormat format = a.format == "ascii" ? PlyFormat::ascii
                           : a.format == "binary_big_endian" ? PlyFormat::binaryBigEndian
                                                             : PlyFormat::binaryLittleEndian;
  asUsageError([&] { checkPipelineOutput(a.output, format); });  // before the work: a big-endian .pcd has no form
  ProgressBar bar("synthesizing " + std::to_string(a.height) + " x " + std::to_string(a.width));
  options.progress = [&bar](double f) { bar.update(f); };
  const HostPointCloud cloud = synthesizeScene(options);
  bar.finish();

  writePipelineOutput(a.output, cloud, format);  // PCD or XYZ by the extension, PLY otherwise

  const std::size_t valid = cloud.validCount();
  float zMin = INFINITY, zMax = -INFINITY;
  for (std::size_t i = 0; i < cloud.size(); ++i)
    if (cloud.isValid(i)) {
      zMin = std::min(zMin, cloud.xyz[3 * i + 2]);
      zMax = std::max(zMax, cloud.xyz[3 * i + 2]);
    }
  std::printf("wrote %s: organized %d x %d, %zu valid points (%.1f %%), z %.0f..%.0f mm\n", a.output.c_str(),
              cloud.height, cloud.width, valid, 100.0 * static_cast<double>(valid) / static_cast<double>(cloud.size()),
              valid ? zMin : 0.0f, valid ? zMax : 0.0f);
  if (!a.rotate.empty() || !a.translate.empty()) std::printf("camera pose: %s\n", poseJson(options.cameraPose).c_str());
}

}  // namespace

void addSynthCommand(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Make a synthetic organized point cloud (floor, boxes, spheres; shading, SNR, depth noise, holes) "
               "and write it as PLY (or PCD / XYZ by the output's extension).");
  cmd->add_option("-o,--output", a->output, "Output file: .pcd is written as PCD, .xyz as XYZ, anything else as PLY")
      ->required();
  cmd->add_option("-H,--height", a->height, "Camera rows")->capture_default_str()->check(CLI::Range(1, 20000));
  cmd->add_option("-W,--width", a->width, "Camera columns")->capture_default_str()->check(CLI::Range(1, 20000));
  cmd->add_option("--fov", a->fovDegrees, "Horizontal field of view in degrees")
      ->capture_default_str()
      ->check(numberIn(1.0, 179.0));
  cmd->add_option("--seed", a->seed, "Random seed: same seed, same cloud")
      ->capture_default_str()
      ->check(integerIn(0, std::numeric_limits<std::uint64_t>::max()));
  cmd->add_option("--format", a->format, "PLY encoding (binary or ascii for PCD; XYZ is always text)")
      ->capture_default_str()
      ->check(CLI::IsMember({"binary", "ascii", "binary_big_endian"}));
  cmd->add_option("--noise", a->noise, "Depth noise: sigma = NOISE * z^2 (z in mm)")
      ->capture_default_str()
      ->check(numberIn(0.0, 1.0));
  cmd->add_option("--dropout", a->dropout, "Probability of a random missing pixel")
      ->capture_default_str()
      ->check(numberIn(0.0, 1.0));
  cmd->add_flag("--no-color", a->noColor, "Leave out the colours");
  cmd->add_flag("--no-snr", a->noSNR, "Leave out the SNR values");
  cmd->add_flag("--normals", a->normals, "Add the exact surface normals (nx, ny, nz)");
  cmd->add_option("--rotate", a->rotate,
                  "Camera pose: turn the camera by RX,RY,RZ degrees about its x, y and z axes (in that order)");
  cmd->add_option("--translate", a->translate, "Camera pose: move the camera by X,Y,Z mm along its axes");
  cmd->callback([a] { runSynth(*a); });
}

}  // namespace devicearray::cli

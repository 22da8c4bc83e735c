// `devicearray stitch VIEW... -o OUT.ply`: registers views of one scene, taken from
// several camera poses, into one cloud on the device: each view is registered to the
// model grown from the views before it (point-to-plane ICP, localPointCloudRegistration),
// moved into the model's frame, appended and voxel-downsampled. The first view's camera
// frame is the model's frame.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "device_options.hpp"
#include "devicearray/devicearray.hpp"
#include "devicearray/io.hpp"
#include "poses.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

struct StitchArgs {
  std::vector<std::string> views;
  std::string output;
  std::string poses;
  float voxel = 1.0f;
  int minPoints = 1;
  float maxDistance = LocalPointCloudRegistrationParameters{}.maxCorrespondenceDistance;
  int maxIterations = LocalPointCloudRegistrationParameters{}.maxIterations;
  std::string device;
};

HostPointCloud readView(const std::string& path) { return readPointCloudFile(path); }

void runStitch(const StitchArgs& a) {
  const std::filesystem::path parent = std::filesystem::path(a.output).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw CommandError("-o " + a.output + ": the directory '" + parent.string() + "' does not exist");
  std::vector<Pose> poses;
  if (!a.poses.empty()) {
    poses = readPosesFile(a.poses);
    if (poses.size() != a.views.size())
      throw CommandError("--poses: '" + printable(a.poses) + "' holds " + std::to_string(poses.size()) +
                         " poses for " + std::to_string(a.views.size()) + " views");
  }
  const ComputeDevice device = selectDevice(a.device);
  LocalPointCloudRegistrationParameters parameters;
  parameters.maxCorrespondenceDistance = a.maxDistance;
  parameters.maxIterations = a.maxIterations;

  std::printf("device: %s\n", device.toString().c_str());
  std::printf("%-4s %-32s %10s %10s %10s %10s  %s\n", "view", "file", "points", "RMS mm", "coverage", "ms", "");
  UnorganizedPointCloud model;
  Matrix4x4 previous = identityMatrix4x4();
  int merged = 0;
  for (std::size_t i = 0; i < a.views.size(); ++i) {
    const HostPointCloud host = readView(a.views[i]);
    const auto start = std::chrono::steady_clock::now();
    UnorganizedPointCloud view = UnorganizedPointCloud::fromHost(host, device);
    if (view.isEmpty()) {
      std::printf("%-4zu %-32s %10s  skipped: no valid points\n", i, printable(a.views[i], 32).c_str(), "0");
      continue;
    }
    // Normals in the view's own frame face its camera; the transform below turns them.
    view.estimateNormals();
    std::string note;
    float rms = 0.0f, coverage = 1.0f;
    bool keep = true;
    const bool reference = model.isEmpty();
    if (reference) {
      if (!poses.empty()) previous = relativePose(poses[0], poses[i]);
      view.transform(previous);
      note = "reference";
    } else {
      const Matrix4x4 initial = poses.empty() ? previous : relativePose(poses[0], poses[i]);
      const LocalPointCloudRegistrationResult r = localPointCloudRegistration(model, view, parameters, initial);
      rms = r.rootMeanSquareError();
      coverage = r.sourceCoverage();
      keep = r.converged();
      if (keep) {
        previous = r.transform();
        view.transform(r.transform());
        note = "registered";
      } else {
        note = "not converged: skipped";
      }
    }
    if (keep) {
      model.extend(view);
      model = model.voxelDownsampled(a.voxel, a.minPoints);
      ++merged;
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The reference view is not registered; a view without a single pair has no RMS.
    char rmsText[32] = "-", coverageText[32] = "-";
    if (!reference) {
      if (std::isfinite(rms)) std::snprintf(rmsText, sizeof rmsText, "%.3f", static_cast<double>(rms));
      std::snprintf(coverageText, sizeof coverageText, "%.3f", static_cast<double>(coverage));
    }
    std::printf("%-4zu %-32s %10zu %10s %10s %10.1f  %s\n", i, printable(a.views[i], 32).c_str(), view.size(), rmsText,
                coverageText, ms, note.c_str());
  }
  if (model.isEmpty()) throw CommandError("no view could be merged");
  writePipelineOutput(a.output, model.toHost());
  std::printf("wrote %s: %zu points from %d of %zu views (voxel %s mm)\n", a.output.c_str(), model.size(), merged,
              a.views.size(), numberText(a.voxel).c_str());
}

}  // namespace

void addStitchCommand(CLI::App& app) {
  auto a = std::make_shared<StitchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "stitch",
      "Register views of one scene (point-to-plane ICP on the device) into the first view's frame, merge and "
      "voxel-downsample them, and write one cloud. Prints each view's RMS error, coverage and time.");
  cmd->add_option("views", a->views, "View files (.ply, .pcd or .xyz), in the order they are merged")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", a->output, "Output file: PCD for .pcd, XYZ for .xyz, PLY otherwise")->required();
  cmd->add_option("--poses", a->poses,
                  "JSON array of the views' camera poses (rigid 4x4, row-major), one per view: initial guesses "
                  "(default: each view starts where the one before it ended)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--voxel", a->voxel, "Voxel size of the merged cloud in mm")
      ->capture_default_str()
      ->check(numberIn(1e-3, 1e6));
  cmd->add_option("--min-points", a->minPoints, "Points a voxel needs to be kept")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-distance", a->maxDistance, "Correspondence distance of the registration in mm")
      ->capture_default_str()
      ->check(numberIn(1e-3, 1e6));
  // At least one step: with none, no view after the first could converge and each was skipped.
  cmd->add_option("--max-iterations", a->maxIterations, "ICP steps per view at most")
      ->capture_default_str()
      ->check(integerIn(1, 100000));
  cmd->add_option("--device", a->device, kDeviceOptionHelp);
  cmd->callback([a] { runStitch(*a); });
}

}  // namespace devicearray::cli

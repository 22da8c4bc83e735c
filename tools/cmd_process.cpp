// `devicearray process IN.ply [stages] -o OUT.ply`: the frame pipeline of
// devicearray/frame_pipeline.hpp on a PLY file, on one device, with the device time of
// every stage. The stages and what they do are the library's (PipelineStages,
// runPipeline); this file turns the command line into them, shows progress, prints the
// stage table and writes the file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "device_options.hpp"
#include "devicearray/error.hpp"
#include "devicearray/frame_loop.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "devicearray/io.hpp"
#include "progress.hpp"

namespace devicearray::cli {
namespace {

struct ProcessArgs {
  std::string input;
  std::string output;
  std::string downsample;
  std::string transform;
  std::string roi;
  std::string voxel;
  std::string statisticalOutliers, radiusOutliers;  // "K,RATIO" and "MM,N", checked by PipelineStages::parse
  // The camera filters' values, passed to PipelineStages::parse as given (it checks them).
  std::string snrThreshold, removeOutliers, smooth, smoothRadius, fillHoles, maxDepthStep;
  bool normals = false;
  std::string normalWindow;  // checked by PipelineStages::parse
  bool unorganize = false;
  int minPoints = 1;
  std::string device;
  std::string format = "binary";
  int frames = 1;
  int inFlight = 3;
  bool pinnedFrames = false;
  std::vector<std::string> stageArgs;  // the stage options as given, for PipelineStages::parse
};

void printTable(const std::vector<PipelineStageResult>& rows, const ComputeDevice& device) {
  std::printf("device: %s\n", device.toString().c_str());
  std::printf("%-24s %-26s %10s %10s\n", "stage", "result", "GPU ms", "wall ms");
  double gpu = 0, wall = 0;
  for (const PipelineStageResult& r : rows) {
    char g[32] = "-";
    if (!std::isnan(r.deviceMs)) {
      std::snprintf(g, sizeof g, "%.3f", r.deviceMs);
      gpu += r.deviceMs;
    }
    wall += r.wallMs;
    std::printf("%-24s %-26s %10s %10.3f\n", r.stage.c_str(), r.result.c_str(), g, r.wallMs);
  }
  std::printf("%-24s %-26s %10.3f %10.3f\n", "total", "", gpu, wall);
  // The GPU time of a stage spans its whole stretch of the stream, so a kernel build
  // on first use (OpenCL compiles programs at run time) shows up in it.
  if (device.backend() == ComputeBackend::opencl)
    std::printf(
        "(OpenCL: the first use of a kernel in a process includes building it; most drivers cache builds across "
        "runs)\n");
}

/// A frame's result size once its work is done: organized results keep their grid.
std::size_t resultPoints(const LoopFrame& f) { return f.isOrganized() ? f.cloud.size() : f.points.size(); }

/// Runs the stages on `in` `frames` times through a FrameLoop, `inFlight` frames at a
/// time, and prints the throughput: upload and stages of every frame, its result read
/// once the loop has moved past it. `pinned`: the frame is first copied into page-locked
/// memory, as a camera SDK delivers frames; otherwise it is uploaded from the pageable
/// memory it was read into. `expectedPoints`: the size of the written output, which
/// every frame's result must have.
void runFrameLoop(const HostPointCloud& in, const PipelineStages& stages, const ComputeDevice& device, int frames,
                  int inFlight, bool pinned, std::size_t expectedPoints) {
  HostMat xyz, colors, snrs;
  if (pinned) {
    const HostMat::SizeArray size{in.height, in.width};
    const auto pinnedCopy = [&](const auto& values, int type) {
      HostMat m = HostMat::pinned(size, type);
      std::memcpy(m.data(), values.data(), values.size() * sizeof(values[0]));
      return m;
    };
    xyz = pinnedCopy(in.xyz, makeType(Depth::F32, 3));
    if (in.hasColors()) colors = pinnedCopy(in.rgba, makeType(Depth::U8, 4));
    if (in.hasSNR()) snrs = pinnedCopy(in.snr, makeType(Depth::F32, 1));
  }
  FrameLoop loop(stages, device, inFlight);
  std::vector<LoopFrame> slots(static_cast<std::size_t>(loop.framesInFlight()));
  const auto consume = [&](const LoopFrame& f) {
    if (resultPoints(f) != expectedPoints)
      throw Error(ErrorCode::InvalidState, "process --frames: frame " + std::to_string(f.index) + " gave " +
                                               std::to_string(resultPoints(f)) + " points, the written output " +
                                               std::to_string(expectedPoints));
  };
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) {
    LoopFrame f = pinned ? loop.submit(xyz, colors, snrs) : loop.submit(in);
    // submit() has waited for the frame this slot held before: its result is ready.
    LoopFrame& slot = slots[f.index % slots.size()];
    if (f.index >= slots.size()) consume(slot);
    slot = std::move(f);
  }
  loop.synchronize();
  for (std::size_t i = 0; i < slots.size() && i < static_cast<std::size_t>(frames); ++i) consume(slots[i]);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("frames: %d in %.3f s, %.1f frames/s (%d in flight, %s frames; upload and stages each, %zu points)\n",
              frames, seconds, frames / seconds, loop.framesInFlight(), pinned ? "page-locked" : "pageable",
              expectedPoints);
}

PipelineStageResult hostRow(std::string stage, std::string result, const StageTime& t) {
  return {std::move(stage), std::move(result), t.gpuMs, t.wallMs};
}

void runProcess(const ProcessArgs& a) {
  PipelineStages stages;
  asUsageError([&] { stages = PipelineStages::parse(a.stageArgs); });
  const std::filesystem::path parent = std::filesystem::path(a.output).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw CommandError("-o " + a.output + ": the directory '" + parent.string() + "' does not exist");
  const PlyFormat format = a.format == "ascii"               ? PlyFormat::ascii
                           : a.format == "binary_big_endian" ? PlyFormat::binaryBigEndian
                                                             : PlyFormat::binaryLittleEndian;
  asUsageError([&] { checkPipelineOutput(a.output, format); });
  const ComputeDevice device = selectDevice(a.device);

  // Stage count for the progress bar: read, upload and download, plus the requested
  // stages (unorganize counts when it is asked for, even if the input is unorganized).
  const int stageCount = 3 + stages.stageCount();
  ProgressBar bar("processing " + a.input);
  int done = 0;
  // The last step ends with bar.finish(), which draws 100 %.
  const auto stageDone = [&] {
    if (++done < stageCount) bar.update(static_cast<double>(done) / stageCount);
  };

  HostPointCloud in;
  std::vector<PipelineStageResult> rows;
  const StageTime read = timeOnHost([&] { in = readPipelineInput(a.input); });
  stageDone();
  asUsageError([&] { stages.checkInput(in, a.input); });
  if (a.frames > 1 && !in.isOrganized())
    throw CommandError("--frames runs the stages on camera frames (organized clouds); " + a.input +
                       " is unorganized");
  rows.push_back(hostRow(readStageName(a.input), pipelineCloudText(in), read));

  PipelineRunOptions options;
  options.inputName = a.input;
  options.outputName = a.output;
  options.stageDone = stageDone;
  const PipelineResult result = runPipeline(in, stages, device, options);
  rows.insert(rows.end(), result.stages.begin(), result.stages.end());
  const HostPointCloud& out = result.cloud;

  rows.push_back(hostRow(writeStageName(a.output), out.isOrganized() ? "organized" : "unorganized",
                         timeOnHost([&] { writePipelineOutput(a.output, out, format); })));
  bar.finish();

  printTable(rows, device);
  std::printf("wrote %s: %s, %zu valid points%s%s%s\n", a.output.c_str(),
              out.isOrganized() ? ("organized " + pipelineCloudText(out)).c_str() : "unorganized",
              out.validCount(), out.hasColors() ? ", colours" : "", out.hasSNR() ? ", SNR" : "",
              out.hasNormals() ? ", normals" : "");
  if (result.nonFinitePoints > 0)
    std::printf("%zu points became missing: their transformed coordinates do not fit a float\n",
                result.nonFinitePoints);
  if (a.frames > 1)
    runFrameLoop(in, stages, device, a.frames, a.inFlight, a.pinnedFrames, out.isOrganized() ? out.size() : out.validCount());
}

}  // namespace

void addProcessCommand(CLI::App& app) {
  auto a = std::make_shared<ProcessArgs>();
  CLI::App* cmd = app.add_subcommand(
      "process",
      "Run the point-cloud pipeline on a PLY file on one device, in this order: SNR threshold, outlier removal, "
      "smoothing, hole filling, downsample, normals, transform, ROI, unorganize, statistical outliers, radius "
      "outliers, voxel. Prints the GPU time of "
      "every stage.");
  cmd->add_option("input", a->input, "Input PLY file (organized clouds keep their rows and columns)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", a->output,
                  "Output file: PCD for .pcd, XYZ for .xyz, PLY otherwise (organized unless --unorganize, an outlier "
                  "option of unorganized clouds or --voxel)")
      ->required();
  // Camera filters (docs/filters.md), on the organized grid before every other stage.
  struct FilterOption {
    const char* name;
    std::string* value;
    const char* help;
  };
  const FilterOption filterOptions[] = {
      {"--snr-threshold", &a->snrThreshold, "Points with an SNR below this become missing"},
      {"--remove-outliers", &a->removeOutliers,
       "Points farther than this (mm) from every valid grid neighbour become missing"},
      {"--smooth", &a->smooth,
       "Gaussian smoothing of depth along the camera rays with this sigma (pixels), not across depth steps larger "
       "than --max-depth-step"},
      {"--smooth-radius", &a->smoothRadius, "Window radius of --smooth in pixels (default ceil(2 sigma))"},
      {"--fill-holes", &a->fillHoles, "Fill row and column gaps of at most this many missing points by interpolation"},
      {"--max-depth-step", &a->maxDepthStep, "Depth difference (mm, default 10) that --smooth and --fill-holes treat as an edge"},
  };
  std::vector<std::pair<std::string, CLI::Option*>> filterArgs;
  for (const FilterOption& f : filterOptions) filterArgs.emplace_back(f.name, cmd->add_option(f.name, *f.value, f.help));
  CLI::Option* downsample = cmd->add_option("--downsample", a->downsample, "Block-average k x k points (SNR^2-weighted)")
                                ->check(CLI::IsMember({"2x2", "3x3", "4x4"}));
  cmd->add_flag(
      "--normals", a->normals,
      "Estimate normals from the grid and write them (nx, ny, nz); normals in the input file are not carried");
  CLI::Option* normalWindow = cmd->add_option(
      "--normal-window", a->normalWindow,
      "Fit each normal's plane to this N x N window (odd, 3..15) instead of central differences: far less noisy; "
      "5 suits a 2x2-downsampled camera frame (needs --normals)");
  CLI::Option* transform = cmd->add_option(
      "--transform", a->transform,
      "Affine 4x4 matrix: 16 comma-separated numbers, row-major (last row 0,0,0,1), or a file holding them");
  CLI::Option* roi = cmd->add_option("--roi", a->roi,
                                     "Oriented box ox,oy,oz,ax,ay,az,bx,by,bz,min,max: origin O, A and B span the base, "
                                     "[min, max] the extent along the normal (A-O) x (B-O); points outside become "
                                     "missing");
  cmd->add_flag("--unorganize", a->unorganize, "Keep only the valid points, as an unorganized cloud");
  CLI::Option* statisticalOutliers = cmd->add_option(
      "--statistical-outliers", a->statisticalOutliers,
      "K,RATIO: drop points whose mean distance to their K nearest points (themselves included) exceeds the mean "
      "of those distances by more than RATIO standard deviations (implies --unorganize)");
  CLI::Option* radiusOutliers = cmd->add_option(
      "--radius-outliers", a->radiusOutliers,
      "MM,N: drop points with fewer than N other points closer than MM (implies --unorganize)");
  CLI::Option* voxel =
      cmd->add_option("--voxel", a->voxel, "Voxel size in mm: one point per occupied voxel (implies --unorganize)");
  CLI::Option* minPoints = cmd->add_option("--min-points", a->minPoints, "Drop voxels with fewer points than this")
                               ->capture_default_str()
                               ->check(CLI::Range(1, std::numeric_limits<int>::max()))
                               ->needs(voxel);
  CLI::Option* frames =
      cmd->add_option("--frames", a->frames,
                      "After writing the output, run the stages this many more times on the input (an organized "
                      "cloud), several frames in flight, and report frames/s")
          ->check(CLI::Range(1, 1000000));
  cmd->add_option("--in-flight", a->inFlight, "Frames in flight during --frames (one stream each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64))
      ->needs(frames);
  cmd->add_flag("--pinned-frames", a->pinnedFrames,
                "During --frames, upload from page-locked memory (as a camera SDK delivers frames) instead of the "
                "pageable memory the input was read into")
      ->needs(frames);
  cmd->add_option("--device", a->device, kDeviceOptionHelp);
  cmd->add_option("--format", a->format,
                  "Encoding of the output: binary or ascii (PLY, PCD; XYZ is always text), binary_big_endian (PLY "
                  "only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"binary", "ascii", "binary_big_endian"}));
  cmd->callback([a, filterArgs, downsample, normalWindow, transform, roi, statisticalOutliers, radiusOutliers, voxel, minPoints] {
    // The stage options go to the library as the arguments PipelineStages::parse reads.
    std::vector<std::string>& args = a->stageArgs;
    args.clear();
    for (const auto& [name, option] : filterArgs)
      if (option->count() > 0) args.push_back(name + "=" + option->results().front());
    if (downsample->count() > 0) args.insert(args.end(), {"--downsample", a->downsample});
    if (a->normals) args.emplace_back("--normals");
    if (normalWindow->count() > 0) args.insert(args.end(), {"--normal-window", a->normalWindow});
    if (transform->count() > 0) args.insert(args.end(), {"--transform", a->transform});
    if (roi->count() > 0) args.insert(args.end(), {"--roi", a->roi});
    if (a->unorganize) args.emplace_back("--unorganize");
    if (statisticalOutliers->count() > 0) args.insert(args.end(), {"--statistical-outliers", a->statisticalOutliers});
    if (radiusOutliers->count() > 0) args.insert(args.end(), {"--radius-outliers", a->radiusOutliers});
    if (voxel->count() > 0) args.insert(args.end(), {"--voxel", a->voxel});
    if (minPoints->count() > 0) args.insert(args.end(), {"--min-points", std::to_string(a->minPoints)});
    runProcess(*a);
  });
}

}  // namespace devicearray::cli

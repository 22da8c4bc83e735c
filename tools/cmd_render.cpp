// `devicearray render IN.ply -o OUT.png`: a PNG preview of a point cloud.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "commands.hpp"
#include "devicearray/error.hpp"
#include "devicearray/io.hpp"
#include "progress.hpp"
#include "text.hpp"

namespace devicearray::cli {
namespace {

struct RenderArgs {
  std::string input;
  std::string output;
  std::string view = "color";
  std::string projection = "auto";
  int width = 0;
  int height = 0;
  int pointRadius = -1;
  std::size_t maxMemoryMiB = kDefaultRenderMemoryLimit >> 20;
};

void runRender(const RenderArgs& a) {
  const HostPointCloud cloud = readPly(a.input);
  // Like process: a file with nothing to show is the input's fault, named by the file.
  if (cloud.validCount() == 0)
    throw CommandError(a.input + (cloud.size() == 0 ? " has no points (it is empty)"
                                                    : " has no valid point (each has a NaN or infinite coordinate)"));
  RenderOptions options;
  static const std::map<std::string, RenderView> views{
      {"color", RenderView::color}, {"depth", RenderView::depth}, {"normals", RenderView::normals}, {"all", RenderView::all}};
  static const std::map<std::string, RenderProjection> projections{
      {"auto", RenderProjection::automatic}, {"grid", RenderProjection::grid}, {"pinhole", RenderProjection::pinhole}};
  options.view = views.at(a.view);
  options.projection = projections.at(a.projection);
  options.width = a.width;
  options.height = a.height;
  options.pointRadius = a.pointRadius;
  options.memoryLimitBytes = a.maxMemoryMiB << 20;
  ProgressBar bar("rendering " + a.input);
  options.progress = [&bar](double f) { bar.update(f); };
  HostImage image;
  try {
    image = renderCloud(cloud, options);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::OutOfRange) throw;
    throw Error(e.code(), std::string(e.what()) + " (--max-memory, in MiB)");
  }
  bar.finish();
  writePng(a.output, image);
  std::printf("wrote %s: %d x %d, %s view of %s (%zu points, %zu valid%s)\n", a.output.c_str(), image.width,
              image.height, a.view.c_str(), a.input.c_str(), cloud.size(), cloud.validCount(),
              cloud.isOrganized() ? (", organized " + std::to_string(cloud.height) + " x " + std::to_string(cloud.width)).c_str()
                                  : ", unorganized");
}

}  // namespace

void addRenderCommand(CLI::App& app) {
  auto a = std::make_shared<RenderArgs>();
  CLI::App* cmd = app.add_subcommand(
      "render",
      "Render a PLY point cloud to a PNG preview: colours, colour-mapped depth, normals, or all three. A picture "
      "whose rendering would need more host memory than --max-memory (default " +
          std::to_string(kDefaultRenderMemoryLimit >> 20) + " MiB) is refused.");
  cmd->add_option("input", a->input, "Input PLY file")->required();
  cmd->add_option("-o,--output", a->output, "Output PNG file")->required();
  cmd->add_option("--view", a->view, "What to show")
      ->capture_default_str()
      ->check(CLI::IsMember({"color", "depth", "normals", "all"}));
  cmd->add_option("--projection", a->projection,
                  "auto: the grid for organized clouds, a fitted pinhole camera for unorganized ones")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "grid", "pinhole"}));
  cmd->add_option("--width", a->width, "Width of one view in pixels (0: automatic)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16384));
  cmd->add_option("--height", a->height, "Height of one view in pixels (0: automatic)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16384));
  cmd->add_option("--point-radius", a->pointRadius, "Pinhole splat radius in pixels (-1: from the density)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 64));
  cmd->add_option("--max-memory", a->maxMemoryMiB,
                  "Host memory the render may use, in MiB: about 11 to 40 bytes per pixel of one view (3 views "
                  "with --view all); a larger picture is refused before rendering. 0: no limit")
      ->capture_default_str()
      ->check(integerIn(0, std::uint64_t{1} << 40));
  cmd->callback([a] { runRender(*a); });
}

}  // namespace devicearray::cli

// FrameLoop: the stages of PipelineStages on a stream of frames, each frame enqueued on
// the stream of its slot without a host synchronization, so several frames are in
// flight at once.
#include "devicearray/frame_loop.hpp"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "devicearray/error.hpp"
#include "io/frame_pipeline_internal.hpp"

namespace devicearray {

namespace {

constexpr int kMaxFramesInFlight = 64;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, "FrameLoop: " + message);
}

std::string typeText(int type) {
  static const char* const depths[] = {"U8", "S8", "U16", "S16", "S32", "F32", "F64", "F16"};
  return std::string(depths[static_cast<int>(depthOf(type))]) + "C" + std::to_string(channelsOf(type));
}

/// Checks one host array of the frame: 2-D, `type`, and (for colours and SNR) the size
/// of xyz.
void checkArray(const HostMat& a, const char* name, int type, int height, int width) {
  if (a.dims != 2)
    invalid(std::string(name) + " must be a 2-D (height x width) array, not " + std::to_string(a.dims) + "-D");
  if (a.type() != type) invalid(std::string(name) + " must be of type " + typeText(type) + ", not " + typeText(a.type()));
  if (height >= 0 && (a.size[0] != height || a.size[1] != width))
    invalid(std::string(name) + " is " + std::to_string(a.size[0]) + " x " + std::to_string(a.size[1]) +
            "; xyz is " + std::to_string(height) + " x " + std::to_string(width));
}

/// A new device array of `a`'s size and type, allocated and filled in `stream`'s order.
GpuMatND uploaded(const HostMat& a, Stream& stream) {
  GpuMatND d;
  d.upload(a, stream);
  return d;
}

}  // namespace

struct FrameLoop::State {
  PipelineStages stages;
  ComputeDevice device;
  std::vector<Stream> streams;  ///< one per slot; frame i uses slot i % size()
  std::atomic<std::size_t> submitted{0};  ///< read by submitted() from any thread
  Matrix4x4 normalTransform = identityMatrix4x4();  ///< carries normals along stages.transform
};

FrameLoop::FrameLoop(const PipelineStages& stages, const ComputeDevice& device, int framesInFlight)
    : state_(std::make_unique<State>()) {
  stages.validate();
  if (!device.isValid()) invalid("the device is invalid (a default-constructed ComputeDevice)");
  if (framesInFlight < 1 || framesInFlight > kMaxFramesInFlight)
    invalid("framesInFlight is " + std::to_string(framesInFlight) + "; it must be in [1, " +
            std::to_string(kMaxFramesInFlight) + "]");
  state_->stages = stages;
  state_->device = device;
  // validate() refused normals with a transform they cannot follow.
  if (stages.normals && stages.transform) state_->normalTransform = pipeline_detail::normalMatrixOf(*stages.transform);
  for (int i = 0; i < framesInFlight; ++i) state_->streams.emplace_back(device);
}

FrameLoop::~FrameLoop() {
  if (!state_) return;
  // The frames' host arrays may go with the loop's owner: their uploads must be done.
  for (Stream& s : state_->streams) {
    try {
      s.waitForCompletion();
    } catch (...) {  // a device error belongs to the frame's consumer; never throw from here
    }
  }
}

FrameLoop::FrameLoop(FrameLoop&&) noexcept = default;
FrameLoop& FrameLoop::operator=(FrameLoop&& other) noexcept {
  if (this != &other) {
    FrameLoop gone(std::move(*this));  // waits for this loop's frames
    state_ = std::move(other.state_);
  }
  return *this;
}

LoopFrame FrameLoop::submit(const HostPointCloud& frame) {
  frame.validate();
  if (!frame.isOrganized())
    invalid("the frame is unorganized (height and width are 0); a FrameLoop takes organized camera frames");
  // HostMat views of the frame's vectors: the host arrays have the formats' packed layouts.
  const auto data = [](const auto& v) { return const_cast<void*>(static_cast<const void*>(v.data())); };
  const HostMat::SizeArray size{frame.height, frame.width};
  const HostMat xyz(size, makeType(Depth::F32, 3), data(frame.xyz));
  const HostMat colors = frame.hasColors() ? HostMat(size, makeType(Depth::U8, 4), data(frame.rgba)) : HostMat();
  const HostMat snrs = frame.hasSNR() ? HostMat(size, makeType(Depth::F32, 1), data(frame.snr)) : HostMat();
  return submit(xyz, colors, snrs);
}

LoopFrame FrameLoop::submit(const HostMat& xyz, const HostMat& colors, const HostMat& snrs) {
  if (!state_) throw Error(ErrorCode::InvalidState, "FrameLoop::submit: the loop was moved from");
  State& s = *state_;
  const PipelineStages& stages = s.stages;
  if (xyz.empty()) invalid("xyz is empty");
  checkArray(xyz, "xyz", makeType(Depth::F32, 3), -1, -1);
  const int height = xyz.size[0], width = xyz.size[1];
  if (!colors.empty()) checkArray(colors, "colors", makeType(Depth::U8, 4), height, width);
  if (!snrs.empty()) checkArray(snrs, "snrs", makeType(Depth::F32, 1), height, width);
  pipeline_detail::checkFrameFits(stages, height, width, !snrs.empty(), "the frame");

  // The slot's previous frame must be done before its stream takes another: this wait
  // is what bounds the frames in flight.
  const std::size_t index = s.submitted.load();
  Stream& stream = s.streams[index % s.streams.size()];
  if (index >= s.streams.size()) stream.waitForCompletion();
  try {
    LoopFrame out = enqueueFrame(s, stream, index, xyz, colors, snrs);
    s.submitted.store(index + 1);
    return out;
  } catch (...) {
    // What was enqueued may still read the host arrays, which the caller frees once
    // this throws: let it finish (or fail) first. The slot is free again.
    try {
      stream.waitForCompletion();
    } catch (...) {  // the enqueueing error is the one to report
    }
    throw;
  }
}

LoopFrame FrameLoop::enqueueFrame(State& s, Stream& stream, std::size_t index, const HostMat& xyz,
                                  const HostMat& colors, const HostMat& snrs) {
  const PipelineStages& stages = s.stages;
  LoopFrame out;
  out.index = index;
  out.stream = stream;
  // Each frame gets arrays of its own (from the stream-ordered pool), so a result handed
  // out stays valid while later frames run.
  PointCloud cloud(DeviceArray<PointXYZ>::fromGpuMatND(uploaded(xyz, stream)),
                   colors.empty() ? DeviceArray<ColorRGBA_SRGB>()
                                  : DeviceArray<ColorRGBA_SRGB>::fromGpuMatND(uploaded(colors, stream)),
                   snrs.empty() ? DeviceArray<SNR>() : DeviceArray<SNR>::fromGpuMatND(uploaded(snrs, stream)));

  // The stages of runPipeline(), in its order, as stream calls.
  if (stages.snrThreshold) cloud.filterNoise(*stages.snrThreshold, stream);
  if (stages.outlierDistance) cloud.filterOutliers(*stages.outlierDistance, stream);
  if (stages.smoothingSigma)
    cloud.smoothDepth(*stages.smoothingSigma, stages.maxDepthStep, stages.smoothingRadius, stream);
  if (stages.maxHoleSize) cloud.fillHoles(*stages.maxHoleSize, stages.maxDepthStep, stream);
  if (stages.downsample) cloud.downsample(*stages.downsample, stream);
  DeviceArray<NormalXYZ> normals;
  // An organized result hands out the grid's normals as computed (the ROI's points
  // included); an unorganized one keeps only the points the ROI keeps.
  if (stages.normals) normals = pipeline_detail::gridNormals(cloud, stages, stages.unorganizes(), stream);
  if (stages.transform) {
    // With an ROI after it, one pass moves and masks the points.
    if (stages.roi)
      cloud.transformAndMaskByRegionOfInterest(*stages.transform, *stages.roi, stream);
    else
      cloud.transform(*stages.transform, stream);
    if (!normals.isEmpty()) {
      // The normals seen as points (the same layout), rotated in place.
      UnorganizedPointCloud asPoints(DeviceArray<PointXYZ>::fromGpuMatND(normals.toGpuMatND()));
      asPoints.transform(s.normalTransform, stream);
    }
  } else if (stages.roi) {
    cloud.maskByRegionOfInterest(*stages.roi, stream);
  }
  if (!stages.unorganizes()) {
    out.cloud = std::move(cloud);
    out.normals = std::move(normals);
    return out;
  }

  if (stages.voxelSize && !pipeline_detail::removesOutliers(stages)) {
    // The voxel grid skips the grid's missing points itself: no compaction before it.
    out.points = normals.isEmpty()
                     ? cloud.voxelDownsampled(*stages.voxelSize, stages.minPointsPerVoxel, stream)
                     : cloud.voxelDownsampled(normals, *stages.voxelSize, stages.minPointsPerVoxel, stream);
    return out;
  }
  UnorganizedPointCloud points =
      normals.isEmpty() ? cloud.toUnorganizedPointCloud(stream) : cloud.toUnorganizedPointCloud(normals, stream);
  if (const auto& f = stages.statisticalOutliers)
    points = points.statisticalOutliersRemoved(f->neighbours, f->stdRatio, stream);
  if (const auto& f = stages.radiusOutliers) points = points.radiusOutliersRemoved(f->radius, f->minPoints, stream);
  if (stages.voxelSize) points = points.voxelDownsampled(*stages.voxelSize, stages.minPointsPerVoxel, stream);
  out.points = std::move(points);
  return out;
}

void FrameLoop::synchronize() {
  if (!state_) return;
  for (Stream& s : state_->streams) s.waitForCompletion();
}

const PipelineStages& FrameLoop::stages() const {
  if (!state_) throw Error(ErrorCode::InvalidState, "FrameLoop::stages: the loop was moved from");
  return state_->stages;
}

ComputeDevice FrameLoop::device() const { return state_ ? state_->device : ComputeDevice(); }

int FrameLoop::framesInFlight() const { return state_ ? static_cast<int>(state_->streams.size()) : 0; }

std::size_t FrameLoop::submitted() const { return state_ ? state_->submitted.load() : 0; }

}  // namespace devicearray

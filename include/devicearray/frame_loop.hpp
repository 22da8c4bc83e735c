// devicearray — FrameLoop: the frame pipeline of frame_pipeline.hpp run on a stream of
// camera frames with several frames in flight. Each frame's upload, stages and results
// are enqueued on a stream of its own and never wait for the device, so the upload of one
// frame overlaps the stages of the ones before it; the host waits only when every slot is
// taken, for the oldest frame. The results stay on the device, for the caller's own work
// on the frame's stream (a kernel, a DLPack hand-off, a download).
#pragma once

#include <cstddef>
#include <memory>

#include "devicearray/device.hpp"
#include "devicearray/device_array.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/host_point_cloud.hpp"
#include "devicearray/point_cloud.hpp"
#include "devicearray/stream.hpp"

namespace devicearray {

/// One frame submitted to a FrameLoop: its results, still being computed on `stream`.
/// The arrays are the frame's own (a later frame never writes them), so they stay valid
/// as long as the caller holds them.
struct LoopFrame {
  std::size_t index = 0;  ///< 0 for the first frame submitted to the loop
  /// Every piece of the frame's work is enqueued here, in order. Enqueue the frame's
  /// consumers on it (or wait for it) before reading the results on the host or from
  /// another stream.
  Stream stream;
  /// The organized result (when the stages keep the grid); empty otherwise.
  PointCloud cloud;
  /// The organized result's normals (--normals and an organized result); empty otherwise.
  DeviceArray<NormalXYZ> normals;
  /// The unorganized result (PipelineStages::unorganizes()), with the grid's normals when
  /// the stages compute them. Its point count stays on the device until a call needs it
  /// (UnorganizedPointCloud's "point count known after an event").
  UnorganizedPointCloud points;
  /// Whether the result is `cloud` (true) or `points` (false).
  bool isOrganized() const noexcept { return !cloud.isEmpty(); }
};

/// Runs `stages` on organized camera frames as they arrive, up to framesInFlight() of
/// them at once, each on its own stream (one per slot, reused in turn).
///
/// submit() enqueues a frame's upload and stages and returns its LoopFrame without
/// waiting for the device, except when every slot is taken: it then first waits for the
/// frame submitted framesInFlight() calls earlier. (The outlier stages of the unorganized
/// cloud are the exception: they need its point count on the host, so with them submit()
/// also waits for the frame's stages up to the unorganize.) The stages are those of runPipeline()
/// in the same order, on the same device code, so the points (and colours, SNR values)
/// are the ones runPipeline() gives for the same frame. What differs, because the
/// results stay on the device and are not tidied on the host:
/// - input normals are not uploaded: the normals are the ones --normals computes;
/// - the normals follow a transform as A^-T n without renormalization, so they stay
///   unit length only for a rigid transform; a voxel's normal is the normalized mean of
///   its points' normals;
/// - the organized normals array is the grid's as computed: where the ROI later made a
///   point missing, the normal stays (runPipeline() writes NaN there);
/// - points a transform makes non-finite stay in an organized result as they are (an
///   unorganized one leaves them out, as runPipeline() does).
///
/// Host memory: a frame's arrays are read in stream order, after submit() returns. They
/// must stay alive and unchanged until the frame's upload has run: until its stream
/// completes, until the submit() that reuses its slot returns, or until synchronize().
/// Page-locked frames (HostMat::pinned) go straight to the copy engine; pageable ones
/// are staged through page-locked buffers by host threads, which bounds the rate the
/// loop can reach (docs/frame-pipeline.md).
///
/// Not thread-safe: one thread submits (frames are ordered by their submission).
class FrameLoop {
 public:
  /// Throws what stages.validate() throws, and InvalidArgument for an invalid device or
  /// framesInFlight outside [1, 64]. Creates the streams; no device work.
  FrameLoop(const PipelineStages& stages, const ComputeDevice& device, int framesInFlight = 3);
  /// Waits for every frame in flight (their host arrays may be freed afterwards).
  ~FrameLoop();
  FrameLoop(const FrameLoop&) = delete;
  FrameLoop& operator=(const FrameLoop&) = delete;
  /// Takes `other`'s streams and frames; `other` is left empty (framesInFlight() 0,
  /// submit() throws InvalidState).
  FrameLoop(FrameLoop&& other) noexcept;
  /// Waits for this loop's frames, then takes `other`'s.
  FrameLoop& operator=(FrameLoop&& other) noexcept;

  /// Enqueues an organized host cloud (its rgba as sRGB codes, its snr; its normals are
  /// not uploaded). Throws InvalidArgument when the cloud fails validate(), is
  /// unorganized, lacks SNR values for --snr-threshold, or is smaller than the
  /// downsample block (all checked before anything is enqueued); and the device
  /// operations' errors. After a throw the frame's enqueued work has completed (so its
  /// host arrays may be freed), submitted() is unchanged, and the loop stays usable.
  LoopFrame submit(const HostPointCloud& frame);
  /// Enqueues a frame given as host arrays of one height × width: `xyz` of type
  /// makeType(Depth::F32, 3) (millimetres, NaN = missing), `colors` empty or
  /// makeType(Depth::U8, 4) (sRGB codes), `snrs` empty or makeType(Depth::F32, 1). Any
  /// strides; page-locked memory (HostMat::pinned) is transferred without staging.
  /// Throws InvalidArgument for arrays of other types, shapes or sizes, and as above.
  LoopFrame submit(const HostMat& xyz, const HostMat& colors = HostMat(), const HostMat& snrs = HostMat());

  /// Blocks until the work of every submitted frame has completed.
  void synchronize();

  /// The stages it runs (InvalidState for a moved-from loop).
  const PipelineStages& stages() const;
  /// Its device (invalid for a moved-from loop).
  ComputeDevice device() const;
  /// Frames (streams) in flight at most; 0 for a moved-from loop.
  int framesInFlight() const;
  /// Frames submitted so far (the next frame's index).
  std::size_t submitted() const;

 private:
  struct State;
  /// The upload and the stages of frame `index` on `stream` (its slot's).
  static LoopFrame enqueueFrame(State& s, Stream& stream, std::size_t index, const HostMat& xyz, const HostMat& colors,
                                const HostMat& snrs);
  std::unique_ptr<State> state_;
};

}  // namespace devicearray

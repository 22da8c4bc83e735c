// FrameLoop (devicearray/frame_loop.hpp): frames in flight give, frame by frame, the
// points runPipeline() gives for the same frame and stages (its host download is the
// independent reference: a blocking run, one stage at a time); earlier frames' results
// survive later frames; page-locked and pageable frames agree; bad frames and loops are
// refused before anything is enqueued, and the loop goes on. Every device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "devicearray/frame_loop.hpp"
#include "devicearray/synthetic_scene.hpp"
#include "test_support.hpp"

using devicearray::Depth;
using devicearray::ErrorCode;
using devicearray::FrameLoop;
using devicearray::HostMat;
using devicearray::HostPointCloud;
using devicearray::LoopFrame;
using devicearray::makeType;
using devicearray::PipelineStages;

namespace {

constexpr const char* kRigid = "0.8660254,-0.5,0,10,0.5,0.8660254,0,-20,0,0,1,30,0,0,0,1";
/// A box that keeps part of the synthetic scene (the floor in front of the camera).
constexpr const char* kRoi = "-300,-300,0,300,-300,0,-300,300,0,0,2000";

HostPointCloud scene(std::uint64_t seed, int width = 96, int height = 72) {
  devicearray::SynthOptions options;
  options.camera = devicearray::PinholeCamera::withFieldOfView(width, height, 60.0);
  options.seed = seed;
  return devicearray::synthesizeScene(options);
}

PipelineStages stagesOf(const std::vector<std::string>& args) { return PipelineStages::parse(args); }

bool sameFloat(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// The frame's result downloaded (after its stream), as runPipeline() downloads it.
HostPointCloud downloaded(LoopFrame& f) {
  f.stream.waitForCompletion();
  return f.isOrganized() ? f.cloud.toHost() : f.points.toHost();
}

/// Expects `got` to hold the points, colours and SNR values of `expected` exactly, and
/// its normals (when `expected` has some) within `tolerance` at every valid point.
void expectSameCloud(const HostPointCloud& got, const HostPointCloud& expected, float tolerance = 1e-5f) {
  ASSERT_EQ(got.height, expected.height);
  ASSERT_EQ(got.width, expected.width);
  ASSERT_EQ(got.size(), expected.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < got.xyz.size(); ++i) differing += sameFloat(got.xyz[i], expected.xyz[i]) ? 0 : 1;
  EXPECT_EQ(differing, 0u) << "xyz values differ";
  EXPECT_EQ(got.rgba, expected.rgba);
  ASSERT_EQ(got.snr.size(), expected.snr.size());
  for (std::size_t i = 0; i < got.snr.size(); ++i) ASSERT_TRUE(sameFloat(got.snr[i], expected.snr[i])) << i;
  if (!expected.hasNormals()) return;
  ASSERT_EQ(got.normals.size(), expected.normals.size());
  std::size_t compared = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!expected.isValid(i) || !std::isfinite(expected.normals[3 * i])) continue;
    const float* n = &got.normals[3 * i];
    const double len = std::sqrt(double(n[0]) * n[0] + double(n[1]) * n[1] + double(n[2]) * n[2]);
    for (int a = 0; a < 3; ++a)
      ASSERT_NEAR(n[a] / len, expected.normals[3 * i + a], tolerance) << "normal of point " << i;
    ++compared;
  }
  EXPECT_GT(compared, got.size() / 4) << "too few normals to compare";
}

class FrameLoopTest : public datest::DeviceTest {};

TEST_P(FrameLoopTest, EachFrameGivesThePointsOfRunPipeline) {
  const HostPointCloud frame = scene(3);
  const std::vector<std::vector<std::string>> optionSets = {
      {},
      {"--downsample", "2x2", "--normals", "--normal-window", "5", "--transform", kRigid},
      {"--snr-threshold", "4", "--downsample", "2x2", "--roi", kRoi},
      {"--downsample", "2x2", "--transform", kRigid, "--roi", kRoi, "--unorganize"},
      {"--downsample", "2x2", "--normals", "--transform", kRigid, "--voxel", "12"},
      // The plane fit skips the points the ROI removes, in the loop as in runPipeline.
      {"--downsample", "2x2", "--normals", "--normal-window", "5", "--transform", kRigid, "--roi", kRoi, "--voxel",
       "12"},
      {"--smooth", "1.5", "--fill-holes", "3", "--voxel", "20", "--min-points", "2"},
  };
  for (const auto& options : optionSets) {
    std::string joined;
    for (const std::string& o : options) joined += o + " ";
    SCOPED_TRACE(joined);
    const PipelineStages stages = stagesOf(options);
    const HostPointCloud expected = devicearray::runPipeline(frame, stages, device()).cloud;
    FrameLoop loop(stages, device(), 2);
    LoopFrame f = loop.submit(frame);
    EXPECT_EQ(f.index, 0u);
    EXPECT_EQ(f.isOrganized(), !stages.unorganizes());
    HostPointCloud got = downloaded(f);
    EXPECT_EQ(got.hasNormals(), stages.normals && !f.isOrganized());  // the unorganized cloud carries them
    if (stages.normals && f.isOrganized()) {
      ASSERT_EQ(f.normals.height(), f.cloud.height());
      for (const auto& v : f.normals.toHost()) got.normals.insert(got.normals.end(), {v.x, v.y, v.z});
    }
    // A voxel's normal is a float mean on the device, a double one in runPipeline.
    expectSameCloud(got, expected, stages.voxelSize ? 2e-4f : 1e-5f);
  }
}

TEST_P(FrameLoopTest, EarlierFramesSurviveTheFramesAfterThem) {
  const PipelineStages stages = stagesOf({"--downsample", "2x2", "--transform", kRigid, "--voxel", "10"});
  std::vector<HostPointCloud> frames;
  for (std::uint64_t seed = 1; seed <= 7; ++seed) frames.push_back(scene(seed));
  FrameLoop loop(stages, device(), 2);
  EXPECT_EQ(loop.framesInFlight(), 2);
  std::vector<LoopFrame> results;
  for (const HostPointCloud& frame : frames) results.push_back(loop.submit(frame));
  EXPECT_EQ(loop.submitted(), frames.size());
  loop.synchronize();
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    EXPECT_EQ(results[i].index, i);
    EXPECT_TRUE(results[i].stream.queryIfComplete());
    expectSameCloud(downloaded(results[i]), devicearray::runPipeline(frames[i], stages, device()).cloud);
  }
  // Two slots, used in turn.
  EXPECT_EQ(results[0].stream.handle().native(), results[2].stream.handle().native());
  EXPECT_NE(results[0].stream.handle().native(), results[1].stream.handle().native());
}

TEST_P(FrameLoopTest, PageLockedAndStridedFramesGiveTheSameResult) {
  const HostPointCloud frame = scene(5);
  const PipelineStages stages = stagesOf({"--snr-threshold", "3", "--downsample", "2x2", "--roi", kRoi});
  FrameLoop loop(stages, device(), 3);
  LoopFrame fromCloud = loop.submit(frame);

  const HostMat::SizeArray size{frame.height, frame.width};
  HostMat xyz = HostMat::pinned(size, makeType(Depth::F32, 3));
  HostMat colors = HostMat::pinned(size, makeType(Depth::U8, 4));
  std::memcpy(xyz.data(), frame.xyz.data(), frame.xyz.size() * sizeof(float));
  std::memcpy(colors.data(), frame.rgba.data(), frame.rgba.size());
  // SNR in rows padded by 5 values: a strided host view.
  const std::size_t pitch = static_cast<std::size_t>(frame.width) + 5;
  std::vector<float> padded(pitch * static_cast<std::size_t>(frame.height), -1.0f);
  for (int y = 0; y < frame.height; ++y)
    std::memcpy(&padded[pitch * y], &frame.snr[static_cast<std::size_t>(y) * frame.width], frame.width * sizeof(float));
  const HostMat snrs(size, makeType(Depth::F32, 1), padded.data(), {pitch * sizeof(float), sizeof(float)});
  LoopFrame fromMats = loop.submit(xyz, colors, snrs);
  EXPECT_EQ(fromMats.index, 1u);
  expectSameCloud(downloaded(fromMats), downloaded(fromCloud));
  expectSameCloud(downloaded(fromCloud), devicearray::runPipeline(frame, stages, device()).cloud);
}

TEST_P(FrameLoopTest, RefusesBadLoopsAndFramesAndGoesOn) {
  const PipelineStages stages = stagesOf({"--snr-threshold", "2", "--downsample", "4x4"});
  datest::expectError(ErrorCode::InvalidArgument, [&] { FrameLoop(stages, device(), 0); }, "0 frames in flight");
  datest::expectError(ErrorCode::InvalidArgument, [&] { FrameLoop(stages, device(), 65); }, "65 frames in flight");
  datest::expectError(ErrorCode::InvalidArgument, [&] { FrameLoop(stages, devicearray::ComputeDevice(), 2); },
                      "invalid device");
  PipelineStages bad;
  bad.minPointsPerVoxel = 3;  // without a voxel size
  datest::expectError(ErrorCode::InvalidArgument, [&] { FrameLoop(bad, device(), 2); }, "invalid stages");

  FrameLoop loop(stages, device(), 2);
  const HostPointCloud frame = scene(9, 32, 24);
  HostPointCloud noSnr = frame;
  noSnr.snr.clear();
  HostPointCloud tiny = scene(9, 3, 3);
  HostPointCloud unorganized = frame;
  unorganized.height = unorganized.width = 0;
  HostPointCloud mismatched = frame;
  mismatched.rgba.resize(8);
  const auto refused = [&](const char* what, auto&& submit, const char* mentions) {
    SCOPED_TRACE(what);
    try {
      (void)submit();
      ADD_FAILURE() << "accepted";
    } catch (const devicearray::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
  };
  refused("no SNR", [&] { return loop.submit(noSnr); }, "--snr-threshold needs SNR");
  refused("smaller than the block", [&] { return loop.submit(tiny); }, "at least 4 rows and columns");
  refused("unorganized", [&] { return loop.submit(unorganized); }, "unorganized");
  refused("colours of another size", [&] { return loop.submit(mismatched); }, "rgba");

  std::vector<float> values(frame.xyz);
  const HostMat::SizeArray size{frame.height, frame.width};
  const HostMat xyz(size, makeType(Depth::F32, 3), values.data());
  const HostMat snr(size, makeType(Depth::F32, 1), const_cast<float*>(frame.snr.data()));
  refused("empty xyz", [&] { return loop.submit(HostMat(), HostMat(), snr); }, "xyz is empty");
  refused("xyz of one channel", [&] { return loop.submit(HostMat(size, makeType(Depth::F32, 1), values.data()), HostMat(), snr); },
          "type F32C3, not F32C1");
  refused("xyz of three axes",
          [&] { return loop.submit(HostMat({frame.height, frame.width, 3}, makeType(Depth::F32, 1), values.data())); },
          "2-D");
  refused("SNR of another size",
          [&] { return loop.submit(xyz, HostMat(), HostMat({frame.height - 1, frame.width}, makeType(Depth::F32, 1),
                                                             const_cast<float*>(frame.snr.data()))); },
          "snrs is 23 x 32; xyz is 24 x 32");
  refused("colours of doubles",
          [&] { return loop.submit(xyz, HostMat(size, makeType(Depth::F64, 1)), snr); }, "type U8C4");
  EXPECT_EQ(loop.submitted(), 0u);

  // The loop goes on: a good frame gives runPipeline's points.
  LoopFrame f = loop.submit(frame);
  EXPECT_EQ(f.index, 0u);
  expectSameCloud(downloaded(f), devicearray::runPipeline(frame, stages, device()).cloud);
}

TEST_P(FrameLoopTest, MovedFromLoopIsEmptyAndRefusesFrames) {
  FrameLoop a(stagesOf({"--downsample", "2x2"}), device(), 2);
  const HostPointCloud frame = scene(2, 16, 12);
  (void)a.submit(frame);
  FrameLoop b(std::move(a));
  EXPECT_EQ(b.submitted(), 1u);
  EXPECT_EQ(a.framesInFlight(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  datest::expectError(ErrorCode::InvalidState, [&] { (void)a.submit(frame); }, "moved-from submit");
  LoopFrame f = b.submit(frame);
  EXPECT_EQ(f.index, 1u);
  EXPECT_EQ(downloaded(f).width, 8);
}

/// toUnorganizedPointCloud(normals): the normals go with their points (a host
/// compaction of the same grids is the reference), and only the cloud's own normals are
/// taken.
TEST_P(FrameLoopTest, OrganizedResultKeepsThePlaneFitWhereTheRoiRemovedAPoint) {
  // An organized result hands out the grid's normals as fitted: the plane fit is not
  // restricted to the ROI there, so a point the ROI removed keeps its (rotated) normal.
  const HostPointCloud frame = scene(5);
  const PipelineStages stages =
      stagesOf({"--downsample", "2x2", "--normals", "--normal-window", "5", "--transform", kRigid, "--roi", kRoi});
  FrameLoop loop(stages, device(), 2);
  LoopFrame f = loop.submit(frame);
  loop.synchronize();
  ASSERT_TRUE(f.isOrganized());
  const HostPointCloud kept = f.cloud.toHost();
  const std::vector<devicearray::NormalXYZ> got = f.normals.toHost();
  devicearray::PointCloud grid = devicearray::PointCloud::fromHost(frame, device());
  grid.downsample(devicearray::Downsampling::by2x2);
  const HostPointCloud all = grid.toHost();
  const std::vector<devicearray::NormalXYZ> fitted = grid.deviceNormalsXYZ(5, device().sdkStreamOrQueue()).toHost();
  ASSERT_EQ(got.size(), fitted.size());
  const double c = 0.8660254, s = 0.5;  // kRigid's rotation about z
  std::size_t removedWithNormal = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!all.isValid(i) || kept.isValid(i) || std::isnan(fitted[i].x)) continue;
    ++removedWithNormal;  // removed by the ROI, fitted on the grid
    ASSERT_FALSE(std::isnan(got[i].x)) << "point " << i << " lost its normal";
    EXPECT_NEAR(got[i].x, c * fitted[i].x - s * fitted[i].y, 1e-5) << i;
    EXPECT_NEAR(got[i].y, s * fitted[i].x + c * fitted[i].y, 1e-5) << i;
    EXPECT_NEAR(got[i].z, fitted[i].z, 1e-5) << i;
  }
  EXPECT_GT(removedWithNormal, got.size() / 10) << "the ROI removes a good part of the grid";
}

TEST_P(FrameLoopTest, UnorganizeCarriesTheGridNormals) {
  const HostPointCloud frame = scene(4, 40, 30);
  const devicearray::PointCloud cloud = devicearray::PointCloud::fromHost(frame, device());
  const devicearray::DeviceArray<devicearray::NormalXYZ> normals = cloud.deviceNormalsXYZ(device().sdkStreamOrQueue());
  devicearray::synchronizeStream(device().sdkStreamOrQueue());
  const std::vector<devicearray::NormalXYZ> grid = normals.toHost();
  std::vector<float> expected;
  for (std::size_t i = 0; i < frame.size(); ++i)
    if (frame.isValid(i)) expected.insert(expected.end(), {grid[i].x, grid[i].y, grid[i].z});

  devicearray::Stream stream(device());
  for (const bool onStream : {false, true}) {
    SCOPED_TRACE(onStream ? "stream" : "blocking");
    const devicearray::UnorganizedPointCloud points =
        onStream ? cloud.toUnorganizedPointCloud(normals, stream) : cloud.toUnorganizedPointCloud(normals);
    ASSERT_EQ(points.size(), frame.validCount());
    ASSERT_TRUE(points.hasNormals());
    const std::vector<devicearray::NormalXYZ> got = points.storedNormals().toHost();
    ASSERT_EQ(3 * got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(sameFloat(got[i].x, expected[3 * i]) && sameFloat(got[i].y, expected[3 * i + 1]) &&
                  sameFloat(got[i].z, expected[3 * i + 2]))
          << i;
    }
  }
  const auto other = devicearray::DeviceArray<devicearray::NormalXYZ>::allocate(29, 40, device());
  datest::expectError(ErrorCode::InvalidArgument, [&] { (void)cloud.toUnorganizedPointCloud(other); }, "29 x 40");
  datest::expectError(ErrorCode::InvalidArgument,
                      [&] { (void)cloud.toUnorganizedPointCloud(devicearray::DeviceArray<devicearray::NormalXYZ>()); },
                      "empty normals");
  datest::expectError(ErrorCode::InvalidState,
                      [&] { (void)devicearray::PointCloud().toUnorganizedPointCloud(normals, stream); }, "empty cloud");
}

DATEST_INSTANTIATE_OVER_DEVICES(FrameLoopTest);

}  // namespace

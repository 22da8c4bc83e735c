// The frame pipeline (devicearray/frame_pipeline.hpp): PipelineStages::parse takes the
// stage options of `devicearray process` and refuses every malformed one with a clear
// message; runPipeline and processPlyFile give, on every device, the very bytes that
// `devicearray process` writes for the same options.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "test_support.hpp"

using devicearray::Downsampling;
using devicearray::ErrorCode;
using devicearray::HostPointCloud;
using devicearray::PipelineResult;
using devicearray::PipelineRunOptions;
using devicearray::PipelineStages;
using devicearray::PlyFormat;

namespace {

constexpr const char* kRigid = "0.8660254,-0.5,0,10,0.5,0.8660254,0,-20,0,0,1,30,0,0,0,1";
constexpr const char* kWideRoi = "-2000,-2000,0,2000,-2000,0,-2000,2000,0,0,5000";

/// parse(args) must fail with InvalidArgument whose message contains `mentions`.
void expectRefused(const std::vector<std::string>& args, const std::string& mentions) {
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  try {
    (void)PipelineStages::parse(args);
    ADD_FAILURE() << "parse accepted: " << joined;
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << joined;
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos)
        << "expected '" << mentions << "' in: " << e.what() << " (args: " << joined << ")";
  }
}

TEST(PipelineStagesParse, NoOptionsRunNoStage) {
  const PipelineStages s = PipelineStages::parse({});
  EXPECT_EQ(s, PipelineStages{});
  EXPECT_EQ(s.stageCount(), 0);
  EXPECT_FALSE(s.needsOrganizedInput());
  EXPECT_FALSE(s.unorganizes());
  EXPECT_TRUE(s.toArguments().empty());
}

TEST(PipelineStagesParse, EachOption) {
  EXPECT_EQ(PipelineStages::parse({"--downsample", "2x2"}).downsample, Downsampling::by2x2);
  EXPECT_EQ(PipelineStages::parse({"--downsample=3x3"}).downsample, Downsampling::by3x3);
  EXPECT_EQ(PipelineStages::parse({"--downsample", "4x4"}).downsample, Downsampling::by4x4);
  EXPECT_TRUE(PipelineStages::parse({"--normals"}).normals);
  EXPECT_TRUE(PipelineStages::parse({"--unorganize"}).unorganize);

  const PipelineStages t = PipelineStages::parse({"--transform", kRigid});
  ASSERT_TRUE(t.transform.has_value());
  EXPECT_EQ((*t.transform)[0], 0.8660254f);
  EXPECT_EQ((*t.transform)[3], 10.0f);
  EXPECT_EQ((*t.transform)[11], 30.0f);
  // Whitespace separates as well as commas.
  EXPECT_EQ(PipelineStages::parse({"--transform", "0.8660254 -0.5 0 10  0.5 0.8660254 0 -20\n0 0 1 30 0 0 0 1"}), t);

  const PipelineStages r = PipelineStages::parse({std::string("--roi=") + kWideRoi});
  ASSERT_TRUE(r.roi.has_value());
  EXPECT_EQ(r.roi->origin.x, -2000.0f);
  EXPECT_EQ(r.roi->pointA.x, 2000.0f);
  EXPECT_EQ(r.roi->pointB.y, 2000.0f);
  EXPECT_EQ(r.roi->minExtent, 0.0f);
  EXPECT_EQ(r.roi->maxExtent, 5000.0f);
  EXPECT_EQ(PipelineStages::parse({"--roi", kWideRoi}), r);
  EXPECT_TRUE(r.needsOrganizedInput());

  const PipelineStages v = PipelineStages::parse({"--voxel", "2.5", "--min-points", "3"});
  EXPECT_EQ(v.voxelSize, 2.5f);
  EXPECT_EQ(v.minPointsPerVoxel, 3);
  EXPECT_FALSE(v.unorganize);  // as given; the voxel stage implies it
  EXPECT_TRUE(v.unorganizes());
  EXPECT_EQ(v.stageCount(), 2);

  const PipelineStages all = PipelineStages::parse({"--downsample", "2x2", "--normals", "--transform", kRigid, "--roi",
                                                    kWideRoi, "--unorganize", "--voxel", "10"});
  EXPECT_EQ(all.stageCount(), 6);
}

TEST(PipelineStagesParse, CameraFilterOptions) {
  const PipelineStages s = PipelineStages::parse({"--snr-threshold=-1.5", "--remove-outliers", "20", "--smooth", "1.5",
                                                  "--smooth-radius", "4", "--fill-holes=3", "--max-depth-step", "7"});
  EXPECT_EQ(s.snrThreshold, -1.5f);
  EXPECT_EQ(s.outlierDistance, 20.0f);
  EXPECT_EQ(s.smoothingSigma, 1.5f);
  EXPECT_EQ(s.smoothingRadius, 4);
  EXPECT_EQ(s.maxHoleSize, 3);
  EXPECT_EQ(s.maxDepthStep, 7.0f);
  EXPECT_EQ(s.stageCount(), 4);
  EXPECT_TRUE(s.needsOrganizedInput());
  EXPECT_EQ(PipelineStages::parse(s.toArguments()), s);
  EXPECT_EQ(PipelineStages::parse({"--smooth", "2"}).maxDepthStep, 10.0f);

  expectRefused({"--snr-threshold", "nan"}, "--snr-threshold 'nan' is not a finite number");
  expectRefused({"--remove-outliers", "-1"}, "--remove-outliers -1 must be a finite distance >= 0");
  expectRefused({"--smooth", "0"}, "--smooth 0 must be a finite sigma > 0");
  expectRefused({"--smooth-radius", "2"}, "--smooth-radius needs --smooth");
  expectRefused({"--smooth", "1", "--smooth-radius", "16"}, "--smooth-radius '16' must be an integer in 0..15");
  expectRefused({"--fill-holes", "0"}, "--fill-holes '0' must be an integer in 1..1024");
  expectRefused({"--fill-holes", "2x"}, "--fill-holes '2x'");
  expectRefused({"--max-depth-step", "5"}, "--max-depth-step needs --smooth or --fill-holes");
  expectRefused({"--fill-holes", "2", "--max-depth-step", "-5"}, "--max-depth-step -5 must be a finite distance");
  expectRefused({"--smooth", "1", "--smooth", "2"}, "--smooth is given twice");

  PipelineStages built;
  built.maxHoleSize = 2000;
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "hole size out of range");
  built.maxHoleSize.reset();
  built.maxDepthStep = 3;
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "depth step without a filter");
}

TEST(PipelineStagesParse, NormalWindowChoosesThePlaneFit) {
  const PipelineStages s = PipelineStages::parse({"--normals", "--normal-window", "5"});
  EXPECT_TRUE(s.normals);
  EXPECT_EQ(s.normalWindow, 5);
  EXPECT_EQ(s.stageCount(), 1);  // one normals stage, whichever way it estimates them
  EXPECT_EQ(PipelineStages::parse(s.toArguments()), s);
  EXPECT_EQ(s.toArguments(), (std::vector<std::string>{"--normals", "--normal-window", "5"}));
  EXPECT_EQ(PipelineStages::parse({"--normals"}).normalWindow, 0);
  EXPECT_FALSE(PipelineStages::parse({"--normals", "--normal-window=7"}) == s);

  expectRefused({"--normal-window", "5"}, "--normal-window needs --normals");
  expectRefused({"--normals", "--normal-window", "4"}, "--normal-window 4 must be odd and in 3..15");
  expectRefused({"--normals", "--normal-window", "17"}, "--normal-window '17' must be an integer in 3..15");
  expectRefused({"--normals", "--normal-window", "1"}, "--normal-window '1' must be an integer in 3..15");

  PipelineStages built;
  built.normalWindow = 5;
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "window without normals");
  built.normals = true;
  built.normalWindow = 9;
  EXPECT_NO_THROW(built.validate());
  built.normalWindow = -3;
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "negative window");
}

TEST(PipelineStagesParse, TransformFromAFileWithComments) {
  const fs::path file = tempDir() / "rigid.txt";
  {
    std::ofstream f(file);
    f << "# rotation about z by 30 degrees, then a shift\n"
         "0.8660254 -0.5 0 10\n0.5 0.8660254 0 -20  # second row\n0 0 1 30\n0 0 0 1\n";
  }
  EXPECT_EQ(PipelineStages::parse({"--transform", file.string()}), PipelineStages::parse({"--transform", kRigid}));
}

TEST(PipelineStagesParse, MalformedOptionsAreRefusedWithTheirName) {
  expectRefused({"--fast"}, "'--fast' is not a stage option");
  expectRefused({"2x2"}, "not a stage option");
  expectRefused({"--normals", "--normals"}, "--normals is given twice");
  expectRefused({"--voxel", "5", "--voxel=6"}, "--voxel is given twice");
  expectRefused({"--voxel"}, "--voxel needs a value");
  expectRefused({"--normals=yes"}, "--normals takes no value");
  expectRefused({"--downsample", "5x5"}, "--downsample '5x5' is not one of 2x2, 3x3, 4x4");
}

TEST(PipelineStagesParse, BadTransformsAreRefusedAsTheCommandRefusesThem) {
  expectRefused({"--transform", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0"}, "expected 16 numbers, got 15");
  expectRefused({"--transform", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,1,1"}, "0 0 0 1");
  expectRefused({"--transform", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,x1"}, "'x1'");
  expectRefused({"--transform", "no_such_matrix.txt"}, "neither a readable file");
  expectRefused({"--transform", ""}, "--transform is empty");
  expectRefused({"--transform", "1e39,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1"}, "element 0 (1e+39) does not fit a float");
  expectRefused({"--normals", "--transform", "1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,1"}, "singular");
  // Without normals a singular (flattening) transform is fine.
  EXPECT_TRUE(PipelineStages::parse({"--transform", "1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,1"}).transform.has_value());
  const fs::path binary = tempDir() / "matrix.bin";
  {
    std::ofstream f(binary, std::ios::binary);
    f.write("1,0\0\x01\x1b[2J", 9);
  }
  expectRefused({"--transform", binary.string()}, "is not a text file (byte 3 is \\x00)");
}

TEST(PipelineStagesParse, BadBoxesVoxelsAndCountsAreRefused) {
  expectRefused({"--roi=0,0,0,1,0,0,2,0,0,0,10"}, "collinear");
  // Nearly collinear: refused here as maskByRegionOfInterest would refuse it later.
  expectRefused({"--roi=0,0,0,1000,0,0,2000,0.0000001,0,0,10"}, "collinear");
  expectRefused({"--roi=0,0,0,1,0,0,0,1,0,10,0"}, "greater than max");
  expectRefused({"--roi=1,2,3"}, "expected 11 numbers, got 3");
  expectRefused({"--roi=0,0,0,1e39,0,0,0,1,0,0,10"}, "does not fit a float");
  expectRefused({"--voxel", "0"}, "--voxel 0 must be a finite size > 0");
  expectRefused({"--voxel", "-3"}, "--voxel -3");
  expectRefused({"--voxel", "1e-50"}, "--voxel 1e-50");
  expectRefused({"--voxel", "abc"}, "--voxel 'abc' is not a number");
  expectRefused({"--min-points", "3"}, "--min-points needs --voxel");
  expectRefused({"--voxel", "5", "--min-points", "0"}, "--min-points '0' must be an integer in 1..");
  expectRefused({"--voxel", "5", "--min-points", "-2"}, "--min-points '-2'");
  expectRefused({"--voxel", "5", "--min-points", "99999999999"}, "--min-points '99999999999'");
}

TEST(PipelineStagesParse, UnorganizedOutlierOptions) {
  const PipelineStages s = PipelineStages::parse({"--statistical-outliers", "20,2.5", "--radius-outliers=4.5,3"});
  ASSERT_TRUE(s.statisticalOutliers && s.radiusOutliers);
  EXPECT_EQ(s.statisticalOutliers->neighbours, 20);
  EXPECT_EQ(s.statisticalOutliers->stdRatio, 2.5f);
  EXPECT_EQ(s.radiusOutliers->radius, 4.5f);
  EXPECT_EQ(s.radiusOutliers->minPoints, 3);
  EXPECT_TRUE(s.unorganizes());
  EXPECT_FALSE(s.needsOrganizedInput());
  EXPECT_EQ(s.stageCount(), 3);  // unorganize, statistical, radius
  EXPECT_EQ(PipelineStages::parse(s.toArguments()), s);
  // The option's value, and what the message says about it.
  const std::pair<std::string, std::string> statistical[] = {
      {"20", "--statistical-outliers '20' must be K,RATIO"},
      {"20,2,1", "must be K,RATIO"},
      {"0,2", "--statistical-outliers neighbours '0' must be an integer in 1..32"},
      {"33,2", "in 1..32"},
      {"20,-1", "ratio -1 must be finite and >= 0"},
      {"20,x", "--statistical-outliers ratio 'x' is not a finite number"}};
  for (const auto& [value, message] : statistical) expectRefused({"--statistical-outliers", value}, message);
  const std::pair<std::string, std::string> radius[] = {
      {"5", "--radius-outliers '5' must be MM,N"},
      {"0,3", "radius 0 must be a finite distance > 0"},
      {"5,0", "--radius-outliers points '0' must be an integer in 1.."}};
  for (const auto& [value, message] : radius) expectRefused({"--radius-outliers", value}, message);
  expectRefused({"--radius-outliers", "5,3", "--radius-outliers", "5,3"}, "--radius-outliers is given twice");
  PipelineStages built;
  built.statisticalOutliers = devicearray::StatisticalOutlierStage{40, 2.0f};
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "40 neighbours in code");
  built.statisticalOutliers.reset();
  built.radiusOutliers = devicearray::RadiusOutlierStage{std::nanf(""), 2};
  datest::expectError(ErrorCode::InvalidArgument, [&] { built.validate(); }, "NaN radius in code");
}

TEST(PipelineStages, ValidateChecksValuesBuiltInCode) {
  PipelineStages s;
  s.minPointsPerVoxel = 2;
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "min points without a voxel");
  s.voxelSize = 4.0f;
  s.validate();
  s.minPointsPerVoxel = 0;
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "min points 0");
  s = PipelineStages{};
  s.voxelSize = std::nanf("");
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "NaN voxel");
  s = PipelineStages{};
  s.transform = devicearray::identityMatrix4x4();
  (*s.transform)[14] = 1.0f;
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "projective transform");
  s = PipelineStages{};
  s.roi = devicearray::RegionOfInterestBox{};
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "degenerate box");
  s = PipelineStages{};
  s.downsample = static_cast<Downsampling>(7);
  datest::expectError(ErrorCode::InvalidArgument, [&] { s.validate(); }, "downsample outside the enum");
}

TEST(PipelineStages, ToArgumentsReadsBackExactly) {
  const std::vector<std::vector<std::string>> cases = {
      {"--downsample", "3x3", "--normals"},
      {"--transform", "0.1,0.2,0.3,1e-7,0.4,0.5,0.6,-123.456789,0.7,0.8,0.9001,3,0,0,0,1"},
      {"--roi=-2000.125,-2000,0.1,2000,-2000,0,-2000,2000,0,0.3,5000", "--unorganize"},
      {"--voxel", "0.1", "--min-points", "7"},
      {"--downsample", "2x2", "--normals", "--transform", kRigid, "--roi", kWideRoi, "--voxel", "12.34"},
  };
  for (const auto& args : cases) {
    const PipelineStages s = PipelineStages::parse(args);
    EXPECT_EQ(PipelineStages::parse(s.toArguments()), s) << args[0];
  }
}

TEST(PipelineStages, CheckInputNamesTheCloud) {
  HostPointCloud grid;
  grid.height = 2;
  grid.width = 3;
  grid.xyz.assign(18, 1.0f);
  HostPointCloud flat;
  flat.xyz = {1, 2, 3, 4, 5, 6};
  HostPointCloud empty;
  empty.xyz.assign(3, std::nanf(""));
  const auto refused = [](const PipelineStages& s, const HostPointCloud& c, const std::string& mentions) {
    try {
      s.checkInput(c, "in.ply");
      ADD_FAILURE() << "accepted; expected " << mentions;
    } catch (const devicearray::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
    }
  };
  refused(PipelineStages{}, empty, "in.ply has no valid point");
  refused(PipelineStages::parse({"--normals"}), flat, "in.ply is unorganized");
  refused(PipelineStages::parse({"--fill-holes", "2"}), flat, "in.ply is unorganized");
  refused(PipelineStages::parse({"--snr-threshold", "2"}), grid, "--snr-threshold needs SNR values; in.ply has none");
  refused(PipelineStages::parse({"--downsample", "3x3"}), grid, "needs at least 3 rows and columns; in.ply is 2 x 3");
  PipelineStages::parse({"--downsample", "2x2"}).checkInput(grid, "in.ply");
  PipelineStages::parse({"--transform", kRigid, "--voxel", "1"}).checkInput(flat, "in.ply");
}

// ---------------------------------------------------------------- running ----

/// A small synthetic scene (64 x 48, with holes, colours and SNR).
devicearray::SynthOptions smallScene() {
  devicearray::SynthOptions options;
  options.camera = devicearray::PinholeCamera::withFieldOfView(64, 48, 60.0);
  options.seed = 7;
  return options;
}

class FramePipeline : public datest::DeviceTest {
 protected:
  static void SetUpTestSuite() {
    scene_ = devicearray::synthesizeScene(smallScene());
    devicearray::writePly(scenePath().string(), scene_);
  }
  static fs::path scenePath() { return tempDir() / "scene.ply"; }
  /// `devicearray process` on this device: the bytes of the file it writes.
  std::string processWithTheCommand(const std::string& options, const std::string& name) const {
    const std::string spec = std::string(isCuda() ? "cuda:" : "opencl:") + std::to_string(device().ordinal());
    const fs::path out = tempDir() / name;
    const Result r = run("process " + q(scenePath()) + " " + options + " --device " + spec + " -o " + q(out));
    EXPECT_EQ(r.status, 0) << r.err;
    return slurp(out);
  }
  static HostPointCloud scene_;
};
HostPointCloud FramePipeline::scene_;

/// Splits a command line's options at spaces (none of the test options holds one).
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

TEST_P(FramePipeline, WritesTheBytesOfTheProcessCommand) {
  REQUIRE_CLI();
  const std::vector<std::string> optionSets = {
      "",
      "--downsample 2x2 --normals",
      std::string("--normals --transform ") + kRigid,
      std::string("--roi=") + kWideRoi + " --unorganize --normals",
      "--normals --voxel 20 --min-points 2",
      std::string("--downsample 2x2 --normals --transform ") + kRigid + " --roi=" + kWideRoi + " --voxel 10",
      "--transform 1e37,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1",
      "--snr-threshold 3 --remove-outliers 25 --smooth 1.2 --fill-holes 4 --max-depth-step 15 --normals",
      "--normals --statistical-outliers 16,1 --radius-outliers 30,4 --voxel 15",
  };
  int n = 0;
  for (const std::string& options : optionSets) {
    SCOPED_TRACE(options);
    const std::string name = "case" + std::to_string(n++);
    const std::string expected = processWithTheCommand(options, name + "_cli.ply");
    ASSERT_FALSE(expected.empty());
    const PipelineStages stages = PipelineStages::parse(words(options));
    const fs::path out = tempDir() / (name + "_lib.ply");
    const PipelineResult r = devicearray::processPlyFile(scenePath().string(), out.string(), stages, device());
    EXPECT_EQ(slurp(out), expected);
    EXPECT_EQ(r.stages.front().stage, "read PLY");
    EXPECT_EQ(r.stages.back().stage, "write PLY");
    EXPECT_EQ(r.stages.size(), static_cast<std::size_t>(4 + stages.stageCount()));
    // runPipeline on the cloud in memory gives the same cloud.
    const PipelineResult inMemory = devicearray::runPipeline(scene_, stages, device());
    const fs::path again = tempDir() / (name + "_memory.ply");
    devicearray::writePly(again.string(), inMemory.cloud);
    EXPECT_EQ(slurp(again), expected);
    EXPECT_EQ(inMemory.nonFinitePoints, r.nonFinitePoints);
  }
}

TEST_P(FramePipeline, ReadsPcdAndXyzInputsAsTheSameCloud) {
  // The same cloud as PLY, PCD and XYZ: one output, byte for byte; the first row names the reader.
  const PipelineStages stages = PipelineStages::parse({"--downsample", "2x2", "--voxel", "10"});
  const fs::path pcd = tempDir() / "scene.pcd", xyz = tempDir() / "scene.xyz";
  devicearray::writePcd(pcd.string(), scene_, devicearray::PcdFormat::binary);
  const fs::path fromPly = tempDir() / "from_ply.ply", fromPcd = tempDir() / "from_pcd.ply";
  devicearray::processPlyFile(scenePath().string(), fromPly.string(), stages, device());
  const PipelineResult r = devicearray::processPlyFile(pcd.string(), fromPcd.string(), stages, device());
  EXPECT_EQ(r.stages.front().stage, "read PCD");
  EXPECT_EQ(slurp(fromPcd), slurp(fromPly));
  // XYZ has no SNR, so its cloud is another one; it is read as XYZ and its grid is lost.
  devicearray::writeXyz(xyz.string(), scene_);
  const PipelineStages unorganized = PipelineStages::parse({"--voxel", "10"});
  const PipelineResult x = devicearray::processPlyFile(xyz.string(), (tempDir() / "from_xyz.ply").string(),
                                                        unorganized, device());
  EXPECT_EQ(x.stages.front().stage, "read XYZ");
  EXPECT_GT(x.cloud.size(), 0u);
  EXPECT_EQ(devicearray::readStageName("/dev/stdin"), "read PLY");
  EXPECT_EQ(devicearray::readStageName("a.PCD"), "read PCD");
}

TEST_P(FramePipeline, WritesPcdAndXyzOutputsByTheirExtension) {
  // The cloud as the library's writers write it; the output used to be PLY whatever its name.
  const PipelineStages stages = PipelineStages::parse({"--downsample", "2x2", "--normals"});
  const HostPointCloud cloud = devicearray::runPipeline(scene_, stages, device()).cloud;
  const fs::path binaryPcd = tempDir() / "lib_expected.pcd", asciiPcd = tempDir() / "lib_expected_ascii.pcd",
                 xyz = tempDir() / "lib_expected.xyz", ply = tempDir() / "lib_expected.ply";
  devicearray::writePcd(binaryPcd.string(), cloud, devicearray::PcdFormat::binary);
  devicearray::writePcd(asciiPcd.string(), cloud, devicearray::PcdFormat::ascii);
  devicearray::writeXyz(xyz.string(), cloud);
  devicearray::writePly(ply.string(), cloud, PlyFormat::ascii);
  struct Case {
    std::string output;
    PlyFormat format;
    fs::path expected;
    const char* stage;
  };
  const Case cases[] = {
      {"lib.pcd", PlyFormat::binaryLittleEndian, binaryPcd, "write PCD"},
      {"lib_ascii.Pcd", PlyFormat::ascii, asciiPcd, "write PCD"},
      {"lib.xyz", PlyFormat::binaryLittleEndian, xyz, "write XYZ"},
      {"lib_ascii.xyz", PlyFormat::ascii, xyz, "write XYZ"},
      {"lib_ascii.txt", PlyFormat::ascii, ply, "write PLY"},
  };
  for (const Case& c : cases) {
    const fs::path out = tempDir() / c.output;
    const PipelineResult r = devicearray::processPlyFile(scenePath().string(), out.string(), stages, device(), c.format);
    EXPECT_EQ(slurp(out), slurp(c.expected)) << c.output;
    EXPECT_EQ(r.stages.back().stage, c.stage) << c.output;
    EXPECT_EQ(devicearray::writeStageName(out.string()), c.stage);
  }
  // PCD and XYZ have no big-endian form: refused before the input is even read.
  for (const char* output : {"big.pcd", "big.XYZ"}) {
    const fs::path out = tempDir() / output;
    try {
      (void)devicearray::processPlyFile((tempDir() / "no_such_input.ply").string(), out.string(), stages, device(),
                                        PlyFormat::binaryBigEndian);
      ADD_FAILURE() << output << " was written big-endian";
    } catch (const devicearray::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("format binary_big_endian: '" + out.string() + "' is written as "),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
  }
  EXPECT_NO_THROW(devicearray::checkPipelineOutput("big.ply", PlyFormat::binaryBigEndian));
  EXPECT_NO_THROW(devicearray::checkPipelineOutput("/dev/stdout", PlyFormat::binaryBigEndian));
}

TEST_P(FramePipeline, ReportsEveryStageInOrder) {
  const PipelineStages stages = PipelineStages::parse(
      {"--downsample", "2x2", "--normals", "--transform", kRigid, "--roi", kWideRoi, "--voxel", "10"});
  int done = 0;
  PipelineRunOptions options;
  options.stageDone = [&] { ++done; };
  const PipelineResult r = devicearray::runPipeline(scene_, stages, device(), options);
  std::vector<std::string> names;
  for (const auto& row : r.stages) names.push_back(row.stage);
  EXPECT_EQ(names, (std::vector<std::string>{"upload", "downsample 2x2", "normals", "transform", "roi", "unorganize",
                                             "voxel 10 mm, min 1", "download"}));
  EXPECT_EQ(done, 2 + stages.stageCount());
  EXPECT_EQ(r.stages[0].result, "48 x 64");
  EXPECT_EQ(r.stages[1].result, "24 x 32");
  EXPECT_EQ(r.stages[2].result, "24 x 32 normals");
  EXPECT_TRUE(std::isnan(r.stages[0].deviceMs));  // host stages have no device time
  EXPECT_GE(r.stages[1].deviceMs, 0.0);
  EXPECT_EQ(r.stages.back().result, std::to_string(r.cloud.size()) + " points");
  EXPECT_FALSE(r.cloud.isOrganized());
  EXPECT_TRUE(r.cloud.hasNormals());
  EXPECT_EQ(r.nonFinitePoints, 0u);
}

TEST_P(FramePipeline, CameraFiltersRunFirstAndMatchTheCloudMethods) {
  const PipelineStages stages = PipelineStages::parse({"--snr-threshold", "2", "--remove-outliers", "30", "--smooth",
                                                       "1", "--fill-holes", "3", "--downsample", "2x2"});
  const PipelineResult r = devicearray::runPipeline(scene_, stages, device());
  std::vector<std::string> names;
  for (const auto& row : r.stages) names.push_back(row.stage);
  EXPECT_EQ(names, (std::vector<std::string>{"upload", "snr threshold 2", "remove outliers 30 mm", "smooth sigma 1",
                                             "fill holes 3", "downsample 2x2", "download"}));
  devicearray::PointCloud cloud = devicearray::PointCloud::fromHost(scene_, device());
  cloud.filterNoise(2);
  cloud.filterOutliers(30);
  cloud.smoothDepth(1, 10);
  cloud.fillHoles(3, 10);
  cloud.downsample(Downsampling::by2x2);
  const HostPointCloud want = cloud.toHost();
  ASSERT_EQ(r.cloud.xyz.size(), want.xyz.size());
  for (std::size_t i = 0; i < want.xyz.size(); ++i) {
    if (std::isnan(want.xyz[i]))
      EXPECT_TRUE(std::isnan(r.cloud.xyz[i])) << i;
    else
      EXPECT_EQ(r.cloud.xyz[i], want.xyz[i]) << i;
  }
}

TEST_P(FramePipeline, NormalWindowGivesThePlaneFitOfTheCloudMethod) {
  const PipelineStages stages = PipelineStages::parse({"--downsample", "2x2", "--normals", "--normal-window", "5"});
  const PipelineResult r = devicearray::runPipeline(scene_, stages, device());
  devicearray::PointCloud cloud = devicearray::PointCloud::fromHost(scene_, device());
  cloud.downsample(Downsampling::by2x2);
  const std::vector<devicearray::NormalXYZ> want = cloud.deviceNormalsXYZ(5, device().sdkStreamOrQueue()).toHost();
  const std::vector<devicearray::NormalXYZ> central = cloud.deviceNormalsXYZ(device().sdkStreamOrQueue()).toHost();
  ASSERT_EQ(r.cloud.normals.size(), 3 * want.size());
  std::size_t compared = 0, differsFromCentral = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i].x)) {
      EXPECT_TRUE(std::isnan(r.cloud.normals[3 * i])) << i;
      continue;
    }
    // The pipeline writes them normalized once more: equal to rounding.
    EXPECT_NEAR(r.cloud.normals[3 * i], want[i].x, 1e-6f) << i;
    EXPECT_NEAR(r.cloud.normals[3 * i + 1], want[i].y, 1e-6f) << i;
    EXPECT_NEAR(r.cloud.normals[3 * i + 2], want[i].z, 1e-6f) << i;
    ++compared;
    if (!std::isnan(central[i].x) && std::abs(central[i].x - want[i].x) > 1e-3f) ++differsFromCentral;
  }
  EXPECT_GT(compared, want.size() / 2);
  EXPECT_GT(differsFromCentral, compared / 10) << "the window, not central differences, made these normals";
}

TEST_P(FramePipeline, RoiLeavesThePlaneFitOfTheKeptPointsAsItWas) {
  // With an ROI the plane fit skips the points it removes; the points it keeps must get
  // the normals the pipeline gives them without an ROI, on a grid and compacted.
  const char* box = "-450,-350,0,450,-350,0,-450,400,0,0,5000";
  for (const bool unorganize : {false, true}) {
    std::vector<std::string> args = {"--downsample", "2x2", "--normals", "--normal-window", "5", "--transform", kRigid};
    if (unorganize) args.push_back("--unorganize");
    const PipelineResult all = devicearray::runPipeline(scene_, PipelineStages::parse(args), device());
    args.insert(args.end(), {"--roi", box});
    const PipelineResult kept = devicearray::runPipeline(scene_, PipelineStages::parse(args), device());
    ASSERT_LT(kept.cloud.validCount(), all.cloud.validCount() * 3 / 4) << "the box removes points";
    ASSERT_GT(kept.cloud.validCount(), all.cloud.validCount() / 4) << "and keeps points";
    // Every kept point is the next equal point of the cloud without the ROI (compaction
    // keeps the grid's order; on a grid the index is the same).
    std::size_t j = 0, compared = 0;
    for (std::size_t i = 0; i < kept.cloud.size(); ++i) {
      if (!kept.cloud.isValid(i)) {
        EXPECT_TRUE(std::isnan(kept.cloud.normals[3 * i])) << "removed point " << i;
        continue;
      }
      if (unorganize)
        while (j < all.cloud.size() && std::memcmp(&all.cloud.xyz[3 * j], &kept.cloud.xyz[3 * i], 12) != 0) ++j;
      else
        j = i;
      ASSERT_LT(j, all.cloud.size()) << "kept point " << i << " is a point of the cloud without the ROI";
      for (std::size_t k = 0; k < 3; ++k) {
        const float a = all.cloud.normals[3 * j + k], b = kept.cloud.normals[3 * i + k];
        EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << "point " << i << " axis " << k;
      }
      compared += std::isnan(kept.cloud.normals[3 * i]) ? 0 : 1;
      ++j;
    }
    EXPECT_GT(compared, kept.cloud.validCount() / 2) << (unorganize ? "unorganized" : "organized");
  }
}

TEST_P(FramePipeline, WithoutStagesTheCloudComesBackUnchanged) {
  const PipelineResult r = devicearray::runPipeline(scene_, PipelineStages{}, device());
  ASSERT_EQ(r.cloud.height, scene_.height);
  ASSERT_EQ(r.cloud.width, scene_.width);
  EXPECT_FALSE(r.cloud.hasNormals());
  for (std::size_t i = 0; i < scene_.xyz.size(); ++i) {
    if (std::isnan(scene_.xyz[i]))
      EXPECT_TRUE(std::isnan(r.cloud.xyz[i])) << i;
    else
      EXPECT_EQ(r.cloud.xyz[i], scene_.xyz[i]) << i;
  }
}

TEST_P(FramePipeline, UnorganizedInputCountsItsUnorganizeStageOnce) {
  HostPointCloud flat;
  for (std::size_t i = 0; i < scene_.size(); ++i)
    if (scene_.isValid(i)) flat.xyz.insert(flat.xyz.end(), &scene_.xyz[3 * i], &scene_.xyz[3 * i + 3]);
  int done = 0;
  PipelineRunOptions options;
  options.stageDone = [&] { ++done; };
  const PipelineStages stages = PipelineStages::parse({"--unorganize", "--voxel", "30"});
  const PipelineResult r = devicearray::runPipeline(flat, stages, device(), options);
  EXPECT_EQ(done, 2 + stages.stageCount());
  EXPECT_EQ(r.stages.size(), 3u);  // upload, voxel, download: nothing to unorganize
  EXPECT_LT(r.cloud.size(), flat.size());
}

/// Every normal of `c` is finite and (nx, ny, nz) within 1e-5.
void expectAllNormals(const HostPointCloud& c, float nx, float ny, float nz) {
  ASSERT_TRUE(c.hasNormals());
  std::size_t checked = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!c.isValid(i)) continue;
    EXPECT_NEAR(c.normals[3 * i], nx, 1e-5) << i;
    EXPECT_NEAR(c.normals[3 * i + 1], ny, 1e-5) << i;
    EXPECT_NEAR(c.normals[3 * i + 2], nz, 1e-5) << i;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST_P(FramePipeline, NormalsOfTheInputSurviveEveryStage) {
  HostPointCloud withNormals = scene_;
  withNormals.normals.assign(3 * scene_.size(), 0.0f);
  for (std::size_t i = 0; i < scene_.size(); ++i) withNormals.normals[3 * i] = 2.0f;  // not unit: made unit
  // kRigid turns (1, 0, 0) by 30 degrees about z.
  const float c30 = 0.8660254f, s30 = 0.5f;
  expectAllNormals(devicearray::runPipeline(withNormals, PipelineStages{}, device()).cloud, 1, 0, 0);
  for (const char* options : {"--downsample 2x2", "--downsample 3x3 --transform", "--transform --roi --unorganize",
                              "--downsample 2x2 --transform --roi --unorganize --voxel 20"}) {
    std::vector<std::string> args;
    for (const std::string& w : words(options)) {
      args.push_back(w);
      if (w == "--transform") args.push_back(kRigid);
      if (w == "--roi") args.push_back(kWideRoi);
    }
    const bool turned = std::string(options).find("--transform") != std::string::npos;
    const PipelineResult r = devicearray::runPipeline(withNormals, PipelineStages::parse(args), device());
    SCOPED_TRACE(options);
    expectAllNormals(r.cloud, turned ? c30 : 1.0f, turned ? s30 : 0.0f, 0.0f);
  }
  // An unorganized input's normals follow its valid points.
  HostPointCloud flat;
  for (std::size_t i = 0; i < withNormals.size(); ++i)
    if (i % 3 != 0) {
      flat.xyz.insert(flat.xyz.end(), &withNormals.xyz[3 * i], &withNormals.xyz[3 * i + 3]);
      flat.normals.insert(flat.normals.end(), &withNormals.normals[3 * i], &withNormals.normals[3 * i + 3]);
    }
  const PipelineResult r = devicearray::runPipeline(flat, PipelineStages::parse({"--transform", kRigid}), device());
  EXPECT_EQ(r.cloud.size(), flat.validCount());
  expectAllNormals(r.cloud, c30, s30, 0);
  expectAllNormals(devicearray::runPipeline(flat, PipelineStages::parse({"--voxel", "25"}), device()).cloud, 1, 0, 0);
  // --normals computes new ones instead.
  const PipelineResult computed = devicearray::runPipeline(withNormals, PipelineStages::parse({"--normals"}), device());
  ASSERT_TRUE(computed.cloud.hasNormals());
  std::size_t along = 0;
  for (std::size_t i = 0; i < computed.cloud.size(); ++i) along += computed.cloud.normals[3 * i] > 0.999f ? 1 : 0;
  EXPECT_LT(along, computed.cloud.size() / 2);
}

TEST_P(FramePipeline, OutlierStagesOfTheUnorganizedCloudMatchTheCloudMethods) {
  const PipelineStages stages =
      PipelineStages::parse({"--downsample", "2x2", "--statistical-outliers", "12,1", "--radius-outliers", "60,3"});
  const PipelineResult r = devicearray::runPipeline(scene_, stages, device());
  std::vector<std::string> names;
  for (const auto& row : r.stages) names.push_back(row.stage);
  EXPECT_EQ(names, (std::vector<std::string>{"upload", "downsample 2x2", "unorganize", "statistical outliers 12, ratio 1",
                                             "radius outliers 60 mm, min 3", "download"}));
  devicearray::PointCloud cloud = devicearray::PointCloud::fromHost(scene_, device());
  cloud.downsample(Downsampling::by2x2);
  const devicearray::UnorganizedPointCloud expected =
      cloud.toUnorganizedPointCloud().statisticalOutliersRemoved(12, 1.0f).radiusOutliersRemoved(60.0f, 3);
  const HostPointCloud want = expected.toHost();
  ASSERT_LT(want.size(), r.stages[2].result.empty() ? 0u : std::stoul(r.stages[2].result));  // something removed
  EXPECT_EQ(r.cloud.xyz, want.xyz);
  EXPECT_EQ(r.cloud.rgba, want.rgba);
  EXPECT_EQ(r.cloud.snr, want.snr);
  // Normals of the input follow the kept points.
  HostPointCloud withNormals = scene_;
  withNormals.normals.assign(3 * scene_.size(), 0.0f);
  for (std::size_t i = 0; i < scene_.size(); ++i) withNormals.normals[3 * i + 1] = 1.0f;
  const PipelineResult n = devicearray::runPipeline(
      withNormals, PipelineStages::parse({"--statistical-outliers", "12,1", "--radius-outliers", "60,3"}), device());
  ASSERT_TRUE(n.cloud.hasNormals());
  EXPECT_EQ(n.cloud.normals.size(), n.cloud.xyz.size());
  for (std::size_t i = 0; i < n.cloud.size(); ++i) EXPECT_EQ(n.cloud.normals[3 * i + 1], 1.0f);
}

TEST_P(FramePipeline, NothingLeftIsAClearError) {
  PipelineRunOptions options;
  options.outputName = "out.ply";
  try {
    (void)devicearray::runPipeline(scene_, PipelineStages::parse({"--roi=-10,-10,0,10,-10,0,-10,10,0,0,1", "--unorganize"}),
                                   device(), options);
    ADD_FAILURE() << "an empty box left points";
  } catch (const devicearray::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no valid point is left after --roi; nothing to write to out.ply"),
              std::string::npos)
        << e.what();
  }
  const fs::path none = tempDir() / "all_overflow.ply";
  datest::expectError(
      ErrorCode::InvalidArgument,
      [&] {
        (void)devicearray::processPlyFile(scenePath().string(), none.string(),
                                          PipelineStages::parse({"--transform", "1e37,0,0,0,0,1e37,0,0,0,0,1e37,0,0,0,0,1"}),
                                          device());
      },
      "everything overflows");
  EXPECT_FALSE(fs::exists(none));
  datest::expectError(
      ErrorCode::InvalidArgument,
      [&] {
        (void)devicearray::processPlyFile(scenePath().string(), (tempDir() / "no_dir" / "x.ply").string(),
                                          PipelineStages{}, device());
      },
      "missing output directory");
}

DATEST_INSTANTIATE_OVER_DEVICES(FramePipeline);

}  // namespace

// The device voxel grid (voxel_grid.hpp).
#include "pointcloud/voxel_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "pointcloud/pending_point_count.hpp"
#include "pointcloud/scratch_layout.hpp"

namespace devicearray::detail::pc {

namespace {

/// Bits of a voxel key: a rank in a grid of at most (2^21 - 1)^3 cells stays below
/// 2^63 - 1, and a missing point's key is 63 ones.
constexpr int kVoxelKeyBits = 63;

/// voxelSize as %g (std::to_string prints 1e-9 as 0.000000).
std::string voxelSizeText(float voxelSize) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(voxelSize));
  return text;
}

std::string voxelTooSmallText(float voxelSize, const char* fn) {
  return std::string(fn) + ": voxelSize " + voxelSizeText(voxelSize) +
         " is too small for the cloud's extent: an axis would need 2^21 - 1 or more voxels";
}

/// The output block's count words: [overflow flag, voxel count, key width, the sort's
/// zero word after the width (ParallelPrimitives::sortPairsU64U32), the words of
/// da_vx_bounds: six bounds and the keyed end]. One fill zeroes them all.
constexpr std::size_t kKeyWidthWord = 2, kBoundsWord = 4;
constexpr std::size_t kKeyedEndWord = kBoundsWord + DA_VX_KEYED_END;
constexpr std::size_t kCountWords = kBoundsWord + DA_VX_BOUNDS_WORDS;

/// Work-groups of da_vx_tile_heads, each taking every so many tiles: enough to fill a
/// large GPU, few enough that the groups past a frame's valid points cost little.
constexpr std::size_t kTileHeadGroups = 512;

/// What the host guesses of a stream voxel grid's sort: the key width and the keyed end
/// (the valid points' count, or one past the last of them), which it cannot read
/// without waiting.
struct SortGuess {
  int keyBits = 0;           ///< 0: none
  std::size_t keyedEnd = 0;  ///< 0: none
};

/// The widest key and the largest keyed end of the voxel grids of each device and
/// voxel size whose words the host read: the stream form's guesses for its sort
/// (ParallelPrimitives::sortPairsU64U32), so a frame loop on one scene sorts the bits
/// and the positions its grids need (a scene's frame, organized or compacted, has
/// about the same valid points). The largest, not the last, and keyed by the voxel
/// size, because a guess too low costs far more than what a right one saves (the rest
/// is sorted on one multiprocessor): a program that alternates scenes or voxel sizes
/// must not guess one from the other. Only guesses: the sort is right whatever they
/// are (a keyed end guessed past a cloud's size sorts it all), and a device's address
/// reused by a later device only costs time.
class SortGuesses {
 public:
  SortGuess guess(const DeviceImpl* device, float voxelSize, std::size_t n) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = guesses_.find({device, voxelSize});
    if (it == guesses_.end()) return {};
    SortGuess g = it->second;
    // Frames of one scene vary: an eighth and a tile more than the largest end seen.
    if (g.keyedEnd > 0) g.keyedEnd = std::min(n, g.keyedEnd + g.keyedEnd / 8 + DA_VX_TILE);
    return g;
  }
  void remember(const DeviceImpl* device, float voxelSize, std::uint32_t keyBits, std::uint32_t keyedEnd) {
    if (keyBits < 1 || keyBits > static_cast<std::uint32_t>(kVoxelKeyBits)) return;  // not written: a failed grid
    const std::lock_guard<std::mutex> lock(mutex_);
    const Key key{device, voxelSize};
    if (guesses_.size() >= kMaxGuesses && guesses_.find(key) == guesses_.end()) guesses_.clear();
    SortGuess& g = guesses_[key];
    g.keyBits = std::max(g.keyBits, static_cast<int>(keyBits));
    g.keyedEnd = std::max<std::size_t>(g.keyedEnd, keyedEnd);  // guess() bounds it by the cloud's size
  }

 private:
  using Key = std::pair<const DeviceImpl*, float>;
  /// Programs use a few voxel sizes; one that sweeps thousands starts over now and then.
  static constexpr std::size_t kMaxGuesses = 256;
  std::mutex mutex_;
  std::map<Key, SortGuess> guesses_;
};

SortGuesses& sortGuesses() {
  static SortGuesses* const guesses = new SortGuesses;  // leaked: grids may run during exit
  return *guesses;
}

/// How the reduction sorts the keys: `count` positions by bits [0, endBit). With
/// `onDevice`, the sort reads the key width and the keyed end from the count words and
/// skips the bits above the one and the positions past the other on the device;
/// `guess` is the host's guess of both (only the sort's time depends on it).
struct SortPlan {
  std::size_t count;
  int endBit;
  bool onDevice;
  SortGuess guess;
};

/// The voxel grid of the n points of `xyz` (missing ones ignored) as enqueued work, in
/// two steps: enqueueKeys() ranks every point's voxel, enqueueReduction() sorts by it
/// and averages each voxel. The output block's count words are kCountWords; the output
/// arrays hold the voxels, then missing points up to n.
class VoxelGrid {
 public:
  VoxelGrid(QueueImpl& q, const VoxelSource& source, const char* fn)
      : q_(q), xyz_(source.xyz), colors_(source.colors), srgb_(source.colorSpace == ColorSpace::srgb),
        snrs_(source.snrs), normals_(source.normals), pack_(source.packValidKeys), n_(xyz_.size()),
        tiles_((n_ + DA_VX_TILE - 1) / DA_VX_TILE), tables_(srgbTables(q)) {
    groupValidAt_ = layout_.add(boundsGroups(), sizeof(std::uint32_t), fn);
    keysAt_ = layout_.add(n_, sizeof(std::uint64_t), fn);
    sortedKeysAt_ = layout_.add(n_, sizeof(std::uint64_t), fn);
    indicesAt_ = layout_.add(n_, sizeof(std::uint32_t), fn);
    orderAt_ = layout_.add(n_, sizeof(std::uint32_t), fn);
    rankAt_ = layout_.add(n_, sizeof(std::uint32_t), fn);
    tileHeadsAt_ = layout_.add(tiles_, sizeof(std::uint32_t), fn);
    tileOffsetsAt_ = layout_.add(tiles_, sizeof(std::uint32_t), fn);
    tileVoxelAt_ = layout_.add(tiles_, sizeof(std::uint32_t), fn);
    tileFloatsAt_ = layout_.add(tiles_ * 2 * DA_VX_SUM_FLOATS, sizeof(float), fn);
    tileWordsAt_ = layout_.add(tiles_ * 2 * DA_VX_SUM_WORDS, sizeof(std::uint64_t), fn);
    scratch_ = layout_.allocate(q);
    out_ = allocateAttributes(q, n_, colors_.isValid(), snrs_.isValid(), normals_.isValid(), fn, kCountWords);
  }

  /// Enqueues the bounds and the voxel keys; when packing, the valid points' only, in
  /// their order (the positions from their count up to `fill` get missing keys). The
  /// count words get the overflow flag, the key width and the keyed end.
  void enqueueKeys(float voxelSize, std::size_t fill) {
    QueueImpl& q = q_;
    Allocation* const t = scratch_.get();
    Allocation* const status = out_.block.get();
    const BufferRef bounds{status, out_.countAt + kBoundsWord * sizeof(std::uint32_t)};
    OrderedUse use(q, {storageOf(xyz_), t, status});
    fillU32(q, status, out_.countAt, kCountWords, 0u);
    const BufferRef groupValid{t, groupValidAt_};
    const LaunchGeometry groups = LaunchGeometry::groups(boundsGroups(), DA_VX_BOUNDS_GROUP);
    launch<kernels::da_vx_bounds>(q, groups, i64(n_), arg(xyz_), bounds, groupValid);
    if (pack_)
      launch<kernels::da_vx_keys_packed>(q, groups, i64(n_), voxelSize, i64(fill), bounds, arg(xyz_), groupValid,
                                         arg(scratch_, keysAt_), arg(scratch_, indicesAt_),
                                         BufferRef{status, out_.countAt});
    else
      launch<kernels::da_vx_keys>(q, LaunchGeometry::items(n_), i64(n_), voxelSize, bounds, arg(xyz_),
                                  arg(scratch_, keysAt_), arg(scratch_, indicesAt_), BufferRef{status, out_.countAt});
    use.commit();
  }

  /// Enqueues the sort of the keys (`plan`), then the voxels' means; the count words
  /// get the voxel count.
  void enqueueReduction(int minPointsPerVoxel, const SortPlan& plan) {
    QueueImpl& q = q_;
    const std::size_t n = n_;
    const auto& scratch = scratch_;
    Allocation* const t = scratch.get();
    const CompactResult& cap = out_;
    const BufferRef status{cap.block.get(), cap.countAt};
    const BufferRef width{cap.block.get(), cap.countAt + kKeyWidthWord * sizeof(std::uint32_t)};
    const BufferRef keyedEnd{cap.block.get(), cap.countAt + kKeyedEndWord * sizeof(std::uint32_t)};
    const bool color = colors_.isValid(), snr = snrs_.isValid(), normal = normals_.isValid();
    auto& primitives = q.device()->primitives();
    OrderedUse use(q, {storageOf(xyz_), storageOf(colors_), storageOf(snrs_), storageOf(normals_), t,
                       cap.block.get(), tables_.owner.get()});
    if (plan.onDevice)
      primitives.sortPairsU64U32(q, {t, keysAt_}, {t, indicesAt_}, {t, sortedKeysAt_}, {t, orderAt_}, plan.count,
                                 plan.endBit, width, plan.guess.keyBits, keyedEnd, plan.guess.keyedEnd);
    else
      primitives.sortPairsU64U32(q, {t, keysAt_}, {t, indicesAt_}, {t, sortedKeysAt_}, {t, orderAt_}, plan.count,
                                 plan.endBit);
    // The voxels' output slots: numbered within each tile of sorted positions, then
    // the tiles, past whose valid points neither kernel reads more than a key.
    launch<kernels::da_vx_tile_heads>(q, LaunchGeometry::groups(std::min(tiles_, kTileHeadGroups), DA_VX_TILE),
                                      i64(n), minPointsPerVoxel, keyedEnd,
                                      arg(scratch, sortedKeysAt_), arg(scratch, rankAt_), arg(scratch, tileHeadsAt_));
    launch<kernels::da_vx_tile_offsets>(q, LaunchGeometry::groups(1, DA_VX_SCAN_GROUP), i64(n), keyedEnd,
                                        arg(scratch, sortedKeysAt_), arg(scratch, tileHeadsAt_),
                                        arg(scratch, tileOffsetsAt_), status);
    launch<kernels::da_vx_reduce_tiles>(
        q, LaunchGeometry::groups(tiles_, DA_VX_TILE), i64(n), color ? 1 : 0, srgb_ ? 1 : 0, snr ? 1 : 0,
        normal ? 1 : 0, minPointsPerVoxel, keyedEnd, arg(scratch, sortedKeysAt_), arg(scratch, rankAt_),
        arg(scratch, tileOffsetsAt_), arg(scratch, orderAt_), arg(xyz_), argOr(colors_, xyz_), argOr(snrs_, xyz_),
        argOr(normals_, xyz_), tables_.decode, arg(scratch, tileFloatsAt_), arg(scratch, tileWordsAt_),
        arg(scratch, tileVoxelAt_), arg(cap.xyz), argOr(cap.colors, cap.xyz), argOr(cap.snrs, cap.xyz),
        argOr(cap.normals, cap.xyz), tables_.encode, status);
    launch<kernels::da_vx_reduce_spanning>(
        q, LaunchGeometry::items(tiles_), i64(n), color ? 1 : 0, srgb_ ? 1 : 0, snr ? 1 : 0, normal ? 1 : 0, keyedEnd,
        arg(scratch, sortedKeysAt_), arg(scratch, tileVoxelAt_), arg(scratch, tileFloatsAt_),
        arg(scratch, tileWordsAt_), arg(cap.xyz), argOr(cap.colors, cap.xyz), argOr(cap.snrs, cap.xyz),
        argOr(cap.normals, cap.xyz), tables_.encode);
    use.commit();
  }

  const CompactResult& output() const noexcept { return out_; }

 private:
  /// Work-groups of da_vx_bounds (and da_vx_keys_packed), each taking a run of points.
  std::size_t boundsGroups() const {
    constexpr std::size_t pointsPerGroup = DA_VX_BOUNDS_GROUP * DA_VX_BOUNDS_ITEMS;
    return (n_ + pointsPerGroup - 1) / pointsPerGroup;
  }

  QueueImpl& q_;
  const DeviceArray<PointXYZ>& xyz_;
  const DeviceArray<ColorRGBA>& colors_;
  bool srgb_;
  const DeviceArray<SNR>& snrs_;
  const DeviceArray<NormalXYZ>& normals_;
  bool pack_;  ///< the valid points' keys are packed first (VoxelSource::packValidKeys)
  std::size_t n_;
  std::size_t tiles_;  ///< DA_VX_TILE-position tiles of the sorted order
  SrgbTables tables_;
  ScratchLayout layout_;
  std::size_t groupValidAt_ = 0, keysAt_ = 0, sortedKeysAt_ = 0, indicesAt_ = 0, orderAt_ = 0, rankAt_ = 0,
              tileHeadsAt_ = 0, tileOffsetsAt_ = 0, tileVoxelAt_ = 0, tileFloatsAt_ = 0, tileWordsAt_ = 0;
  std::shared_ptr<Allocation> scratch_;
  CompactResult out_;
};

}  // namespace

void checkVoxelArguments(float voxelSize, int minPointsPerVoxel, const char* fn) {
  if (!(std::isfinite(voxelSize) && voxelSize > 0.0f))
    raise(ErrorCode::InvalidArgument, fn, "voxelSize is " + voxelSizeText(voxelSize) + "; it must be finite and > 0");
  if (minPointsPerVoxel < 1)
    raise(ErrorCode::InvalidArgument, fn,
          "minPointsPerVoxel is " + std::to_string(minPointsPerVoxel) + "; it must be >= 1");
}

UnorganizedPointCloud voxelGridOnStream(const ComputeDevice& device, QueueImpl& q, const VoxelSource& source,
                                        const Matrix4x4& transform, float voxelSize, int minPointsPerVoxel,
                                        const char* fn) {
  // The key width and the keyed end stay on the device: the sort skips the bits above
  // the one and the positions past the other there, and sorts about as many as the
  // grids whose words the host read needed (packed keys past the count up to that many
  // are missing).
  const DeviceImpl* const key = q.device().get();
  const std::size_t n = source.xyz.size();
  const SortGuess guess = sortGuesses().guess(key, voxelSize, n);
  VoxelGrid grid(q, source, fn);
  grid.enqueueKeys(voxelSize, guess.keyedEnd > 0 ? guess.keyedEnd : n);
  grid.enqueueReduction(minPointsPerVoxel, {n, kVoxelKeyBits, true, guess});
  const CompactResult& r = grid.output();
  // Reading the count reads the sort's words after it: the next grids' guesses.
  constexpr std::size_t kWordsAfterCount = kCountWords - 2;
  auto remember = [key, voxelSize](const std::uint32_t* after) {
    sortGuesses().remember(key, voxelSize, after[kKeyWidthWord - 2], after[kKeyedEndWord - 2]);
  };
  auto count = std::make_shared<PointCountWord>(r.block, r.countAt + sizeof(std::uint32_t),
                                                voxelTooSmallText(voxelSize, fn), kWordsAfterCount,
                                                std::move(remember));
  return UnorganizedPointCloud::fromCapacity(device, r.xyz, r.colors, r.snrs, transform, r.normals, std::move(count),
                                             source.colorSpace);
}

UnorganizedPointCloud voxelGridBlocking(const ComputeDevice& device, QueueImpl& q, const VoxelSource& source,
                                        const Matrix4x4& transform, float voxelSize, int minPointsPerVoxel,
                                        const char* fn) {
  VoxelGrid grid(q, source, fn);
  grid.enqueueKeys(voxelSize, 0);
  // The host waits anyway: it reads the key width and the keyed end, so the sort has
  // exactly the passes and the positions the grid needs (and a grid too fine fails
  // before sorting anything).
  std::uint32_t words[kCountWords] = {};
  readBack(q, grid.output().block.get(), grid.output().countAt, words, sizeof(words));
  if (words[0] != 0) fail(ErrorCode::InvalidArgument, voxelTooSmallText(voxelSize, fn));
  const std::size_t n = source.xyz.size();
  sortGuesses().remember(q.device().get(), voxelSize, words[kKeyWidthWord], words[kKeyedEndWord]);
  const std::size_t keyedEnd = std::min<std::size_t>(n, words[kKeyedEndWord]);
  grid.enqueueReduction(minPointsPerVoxel, {keyedEnd, static_cast<int>(words[kKeyWidthWord]), false, {}});
  readBack(q, grid.output().block.get(), grid.output().countAt, words, 2 * sizeof(std::uint32_t));
  const CompactResult r = trimmed(q, grid.output(), n, words[1], fn);
  UnorganizedPointCloud out =
      UnorganizedPointCloud::fromParts(device, r.xyz, r.colors, r.snrs, transform, r.normals, source.colorSpace);
  finishDeviceQueue(device);
  return out;
}

}  // namespace devicearray::detail::pc

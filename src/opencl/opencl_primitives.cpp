// The OpenCL device's parallel primitives (backend/parallel_primitives.hpp): host code
// that sequences the kernels of scan_sort_reduce.cl (chunk per work item, for CPUs)
// and scan_sort_groups.cl (tile per work-group, for GPUs; see there why two shapes)
// through DeviceImpl::launch. Temporaries come from DeviceImpl::allocate on the same
// queue and are released in stream order after the work recorded on them.
#include "opencl/opencl_primitives.hpp"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/scan_sort_geometry.h"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_info.hpp"

namespace devicearray::detail::opencl {
namespace {

/// Elements one work item processes sequentially. Large enough that the per-chunk
/// levels shrink fast (2^21 points: 8192 chunks, then 32, then 1), small enough to keep
/// thousands of work items busy.
constexpr std::size_t kChunk = 256;

/// Tiles of `tile` elements that cover `n` (at least one).
std::size_t tilesOf(std::size_t n, std::size_t tile) { return std::max<std::size_t>(1, (n + tile - 1) / tile); }

std::size_t chunksOf(std::size_t n) { return tilesOf(n, kChunk); }

/// Temporaries of one primitive call: allocated on `q`, kept alive and recorded as
/// used by the enqueued work (commit), then released in stream order.
class Temporaries {
 public:
  explicit Temporaries(QueueImpl& q) : q_(q), use_(q, {}) {}
  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;
  ~Temporaries() {
    // The work is enqueued; recording it lets the allocations go in stream order.
    try {
      use_.commit();
    } catch (...) {
      // Recording can only fail when the queue is already broken; the allocations
      // then wait for all queue work (their pending list) before being released.
    }
  }
  BufferRef allocate(std::size_t bytes) {
    std::shared_ptr<Allocation> a = q_.device()->allocate(std::max<std::size_t>(bytes, 16), q_);
    use_.add(a.get());
    keep_.push_back(a);
    return BufferRef{a.get(), 0};
  }

 private:
  QueueImpl& q_;
  OrderedUse use_;
  std::vector<std::shared_ptr<Allocation>> keep_;
};

KernelArg buf(BufferRef b) { return KernelArg::buf(b.allocation, b.offset); }
KernelArg i64(std::size_t v) { return KernelArg::i64(static_cast<std::int64_t>(v)); }

/// Launches `items` work items of kernel `name`, in work-groups of `localSize` (0: of
/// the implementation's choice).
void launch1d(QueueImpl& q, const char* name, std::size_t items, std::vector<KernelArg> args,
              std::size_t localSize = 0) {
  KernelLaunch l;
  l.name = name;
  l.workDims = 1;
  l.globalSize = {items, 1, 1};
  l.localSize = localSize;
  l.args = std::move(args);
  q.device()->launch(l, q);
}

/// Launches `groups` work-groups of a kernel of scan_sort_groups.cl.
void launchGroups(QueueImpl& q, const char* name, std::size_t groups, std::vector<KernelArg> args) {
  launch1d(q, name, groups * DA_ALG_GROUP, std::move(args), DA_ALG_GROUP);
}

/// When a scan runs: always, or (for a radix pass's digit counts) only while the pass
/// at `shift` is within the key width of the device word `width` (DA_ALG_PASS_SORTS),
/// so that a pass past it launches kernels that return at once instead of scanning
/// counts nobody reads.
struct ScanGate {
  int shift = 0;
  bool widthGiven = false;
  BufferRef width;  ///< any buffer when !widthGiven

  /// A scan kernel's arguments: `lead`, the gate, then `rest`.
  std::vector<KernelArg> args(std::initializer_list<KernelArg> lead, std::initializer_list<KernelArg> rest) const {
    std::vector<KernelArg> a = lead;
    a.insert(a.end(), {KernelArg::i32(shift), KernelArg::i32(widthGiven ? 1 : 0), buf(width)});
    a.insert(a.end(), rest);
    return a;
  }
};

/// Exclusive scan by chunks (scan_sort_reduce.cl): the chunk sums, scanned by the same
/// function, seed the scan of every chunk.
void scanLevel(QueueImpl& q, Temporaries& temps, BufferRef in, BufferRef out, std::size_t n, const ScanGate& gate) {
  const std::size_t chunks = chunksOf(n);
  if (chunks == 1) {
    launch1d(q, "da_alg_scan_apply", 1,
             gate.args({i64(n), i64(kChunk), i64(1)}, {KernelArg::i32(0), buf(in), buf(in), buf(out)}));
    return;
  }
  const BufferRef partial = temps.allocate(chunks * sizeof(std::uint32_t));
  launch1d(q, "da_alg_scan_reduce", chunks, gate.args({i64(n), i64(kChunk), i64(chunks)}, {buf(in), buf(partial)}));
  scanLevel(q, temps, partial, partial, chunks, gate);
  launch1d(q, "da_alg_scan_apply", chunks,
           gate.args({i64(n), i64(kChunk), i64(chunks)}, {KernelArg::i32(1), buf(partial), buf(in), buf(out)}));
}

/// Tiles up to which one work-group scans them in turn: three launches (tile sums, their
/// scan, the seeded scan) cost more than one group's pass over this many tiles.
constexpr std::size_t kTilesInTurn = 8;

/// Exclusive scan by work-group tiles: the tile sums, scanned by the same function,
/// seed the scan of every tile.
void scanTiles(QueueImpl& q, Temporaries& temps, BufferRef in, BufferRef out, std::size_t n, const ScanGate& gate) {
  const std::size_t tiles = tilesOf(n, DA_ALG_SCAN_TILE);
  if (tiles == 1) {
    launchGroups(q, "da_alg_scan_tiles", 1, gate.args({i64(n)}, {KernelArg::i32(0), buf(in), buf(in), buf(out)}));
    return;
  }
  if (tiles <= kTilesInTurn) {
    launchGroups(q, "da_alg_scan_tiles_in_turn", 1, gate.args({i64(n)}, {buf(in), buf(out)}));
    return;
  }
  const BufferRef sums = temps.allocate(tiles * sizeof(std::uint32_t));
  launchGroups(q, "da_alg_scan_tile_sums", tiles, gate.args({i64(n)}, {buf(in), buf(sums)}));
  scanTiles(q, temps, sums, sums, tiles, gate);
  launchGroups(q, "da_alg_scan_tiles", tiles, gate.args({i64(n)}, {KernelArg::i32(1), buf(sums), buf(in), buf(out)}));
}

/// Reduces the `n` points of `points` with `kernel` (a DA_ALG_REDUCTION of
/// scan_sort_reduce.cl), level by level, until one tuple of `tupleBytes` is left, in `out`.
void reduceLevels(QueueImpl& q, const char* kernel, BufferRef points, std::size_t n, BufferRef out,
                  std::size_t tupleBytes) {
  Temporaries temps(q);
  BufferRef src = points;  // then the tuples of the previous level
  bool fromPoints = true;
  std::size_t m = n;
  while (true) {
    const std::size_t chunks = chunksOf(m);
    const BufferRef dst = chunks == 1 ? out : temps.allocate(chunks * tupleBytes);
    // src is bound both as the points and as the tuples: the level reads one of them.
    launch1d(q, kernel, chunks,
             {i64(m), i64(kChunk), i64(chunks), KernelArg::i32(chunks == 1 ? 1 : 0), KernelArg::i32(fromPoints ? 1 : 0),
              buf(src), buf(src), buf(dst)});
    if (chunks == 1) return;
    src = dst;
    m = chunks;
    fromPoints = false;
  }
}

/// The bounds of the valid points of `points` into `out` (min xyz, max xyz), by
/// work-group tiles, level by level, until one tile is left.
void boundsTiles(QueueImpl& q, BufferRef points, std::size_t n, BufferRef out) {
  Temporaries temps(q);
  BufferRef src = points;  // then the tuples of the previous level
  bool fromPoints = true;
  std::size_t m = n;
  while (true) {
    const std::size_t tiles = tilesOf(m, DA_ALG_BOUNDS_TILE);
    const BufferRef dst = tiles == 1 ? out : temps.allocate(tiles * 6 * sizeof(float));
    // src is bound both as the points and as the tuples: the level reads one of them.
    launchGroups(q, "da_alg_bounds_tiles", tiles,
                 {i64(m), KernelArg::i32(fromPoints ? 1 : 0), buf(src), buf(src), buf(dst)});
    if (tiles == 1) return;
    src = dst;
    m = tiles;
    fromPoints = false;
  }
}

/// Stable LSD radix sort, 4 bits a pass: per-tile digit counts, their digit-major
/// exclusive scan, then a scatter of each tile that keeps the order of equal digits.
/// A tile is a work-group's (scan_sort_groups.cl) when `groups`, else a chunk. With a
/// key width word, the kernels of the passes past that width return at once (the first
/// of them copies the pairs to the outputs when the ping-pong left them elsewhere); with
/// a keyed end word, every kernel skips the entries past it. In work-groups, with a
/// guess of the width too, the host launches the passes up to the guess only and then
/// da_alg_radix_rest, which sorts any bits past it in one work-group: a pass past the
/// width is three launches that do nothing, and on a GPU each costs more device time
/// than its kernels (a frame's voxel keys need 5 of 16 passes).
void radixSort(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
               std::size_t count, int endBit, BufferRef keyBits, int likelyKeyBits, BufferRef keyedEnd, bool groups) {
  static_assert(DA_ALG_RADIX_BITS == 4, "both shapes sort 4 bits a pass");
  const int passes = (endBit + 3) / 4;
  const bool widthGiven = keyBits.allocation != nullptr;
  const int launched = groups && widthGiven && likelyKeyBits > 0 ? std::min(passes, (likelyKeyBits + 3) / 4) : passes;
  const std::size_t tile = groups ? DA_ALG_SORT_TILE : kChunk;
  const std::size_t tiles = tilesOf(count, tile);
  Temporaries temps(q);
  const BufferRef hist = temps.allocate(DA_ALG_DIGITS * tiles * sizeof(std::uint32_t));
  BufferRef tmpKeys, tmpValues;
  if (passes > 1) {
    tmpKeys = temps.allocate(count * sizeof(std::uint64_t));
    tmpValues = temps.allocate(count * sizeof(std::uint32_t));
  }
  // Ping-pong between the outputs and the temporaries, arranged so that the last pass
  // launched writes the outputs and the inputs are only read.
  BufferRef srcK = keysIn, srcV = valuesIn;
  const BufferRef width = widthGiven ? keyBits : hist;  // any buffer when there is no word
  const bool endGiven = keyedEnd.allocation != nullptr;
  const KernelArg endFlag = KernelArg::i32(endGiven ? 1 : 0), endWord = buf(endGiven ? keyedEnd : hist);
  for (int pass = 0; pass < launched; ++pass) {
    const bool toOutput = ((launched - 1 - pass) % 2) == 0;
    const BufferRef dstK = toOutput ? keysOut : tmpKeys;
    const BufferRef dstV = toOutput ? valuesOut : tmpValues;
    const int shift = 4 * pass;
    const KernelArg at = KernelArg::i32(shift), below = KernelArg::i32(endBit);
    const KernelArg given = KernelArg::i32(widthGiven ? 1 : 0), writesOutput = KernelArg::i32(toOutput ? 1 : 0);
    if (groups) {
      launchGroups(q, "da_alg_radix_tile_counts", tiles,
                   {i64(count), i64(tiles), at, below, given, buf(width), endFlag, endWord, buf(srcK), buf(hist)});
      scanTiles(q, temps, hist, hist, DA_ALG_DIGITS * tiles, ScanGate{shift, widthGiven, width});
      launchGroups(q, "da_alg_radix_tile_scatter", tiles,
                   {i64(count), i64(tiles), at, below, writesOutput, given, buf(width), endFlag, endWord, buf(hist),
                    buf(srcK), buf(srcV), buf(dstK), buf(dstV)});
    } else {
      launch1d(q, "da_alg_radix_count", tiles,
               {i64(count), i64(kChunk), i64(tiles), at, below, given, buf(width), endFlag, endWord, buf(srcK),
                buf(hist)});
      scanLevel(q, temps, hist, hist, DA_ALG_DIGITS * tiles, ScanGate{shift, widthGiven, width});
      launch1d(q, "da_alg_radix_scatter", tiles,
               {i64(count), i64(kChunk), i64(tiles), at, below, writesOutput, given, buf(width), endFlag, endWord,
                buf(hist), buf(srcK), buf(srcV), buf(dstK), buf(dstV)});
    }
    srcK = dstK;
    srcV = dstV;
  }
  if (launched < passes)
    launchGroups(q, "da_alg_radix_rest", 1,
                 {i64(count), KernelArg::i32(DA_ALG_RADIX_BITS * launched), KernelArg::i32(endBit), buf(width),
                  endFlag, endWord, buf(keysOut), buf(valuesOut), buf(tmpKeys), buf(tmpValues)});
}

/// The kernels of scan_sort_groups.cl, which all run in work-groups of DA_ALG_GROUP.
constexpr const char* kGroupKernels[] = {"da_alg_scan_tile_sums", "da_alg_scan_tiles", "da_alg_scan_tiles_in_turn",
                                         "da_alg_radix_tile_counts", "da_alg_bounds_tiles",
                                         "da_alg_radix_tile_scatter", "da_alg_radix_rest"};

/// DEVICEARRAY_OPENCL_PRIMITIVES: "gpu" or "cpu" runs every OpenCL device's primitives
/// in that shape (how the tests run the work-group shape on a CPU device), anything
/// else leaves the choice to the device type. Read once.
std::optional<PrimitivesShape> requestedShape() {
  static const std::optional<PrimitivesShape> shape = []() -> std::optional<PrimitivesShape> {
    const char* value = std::getenv("DEVICEARRAY_OPENCL_PRIMITIVES");
    if (value == nullptr) return std::nullopt;
    const std::string v(value);
    if (v == "gpu") return PrimitivesShape::workGroups;
    if (v == "cpu") return PrimitivesShape::chunked;
    return std::nullopt;
  }();
  return shape;
}

/// The primitives of an OpenCL device: the kernels of scan_sort_reduce.cl and
/// scan_sort_groups.cl, sequenced through DeviceImpl::launch.
class OpenCLPrimitives final : public ParallelPrimitives {
 public:
  OpenCLPrimitives(OpenCLDevice& device, PrimitivesShape shape) : ParallelPrimitives(device), device_(device),
                                                                  shape_(shape) {}

 private:
  /// Whether the scan and the sort run in work-groups: the shape asks for it and the
  /// device runs every kernel of scan_sort_groups.cl in work-groups of DA_ALG_GROUP
  /// (decided on first use, as it builds the program).
  bool inGroups() {
    if (shape_ != PrimitivesShape::workGroups) return false;
    std::call_once(groupsChecked_, [this] {
      groupsUsable_ = std::all_of(std::begin(kGroupKernels), std::end(kGroupKernels),
                                  [this](const char* name) { return device_.runsWorkGroupsOf(name, DA_ALG_GROUP); });
    });
    return groupsUsable_;
  }

  void doExclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) override {
    const bool groups = inGroups();
    Temporaries temps(q);
    if (groups)
      scanTiles(q, temps, in, out, count, ScanGate{0, false, in});  // ungated
    else
      scanLevel(q, temps, in, out, count, ScanGate{0, false, in});  // ungated
  }
  void doSortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
                         std::size_t count, int endBit, BufferRef keyBits, int likelyKeyBits, BufferRef keyedEnd,
                         std::size_t /*likelyKeyedEnd*/) override {
    // The passes skip the entries past the keyed end on the device: its guess saves
    // nothing here. In work-groups, the width's guess saves the launches of the passes
    // past it; the chunked shape (CPUs, where a launch costs little) ignores it.
    radixSort(q, keysIn, valuesIn, keysOut, valuesOut, count, endBit, keyBits, likelyKeyBits, keyedEnd, inGroups());
  }
  void doSumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override {
    reduceLevels(q, "da_alg_sum", xyz, count, out, 4 * sizeof(double));
  }
  void doBoundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override {
    if (inGroups()) {
      boundsTiles(q, xyz, count, out);
      return;
    }
    reduceLevels(q, "da_alg_lower", xyz, count, out, 3 * sizeof(float));
    reduceLevels(q, "da_alg_upper", xyz, count, {out.allocation, out.offset + 3 * sizeof(float)}, 3 * sizeof(float));
  }

  OpenCLDevice& device_;
  const PrimitivesShape shape_;
  std::once_flag groupsChecked_;
  bool groupsUsable_ = false;
};

}  // namespace

std::unique_ptr<ParallelPrimitives> makePrimitives(DeviceImpl& device, PrimitivesShape shape) {
  auto* opencl = dynamic_cast<OpenCLDevice*>(&device);
  if (opencl == nullptr)
    fail(ErrorCode::InvalidArgument, "opencl::makePrimitives: the device is not an OpenCL device");
  return std::make_unique<OpenCLPrimitives>(*opencl, shape);
}

std::unique_ptr<ParallelPrimitives> makePrimitives(OpenCLDevice& device) {
  // A CPU runs a contiguous chunk per work item best; GPUs and accelerators need
  // work-groups with coalesced loads.
  const bool cpu =
      (deviceInfo<cl_device_type>(device.device(), CL_DEVICE_TYPE, "CL_DEVICE_TYPE") & CL_DEVICE_TYPE_CPU) != 0;
  const PrimitivesShape byType = cpu ? PrimitivesShape::chunked : PrimitivesShape::workGroups;
  return std::make_unique<OpenCLPrimitives>(device, requestedShape().value_or(byType));
}

}  // namespace devicearray::detail::opencl

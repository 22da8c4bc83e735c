// The OpenCL device's parallel primitives (backend/parallel_primitives.hpp): host code
// that sequences the kernels of scan_sort_reduce.cl (see there for the
// chunk-per-work-item design) through DeviceImpl::launch. Temporaries come from DeviceImpl::allocate on the same
// queue and are released in stream order after the work recorded on them.
#include <algorithm>
#include <memory>
#include <vector>

#include "opencl/opencl_device.hpp"

namespace devicearray::detail::opencl {
namespace {

/// Elements one work item processes sequentially. Large enough that the per-chunk
/// levels shrink fast (2^21 points: 8192 chunks, then 32, then 1), small enough to keep
/// thousands of work items busy.
constexpr std::size_t kChunk = 256;

std::size_t chunksOf(std::size_t n) { return std::max<std::size_t>(1, (n + kChunk - 1) / kChunk); }

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

void launch1d(QueueImpl& q, const char* name, std::size_t items, std::vector<KernelArg> args) {
  KernelLaunch l;
  l.name = name;
  l.workDims = 1;
  l.globalSize = {items, 1, 1};
  l.args = std::move(args);
  q.device()->launch(l, q);
}

void scanLevel(QueueImpl& q, Temporaries& temps, BufferRef in, BufferRef out, std::size_t n) {
  const std::size_t chunks = chunksOf(n);
  if (chunks == 1) {
    launch1d(q, "da_alg_scan_apply", 1, {i64(n), i64(kChunk), i64(1), KernelArg::i32(0), buf(in), buf(in), buf(out)});
    return;
  }
  const BufferRef partial = temps.allocate(chunks * sizeof(std::uint32_t));
  launch1d(q, "da_alg_scan_reduce", chunks, {i64(n), i64(kChunk), i64(chunks), buf(in), buf(partial)});
  scanLevel(q, temps, partial, partial, chunks);
  launch1d(q, "da_alg_scan_apply", chunks,
           {i64(n), i64(kChunk), i64(chunks), KernelArg::i32(1), buf(partial), buf(in), buf(out)});
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

/// Stable LSD radix sort, 4 bits a pass: per-chunk digit counts, their digit-major
/// exclusive scan, then an in-order scatter of each chunk.
void radixSort(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
               std::size_t count, int endBit) {
  const int passes = (endBit + 3) / 4;
  const std::size_t chunks = chunksOf(count);
  Temporaries temps(q);
  const BufferRef hist = temps.allocate(16 * chunks * sizeof(std::uint32_t));
  BufferRef tmpKeys, tmpValues;
  if (passes > 1) {
    tmpKeys = temps.allocate(count * sizeof(std::uint64_t));
    tmpValues = temps.allocate(count * sizeof(std::uint32_t));
  }
  // Ping-pong between the outputs and the temporaries, arranged so that the last pass
  // writes the outputs and the inputs are only read.
  BufferRef srcK = keysIn, srcV = valuesIn;
  for (int pass = 0; pass < passes; ++pass) {
    const bool toOutput = ((passes - 1 - pass) % 2) == 0;
    const BufferRef dstK = toOutput ? keysOut : tmpKeys;
    const BufferRef dstV = toOutput ? valuesOut : tmpValues;
    const int shift = 4 * pass;
    launch1d(q, "da_alg_radix_count", chunks,
             {i64(count), i64(kChunk), i64(chunks), KernelArg::i32(shift), buf(srcK), buf(hist)});
    scanLevel(q, temps, hist, hist, 16 * chunks);
    launch1d(q, "da_alg_radix_scatter", chunks,
             {i64(count), i64(kChunk), i64(chunks), KernelArg::i32(shift), buf(hist), buf(srcK), buf(srcV),
              buf(dstK), buf(dstV)});
    srcK = dstK;
    srcV = dstV;
  }
}

/// The primitives of an OpenCL device: the kernels of scan_sort_reduce.cl, sequenced
/// through DeviceImpl::launch.
class OpenCLPrimitives final : public ParallelPrimitives {
 public:
  using ParallelPrimitives::ParallelPrimitives;

 private:
  void doExclusiveScanU32(QueueImpl& q, BufferRef in, BufferRef out, std::size_t count) override {
    Temporaries temps(q);
    scanLevel(q, temps, in, out, count);
  }
  void doSortPairsU64U32(QueueImpl& q, BufferRef keysIn, BufferRef valuesIn, BufferRef keysOut, BufferRef valuesOut,
                         std::size_t count, int endBit) override {
    radixSort(q, keysIn, valuesIn, keysOut, valuesOut, count, endBit);
  }
  void doSumValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override {
    reduceLevels(q, "da_alg_sum", xyz, count, out, 4 * sizeof(double));
  }
  void doBoundsValidXYZ(QueueImpl& q, BufferRef xyz, std::size_t count, BufferRef out) override {
    reduceLevels(q, "da_alg_lower", xyz, count, out, 3 * sizeof(float));
    reduceLevels(q, "da_alg_upper", xyz, count, {out.allocation, out.offset + 3 * sizeof(float)}, 3 * sizeof(float));
  }
};

}  // namespace

std::unique_ptr<ParallelPrimitives> makePrimitives(OpenCLDevice& device) {
  return std::make_unique<OpenCLPrimitives>(device);
}

}  // namespace devicearray::detail::opencl

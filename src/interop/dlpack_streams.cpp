// The consumer / producer stream handshake of the DLPack and array-API protocols.
#include "devicearray/dlpack.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend/backend.hpp"
#include "devicearray/error.hpp"

namespace devicearray {

namespace {

/// Storage that aliases another allocation without ordering of its own: exporting
/// through it does not wait for the library's queues (the consumer's stream was made
/// to wait instead), and it keeps the real storage alive.
class UnorderedAlias final : public detail::Allocation {
 public:
  explicit UnorderedAlias(std::shared_ptr<detail::Allocation> target)
      : Allocation(target->device(), target->handle(), target->bytes(), /*owned=*/false),
        target_(std::move(target)) {}

 private:
  std::shared_ptr<detail::Allocation> target_;
};

std::shared_ptr<detail::QueueImpl> queueOf(const GpuMatND& array, const StreamOrQueue& sq, const char* fn) {
  if (array.empty() || !array.allocation())
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty");
  return array.allocation()->device()->queueFor(sq, fn);
}

}  // namespace

GpuMatND readyOnConsumerStream(const GpuMatND& array, std::optional<StreamOrQueue> consumer) {
  constexpr const char* fn = "readyOnConsumerStream";
  if (array.empty() || !array.allocation())
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty");
  if (consumer) array.allocation()->beforeUse(*queueOf(array, *consumer, fn));
  GpuMatND out = GpuMatND::fromAllocation(std::make_shared<UnorderedAlias>(array.allocation()), array.offset(),
                                          array.size, array.type(), array.step);
  out.flags = array.flags;
  return out;
}

void orderAfterProducerStream(const GpuMatND& array, StreamOrQueue producer) {
  const std::shared_ptr<detail::QueueImpl> queue = queueOf(array, producer, "orderAfterProducerStream");
  array.allocation()->afterUse(*queue, queue->recordEvent());
}

}  // namespace devicearray

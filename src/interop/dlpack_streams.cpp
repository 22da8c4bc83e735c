// The consumer / producer stream handshake of the DLPack and array-API protocols.
#include "devicearray/dlpack.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend/backend.hpp"
#include "core/array_access.hpp"
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
  if (array.empty() || !detail::allocationOf(array))
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty");
  return detail::allocationOf(array)->device()->queueFor(sq, fn);
}

}  // namespace

GpuMatND readyOnConsumerStream(const GpuMatND& array, std::optional<StreamOrQueue> consumer) {
  constexpr const char* fn = "readyOnConsumerStream";
  if (array.empty() || !detail::allocationOf(array))
    throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": the array is empty");
  if (consumer) detail::allocationOf(array)->beforeUse(*queueOf(array, *consumer, fn));
  GpuMatND out = detail::makeGpuMatND(std::make_shared<UnorderedAlias>(detail::allocationOf(array)),
                                      detail::offsetOf(array), array.size, array.type(), array.step);
  out.flags = array.flags;
  return out;
}

void orderAfterProducerStream(const GpuMatND& array, StreamOrQueue producer) {
  const std::shared_ptr<detail::QueueImpl> queue = queueOf(array, producer, "orderAfterProducerStream");
  detail::allocationOf(array)->afterUse(*queue, queue->recordEvent());
}

}  // namespace devicearray

// Host threads that split large memcpy calls, for the pageable-memory staging of
// the CUDA copy engine (cuda_copy.cu). One thread's memcpy between pageable and
// page-locked memory runs at a fraction of the PCIe link rate; the link is only
// kept busy when several cores copy the chunks a DMA transfer moves.
#pragma once

#include <cstddef>

namespace devicearray::detail::cuda {

/// memcpy(dst, src, bytes), split across the worker threads and the calling thread
/// when it is large enough to gain from it. Callable from CUDA host callbacks (it
/// makes no CUDA call) and from several threads at once. Never throws.
void parallelMemcpy(void* dst, const void* src, std::size_t bytes) noexcept;

/// Number of worker threads (0 when none could be started: copies run inline).
/// Half the cores, at most 8, counting the caller; DEVICEARRAY_COPY_THREADS=N
/// (1..64, read once) sets the total instead.
std::size_t copyThreadCount() noexcept;

}  // namespace devicearray::detail::cuda

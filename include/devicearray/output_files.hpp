// devicearray — clean-up after interrupted file writes. writePly, writePcd, writeXyz
// and writePng write a temporary file next to the target and rename it over the
// target when complete; removeUnfinishedOutputFiles removes the temporaries of writes
// still in progress.
#pragma once

namespace devicearray {

/// Removes the temporary files of writePly() / writePcd() / writeXyz() / writePng()
/// calls still in progress in this process. Async-signal-safe (it only reads lock-free
/// atomics and calls unlink), so a SIGINT / SIGTERM handler can call it before _exit():
/// an interrupted write then leaves the old file intact and no temporary behind. Does
/// not block.
void removeUnfinishedOutputFiles() noexcept;

}  // namespace devicearray

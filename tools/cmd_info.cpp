// `devicearray info`: the compute devices this build can use.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "devicearray/device.hpp"
#include "devicearray/error.hpp"

namespace devicearray::cli {
namespace {

std::string gib(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return b;
}

/// A device query that may fail on a flaky driver: the table shows "?" instead of aborting.
template <class Fn>
std::string orUnknown(Fn&& fn) {
  try {
    return fn();
  } catch (const Error&) {
    return "?";
  }
}

std::string builtBackends() {
  std::string s;
#ifdef DEVICEARRAY_HAS_CUDA
  s += "CUDA";
#endif
#ifdef DEVICEARRAY_HAS_OPENCL
  s += s.empty() ? "OpenCL" : ", OpenCL";
#endif
  return s.empty() ? "none" : s;
}

void runInfo() {
  const std::vector<ComputeDevice> devices = ComputeDevice::all();
  if (devices.empty())
    throw Error(ErrorCode::BackendUnavailable,
                "no usable compute device (backends in this build: " + builtBackends() +
                    "; check the NVIDIA driver or the OpenCL ICD loader and its platforms)");
  std::printf("%-3s %-10s %-40s %-28s %12s %12s\n", "#", "backend", "model", "vendor", "total", "free");
  int index = 0;
  for (const ComputeDevice& d : devices) {
    const std::string backend = d.backend() == ComputeBackend::cuda ? "cuda" : "opencl";
    const std::string model = orUnknown([&] { return d.model(); });
    const std::string vendor = orUnknown([&] { return d.vendor(); });
    const std::string total = orUnknown([&] { return gib(d.totalMemory()); });
    const std::string freeMem = orUnknown([&] { return gib(d.freeMemory()); });
    std::printf("%-3d %-10s %-40.40s %-28.28s %12s %12s\n", index++, (backend + ":" + std::to_string(d.ordinal())).c_str(),
                model.c_str(), vendor.c_str(), total.c_str(), freeMem.c_str());
  }
}

}  // namespace

void addInfoCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "info", "List every usable compute device: backend, model, vendor, total and free memory.");
  cmd->callback(runInfo);
}

}  // namespace devicearray::cli

// ComputeDevice, ComputeBackend, Stream, Event and synchronize_stream.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common.hpp"

namespace devicearray::python {

namespace {

std::uintptr_t handleValue(void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// A StreamOrQueue of `backend` around the integer handle `handle`. A value that
/// cannot be a handle of that backend is a ValueError here: the driver would
/// dereference it.
StreamOrQueue streamOrQueueOf(ComputeBackend backend, std::uintptr_t handle, const char* fn) {
  void* native = reinterpret_cast<void*>(handle);
  if (backend == ComputeBackend::cuda) {
    // 0, 1 and 2: the legacy default stream (as 0 or cudaStreamLegacy) and the per-thread one.
    if (handle > 2 && !plausiblePointer(handle))
      throw nb::value_error((std::string(fn) + ": " + std::to_string(handle) + " is not a cudaStream_t").c_str());
    return CUDAStreamPtr{native};
  }
  if (!plausiblePointer(handle))
    throw nb::value_error((std::string(fn) + ": " + std::to_string(handle) +
                           " is not a cl_command_queue (0, 1 and 2 name CUDA's default streams; this device is "
                           "OpenCL)")
                              .c_str());
  return OpenCLCommandQueuePtr{native};
}

}  // namespace

void bindDevices(nb::module_& m) {
  nb::enum_<ComputeBackend>(m, "ComputeBackend", "The two compute backends.")
      .value("cuda", ComputeBackend::cuda)
      .value("opencl", ComputeBackend::opencl);

  nb::class_<ComputeDevice>(m, "ComputeDevice",
                            "A handle to one CUDA device (its primary context) or one OpenCL device. Cheap to copy; "
                            "handles compare equal when they name the same device.")
      .def_static("all", &ComputeDevice::all, nb::call_guard<nb::gil_scoped_release>(),
                  "Every usable device of every backend of this build (CUDA first, then OpenCL).")
      .def_static("default_device", &ComputeDevice::defaultDevice, nb::call_guard<nb::gil_scoped_release>(),
                  "DEVICEARRAY_BACKEND / DEVICEARRAY_DEVICE, else the first CUDA device, else the first OpenCL GPU, "
                  "else the first OpenCL CPU. Raises RuntimeError when there is none.")
      .def_static("cuda", &ComputeDevice::cuda, nb::arg("ordinal") = 0, nb::call_guard<nb::gil_scoped_release>(),
                  "CUDA device `ordinal` (IndexError when out of range, RuntimeError without CUDA).")
      .def_static("opencl", &ComputeDevice::opencl, nb::arg("index") = 0, nb::call_guard<nb::gil_scoped_release>(),
                  "OpenCL device `index` among the OpenCL devices of all().")
      .def_static(
          "from_opencl",
          [](std::uintptr_t context, std::uintptr_t device, std::uintptr_t queue) {
            return ComputeDevice::fromOpenCL(reinterpret_cast<void*>(context), reinterpret_cast<void*>(device),
                                             reinterpret_cast<void*>(queue));
          },
          nb::arg("context"), nb::arg("device"), nb::arg("queue"),
          "Adopts (retains) a cl_context, cl_device_id and cl_command_queue given as integers.")
      .def("backend", &ComputeDevice::backend)
      .def("ordinal", &ComputeDevice::ordinal, "CUDA ordinal, or the index among the OpenCL devices of all().")
      .def("model", &ComputeDevice::model)
      .def("vendor", &ComputeDevice::vendor)
      .def("to_string", &ComputeDevice::toString)
      .def("is_valid", &ComputeDevice::isValid)
      .def("total_memory", &ComputeDevice::totalMemory, nb::call_guard<nb::gil_scoped_release>(), "Bytes.")
      .def("free_memory", &ComputeDevice::freeMemory, nb::call_guard<nb::gil_scoped_release>(), "Bytes.")
      .def("native_context", [](const ComputeDevice& d) { return handleValue(d.nativeContext()); },
           "CUcontext (primary context) or cl_context, as an integer.")
      .def("native_stream_handle", [](const ComputeDevice& d) { return handleValue(d.nativeStreamHandle()); },
           "The library's own cudaStream_t / cl_command_queue, as an integer.")
      .def("sdk_stream", [](const ComputeDevice& d) { return Stream::wrap(d, d.sdkStreamOrQueue()); },
           "The library's own stream / queue of this device, as a (non-owning) Stream.")
      .def("__str__", &ComputeDevice::toString)
      .def("__repr__", [](const ComputeDevice& d) {
        return d.isValid() ? "<devicearray.ComputeDevice " + d.toString() + ">"
                           : std::string("<devicearray.ComputeDevice (invalid)>");
      })
      .def("__eq__", [](const ComputeDevice& a, const ComputeDevice& b) { return a == b; })
      .def("__eq__", [](const ComputeDevice&, nb::handle) { return false; })
      .def("__hash__", [](const ComputeDevice& d) { return std::hash<const void*>()(d.impl().get()); });

  nb::class_<Stream>(m, "Stream",
                     "A CUDA stream or OpenCL in-order command queue: owned by the library, or a non-owning wrapper "
                     "of the caller's (Stream.wrap). Copies share the stream.")
      .def("__init__",
           [](Stream* self, std::optional<ComputeDevice> device) {
             nb::gil_scoped_release release;
             new (self) Stream(deviceOrDefault(device));
           },
           nb::arg("device") = nb::none(), "A new stream (CUDA, non-blocking) / queue on `device` (default device).")
      .def_static(
          "wrap",
          [](const ComputeDevice& device, std::uintptr_t handle) {
            return Stream::wrap(device, streamOrQueueOf(device.backend(), handle, "Stream.wrap"));
          },
          nb::arg("device"), nb::arg("handle"),
          "Wraps the caller's cudaStream_t (0 = legacy default, 2 = per-thread default) or cl_command_queue, given "
          "as an integer; the caller keeps it alive.")
      .def("query_if_complete", &Stream::queryIfComplete, "True when all enqueued work has completed. Non-blocking.")
      .def("wait_for_completion",
           [](Stream& s) {
             const std::uint64_t mark = heldHostObjectMark();
             {
               nb::gil_scoped_release release;
               s.waitForCompletion();
             }
             releaseCompletedHostObjects(s.handle().native(), mark);
           },
           "Blocks until all enqueued work has completed.")
      .def("wait_event", &Stream::waitEvent, nb::arg("event"),
           "Later work on this stream waits for `event` (device-side, no host sync).")
      .def("handle", [](const Stream& s) { return handleValue(s.handle().native()); },
           "The cudaStream_t / cl_command_queue as an integer.")
      .def("device", &Stream::device)
      .def("__repr__", [](const Stream& s) {
        return "<devicearray.Stream " + std::to_string(handleValue(s.handle().native())) + " on " +
               s.device().toString() + ">";
      });

  nb::class_<Event>(m, "Event", "A marker in a stream (timing-capable).")
      .def(nb::init<const ComputeDevice&>(), nb::arg("device"))
      .def("record", &Event::record, nb::arg("stream"), "Captures the work enqueued on `stream` so far. Non-blocking.")
      .def("query_if_complete", &Event::queryIfComplete)
      .def("wait_for_completion", &Event::waitForCompletion, nb::call_guard<nb::gil_scoped_release>())
      .def_static("elapsed_time", &Event::elapsedTime, nb::arg("start"), nb::arg("end"),
                  nb::call_guard<nb::gil_scoped_release>(), "Milliseconds between two recorded events.");

  m.def(
      "synchronize_stream",
      [](const Stream& s) {
        const std::uint64_t mark = heldHostObjectMark();
        {
          nb::gil_scoped_release release;
          synchronizeStream(s.handle());
        }
        releaseCompletedHostObjects(s.handle().native(), mark);
      },
      nb::arg("stream"), "Blocks until all work on `stream` has completed.");
  m.def(
      "synchronize_stream",
      [](std::uintptr_t handle, ComputeBackend backend) {
        const StreamOrQueue sq = streamOrQueueOf(backend, handle, "synchronize_stream");
        nb::gil_scoped_release release;
        synchronizeStream(sq);
      },
      nb::arg("handle"), nb::arg("backend").noconvert(),
      "Blocks until all work on the raw cudaStream_t / cl_command_queue `handle` has completed.");
}

}  // namespace devicearray::python

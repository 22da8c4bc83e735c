// FrameLoop and LoopFrame: the frame pipeline on a stream of numpy frames, several in
// flight. The numpy arrays of a frame are held until its stream has passed them.
#include <nanobind/stl/optional.h>

#include <mutex>
#include <string>

#include "common.hpp"
#include "devicearray/frame_loop.hpp"

namespace devicearray::python {

namespace {

/// One frame array as the loop takes it: (H, W, channels) of `depth` when channels > 1,
/// (H, W) otherwise. ValueError naming the argument for another shape or dtype.
HostMat frameArray(const HostInput& in, int channels, Depth depth, const char* what) {
  const std::string shape = channels > 1 ? "(H, W, " + std::to_string(channels) + ")" : "(H, W)";
  const std::size_t axes = channels > 1 ? 3 : 2;
  if (in.shape.size() != axes || (channels > 1 && in.shape.back() != channels)) {
    std::string got = "(";
    for (std::size_t i = 0; i < in.shape.size(); ++i) got += (i ? ", " : "") + std::to_string(in.shape[i]);
    throw nb::value_error(
        (std::string("FrameLoop.submit: ") + what + " must have shape " + shape + ", not " + got + ")").c_str());
  }
  if (in.depth != depth)
    throw nb::value_error((std::string("FrameLoop.submit: ") + what + " must be " + pyStr(dtypeOf(depth)) +
                           ", not " + pyStr(dtypeOf(in.depth)))
                              .c_str());
  return hostView(in, channels);
}

/// The loop with a lock: Python threads may share it, and submit() runs with the GIL
/// released.
struct PyFrameLoop {
  PyFrameLoop(const PipelineStages& stages, const ComputeDevice& device, int framesInFlight)
      : loop(stages, device, framesInFlight) {}
  std::mutex mutex;
  FrameLoop loop;
};

nb::object noneOr(bool present, nb::object value) { return present ? std::move(value) : nb::none(); }

}  // namespace

void bindFrameLoop(nb::module_& m) {
  nb::class_<LoopFrame>(m, "LoopFrame",
                        "One frame of a FrameLoop: its results, still being computed on `stream`. The arrays are the "
                        "frame's own: later frames never write them.")
      .def_ro("index", &LoopFrame::index, "0 for the first frame submitted to the loop")
      .def_ro("stream", &LoopFrame::stream,
              "The stream all of the frame's work is enqueued on: order the frame's consumers after it (e.g. "
              "torch.cuda.ExternalStream(frame.stream.handle()) or stream.wait_for_completion()).")
      .def_prop_ro("is_organized", &LoopFrame::isOrganized, "Whether the result is `cloud` (else `points`)")
      .def_prop_ro(
          "cloud", [](const LoopFrame& f) { return noneOr(f.isOrganized(), nb::cast(f.cloud)); },
          "The organized result (PointCloud) when the stages keep the grid, else None")
      .def_prop_ro(
          "normals",
          [](const LoopFrame& f) { return noneOr(!f.normals.isEmpty(), nb::cast(AnyDeviceArray{f.normals})); },
          "The organized result's normals (NormalXYZ DeviceArray) with normals=True, else None")
      .def_prop_ro(
          "points", [](const LoopFrame& f) { return noneOr(!f.isOrganized(), nb::cast(f.points)); },
          "The unorganized result (UnorganizedPointCloud, its size read when first needed) when the stages "
          "unorganize, else None")
      .def("__repr__", [](const LoopFrame& f) {
        return "LoopFrame(index=" + std::to_string(f.index) + (f.isOrganized() ? ", organized)" : ", unorganized)");
      });

  nb::class_<PyFrameLoop>(
      m, "FrameLoop",
      "The stages of a PipelineStages run on camera frames as they arrive, up to frames_in_flight at once, each on a "
      "stream of its own. submit() enqueues a frame's upload and stages and returns its LoopFrame without waiting "
      "for the device, except for a free slot (the frame submitted frames_in_flight calls earlier). The points are "
      "those run_pipeline gives for the same frame; the results stay on the device.")
      .def(
          "__init__",
          [](PyFrameLoop* self, const PipelineStages& stages, std::optional<ComputeDevice> device,
             nb::handle framesInFlight) {
            const int k = static_cast<int>(intArgument(framesInFlight, "FrameLoop: frames_in_flight", 1, 64));
            const ComputeDevice d = deviceOrDefault(device);
            nb::gil_scoped_release release;
            new (self) PyFrameLoop(stages, d, k);
          },
          nb::arg("stages"), nb::arg("device") = nb::none(), nb::arg("frames_in_flight") = 3,
          "A loop on `device` (default device) with frames_in_flight (1..64) streams.")
      .def(
          "submit",
          [](PyFrameLoop& self, nb::handle xyz, nb::handle colors, nb::handle snrs) {
            const HostInput x = hostInput(xyz, false, "FrameLoop.submit: xyz");
            const HostMat xyzView = frameArray(x, 3, Depth::F32, "xyz");
            HostInput c, s;
            HostMat colorsView, snrsView;
            if (!colors.is_none()) {
              c = hostInput(colors, false, "FrameLoop.submit: colors");
              colorsView = frameArray(c, 4, Depth::U8, "colors");
            }
            if (!snrs.is_none()) {
              s = hostInput(snrs, false, "FrameLoop.submit: snrs");
              snrsView = frameArray(s, 1, Depth::F32, "snrs");
            }
            LoopFrame frame;
            {
              nb::gil_scoped_release release;
              const std::lock_guard<std::mutex> lock(self.mutex);
              frame = self.loop.submit(xyzView, colorsView, snrsView);
            }
            // The uploads read the arrays in stream order, after this call returns.
            holdUntilComplete(frame.stream, x.keep);
            if (c.keep.is_valid()) holdUntilComplete(frame.stream, c.keep);
            if (s.keep.is_valid()) holdUntilComplete(frame.stream, s.keep);
            return frame;
          },
          nb::arg("xyz"), nb::arg("colors") = nb::none(), nb::arg("snrs") = nb::none(),
          "Enqueues a frame: xyz (H, W, 3) float32 in mm (NaN = missing), colors (H, W, 4) uint8 sRGB codes or None, "
          "snrs (H, W) float32 or None. The arrays are held until the frame's stream has read them. Returns its "
          "LoopFrame.")
      .def(
          "synchronize",
          [](PyFrameLoop& self) {
            nb::gil_scoped_release release;
            const std::lock_guard<std::mutex> lock(self.mutex);
            self.loop.synchronize();
          },
          "Blocks until the work of every submitted frame has completed.")
      .def_prop_ro("stages", [](PyFrameLoop& self) { return self.loop.stages(); }, "The PipelineStages it runs")
      .def_prop_ro("device", [](PyFrameLoop& self) { return self.loop.device(); }, "Its ComputeDevice")
      .def_prop_ro("frames_in_flight", [](PyFrameLoop& self) { return self.loop.framesInFlight(); },
                   "Frames (streams) in flight at most")
      .def_prop_ro("submitted", [](PyFrameLoop& self) { return self.loop.submitted(); },
                   "Frames submitted so far (the next frame's index)");
}

}  // namespace devicearray::python

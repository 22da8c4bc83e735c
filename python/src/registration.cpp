// localPointCloudRegistration and its parameters and result. The registration blocks
// (each ICP step reads its sums back); with `stream` it runs there.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "common.hpp"
#include "devicearray/registration.hpp"

namespace devicearray::python {

void bindRegistration(nb::module_& m) {
  using Parameters = LocalPointCloudRegistrationParameters;
  using Result = LocalPointCloudRegistrationResult;
  nb::class_<Parameters>(m, "LocalPointCloudRegistrationParameters",
                         "How local_point_cloud_registration searches and when it stops.")
      .def(
          "__init__",
          [](Parameters* self, float maxCorrespondenceDistance, int maxIterations, float rmsChangeThreshold,
             float coverageChangeThreshold, float minSourceCoverage) {
            new (self) Parameters{maxCorrespondenceDistance, maxIterations, rmsChangeThreshold,
                                  coverageChangeThreshold, minSourceCoverage};
          },
          nb::arg("max_correspondence_distance") = Parameters{}.maxCorrespondenceDistance,
          nb::arg("max_iterations") = Parameters{}.maxIterations,
          nb::arg("rms_change_threshold") = Parameters{}.rmsChangeThreshold,
          nb::arg("coverage_change_threshold") = Parameters{}.coverageChangeThreshold,
          nb::arg("min_source_coverage") = Parameters{}.minSourceCoverage)
      .def_rw("max_correspondence_distance", &Parameters::maxCorrespondenceDistance,
              "Pairs farther apart than this (mm) are not correspondences.")
      .def_rw("max_iterations", &Parameters::maxIterations)
      .def_rw("rms_change_threshold", &Parameters::rmsChangeThreshold,
              "Converged when the RMS error changes by less than this (mm) ...")
      .def_rw("coverage_change_threshold", &Parameters::coverageChangeThreshold,
              "... and the source coverage by less than this from one step to the next.")
      .def_rw("min_source_coverage", &Parameters::minSourceCoverage,
              "A registration ending with less coverage is not converged.")
      .def("__repr__", [](const Parameters& p) {
        return "LocalPointCloudRegistrationParameters(max_correspondence_distance=" +
               std::to_string(p.maxCorrespondenceDistance) + ", max_iterations=" + std::to_string(p.maxIterations) +
               ")";
      });

  nb::class_<Result>(m, "LocalPointCloudRegistrationResult", "What local_point_cloud_registration found.")
      .def_prop_ro("transform", [](const Result& r) { return matrixTo(r.transform()); },
                   "The 4x4 rigid transform (numpy float32) that maps source points into the target's frame.")
      .def_prop_ro("converged", &Result::converged)
      .def_prop_ro("source_coverage", &Result::sourceCoverage,
                   "Fraction of the source points with a target point within the correspondence distance.")
      .def_prop_ro("root_mean_square_error", &Result::rootMeanSquareError,
                   "RMS of the point-to-plane distances of the correspondences (mm).")
      .def("__repr__", [](const Result& r) {
        return std::string("LocalPointCloudRegistrationResult(converged=") + (r.converged() ? "True" : "False") +
               ", source_coverage=" + std::to_string(r.sourceCoverage()) +
               ", root_mean_square_error=" + std::to_string(r.rootMeanSquareError()) + ")";
      });

  m.def(
      "local_point_cloud_registration",
      [](const UnorganizedPointCloud& target, const UnorganizedPointCloud& source,
         std::optional<Parameters> parameters, nb::handle initialTransform, const Stream* stream) {
        const Matrix4x4 initial = initialTransform.is_none()
                                      ? identityMatrix4x4()
                                      : matrixFrom(initialTransform, "local_point_cloud_registration");
        const Parameters p = parameters.value_or(Parameters{});
        nb::gil_scoped_release release;
        return stream != nullptr ? localPointCloudRegistration(target, source, p, initial, stream->handle())
                                 : localPointCloudRegistration(target, source, p, initial);
      },
      nb::arg("target"), nb::arg("source"), nb::arg("parameters") = nb::none(),
      nb::arg("initial_transform") = nb::none(), nb::arg("stream") = nb::none(),
      "Point-to-plane ICP on the device: the rigid transform that maps `source` onto `target`, starting at "
      "`initial_transform` (4x4, default identity). The target's normals are estimated when it has none.");
}

}  // namespace devicearray::python

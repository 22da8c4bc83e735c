// devicearray — umbrella header.
#pragma once

#include "devicearray/error.hpp"
#include "devicearray/types.hpp"
#include "devicearray/device.hpp"
#include "devicearray/stream.hpp"
#include "devicearray/host_mat.hpp"
#include "devicearray/gpu_mat_nd.hpp"
#if __has_include("devicearray/device_array.hpp")
#include "devicearray/device_array.hpp"
#endif
#if __has_include("devicearray/point_cloud.hpp")
#include "devicearray/point_cloud.hpp"
#include "devicearray/frame_loop.hpp"
#include "devicearray/frame_pipeline.hpp"
#include "devicearray/registration.hpp"
#include "devicearray/rgbd.hpp"
#endif

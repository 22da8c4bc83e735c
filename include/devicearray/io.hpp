// devicearray — host-side point clouds and images, their files (PLY, PCD, XYZ, PNG), a
// synthetic 3-D camera scene and a preview renderer: includes every header below.
//
// Everything here runs on the host only: nothing touches a GPU, takes a stream or
// blocks on device work. The device-side classes (PointCloud, UnorganizedPointCloud,
// Frame2D) are built from and downloaded into these types. Every failure throws
// devicearray::Error; nothing aborts.
#pragma once

#include "devicearray/host_image.hpp"        // HostImage
#include "devicearray/host_normals.hpp"      // estimateOrganizedNormals
#include "devicearray/host_point_cloud.hpp"  // HostPointCloud
#include "devicearray/output_files.hpp"      // removeUnfinishedOutputFiles
#include "devicearray/pinhole_camera.hpp"    // PinholeCamera
#include "devicearray/pcd.hpp"               // PcdFormat, readPcd, writePcd
#include "devicearray/ply.hpp"               // PlyFormat, readPly, writePly
#include "devicearray/point_cloud_file_options.hpp"  // ColorSpace, PointCloudReadOptions, PointCloudWriteOptions
#include "devicearray/point_cloud_files.hpp"  // readPointCloudFile (by extension)
#include "devicearray/png.hpp"               // readPng, writePng, pngSupported
#include "devicearray/render.hpp"            // RenderView, RenderProjection, RenderOptions, renderCloud
#include "devicearray/synthetic_scene.hpp"   // SynthOptions, synthesizeScene
#include "devicearray/xyz.hpp"               // readXyz, writeXyz

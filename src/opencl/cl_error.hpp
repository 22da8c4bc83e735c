// OpenCL status codes as names, and the one place that turns a failed OpenCL
// call into devicearray::Error.
#pragma once

#include <CL/cl.h>

#include <string>

namespace devicearray::detail::opencl {

/// "CL_INVALID_VALUE" for -30; "unknown OpenCL error" for codes no header names.
const char* clErrorName(cl_int code) noexcept;

/// "<function>: <CL error name> (<code>)".
std::string clErrorMessage(const char* function, cl_int code);

/// Throws Error(BackendError, clErrorMessage(function, code)) unless code is CL_SUCCESS.
void checkCl(cl_int code, const char* function);
void checkCl(cl_int code, const std::string& function);

}  // namespace devicearray::detail::opencl

// Kernels of the OpenCL backend. The program (src/kernels/*.h + src/opencl/*.cl,
// embedded by CMake) is built once per device on first use; cl_kernel objects are
// cached by name, and clSetKernelArg + enqueue run under a per-kernel mutex because a
// cl_kernel's arguments are shared state. A typed launch (launch<>) checks the
// program's kernel against its signature once.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/kernel_signature.hpp"
#include "opencl/cl_error.hpp"
#include "opencl/opencl_device.hpp"
#include "opencl/opencl_info.hpp"
#include "opencl/work_group_fit.hpp"

namespace devicearray::detail {
extern const char* const kOpenCLProgramSource;
}

namespace devicearray::detail::opencl {
namespace {

constexpr std::size_t kMaxBuildLogChars = 16000;

/// The OpenCL C name of a scalar type as an implementation may report it (the name as
/// written, a typedef of src/kernels/prelude.h, or the C spelling), or "" when unknown.
std::string canonicalTypeName(std::string name) {
  static const std::pair<const char*, const char*> kAliases[] = {
      {"da_i8", "char"},           {"signed char", "char"},    {"da_u8", "uchar"},
      {"unsigned char", "uchar"},  {"da_i16", "short"},        {"da_u16", "ushort"},
      {"unsigned short", "ushort"}, {"da_i32", "int"},          {"da_u32", "uint"},
      {"unsigned int", "uint"},    {"da_i64", "long"},         {"da_u64", "ulong"},
      {"unsigned long", "ulong"}};
  for (const auto& [alias, canonical] : kAliases)
    if (name == alias) return canonical;
  for (const char* known : {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double"})
    if (name == known) return name;
  return "";
}

/// One argument of a built kernel as clGetKernelArgInfo reports it.
struct ArgInfo {
  std::string name;
  std::string type;  ///< without a trailing '*'
  bool pointer = false;
  bool global = false;
  bool constant = false;
};

/// Argument `index` of `kernel`; false when the program was built without argument
/// information (an implementation may ignore -cl-kernel-arg-info).
bool argInfo(cl_kernel kernel, cl_uint index, ArgInfo& out) {
  auto text = [&](cl_kernel_arg_info what, std::string& value) {
    std::size_t size = 0;
    if (clGetKernelArgInfo(kernel, index, what, 0, nullptr, &size) != CL_SUCCESS) return false;
    value.assign(size, '\0');
    if (clGetKernelArgInfo(kernel, index, what, size, value.data(), nullptr) != CL_SUCCESS) return false;
    while (!value.empty() && value.back() == '\0') value.pop_back();
    return true;
  };
  cl_kernel_arg_address_qualifier address = 0;
  cl_kernel_arg_type_qualifier qualifiers = 0;
  if (!text(CL_KERNEL_ARG_NAME, out.name) || !text(CL_KERNEL_ARG_TYPE_NAME, out.type) ||
      clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, nullptr) !=
          CL_SUCCESS ||
      clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof qualifiers, &qualifiers, nullptr) !=
          CL_SUCCESS)
    return false;
  out.pointer = !out.type.empty() && out.type.back() == '*';
  if (out.pointer) out.type.pop_back();
  out.global = address == CL_KERNEL_ARG_ADDRESS_GLOBAL;
  out.constant = (qualifiers & CL_KERNEL_ARG_TYPE_CONST) != 0;
  return true;
}

/// True unless the reported type is one we know and differs from `type`.
bool typeMatches(const ArgInfo& a, const char* type) {
  const std::string known = canonicalTypeName(a.type);
  return known.empty() || known == type;
}

std::string describe(const ArgInfo& a) {
  return std::string(a.global ? "global " : "") + (a.constant ? "const " : "") + a.type + (a.pointer ? "* " : " ") +
         a.name;
}

std::string describe(const KernelParam& p) {
  return p.buffer ? std::string("buffer of ") + (p.readOnly ? "const " : "") + p.type + " " + p.name
                  : std::string(p.type) + " " + p.name;
}

/// Throws InvalidArgument naming the kernel and the parameter unless `kernel` takes the
/// parameters of `signature` (a buffer as a global pointer and a ulong byte offset; see
/// DA_BUFFER). Types are compared where the implementation reports a name it knows.
void checkSignature(cl_kernel kernel, cl_uint numArgs, const KernelSignature& signature) {
  const std::string fn = std::string("launch(") + signature.name + ")";
  cl_uint expected = 0;
  for (int i = 0; i < signature.count; ++i) expected += signature.params[i].buffer ? 2 : 1;
  if (numArgs != expected)
    fail(ErrorCode::InvalidArgument, fn + ": the OpenCL kernel takes " + std::to_string(numArgs) +
                                         " arguments; its signature declares " + std::to_string(signature.count) +
                                         " parameters, which are " + std::to_string(expected) +
                                         " OpenCL arguments (a buffer is two: pointer and byte offset)");
  cl_uint index = 0;
  for (int i = 0; i < signature.count; ++i) {
    const KernelParam& p = signature.params[i];
    ArgInfo arg;
    if (!argInfo(kernel, index, arg)) return;  // no argument information: the count is all we can check
    bool matches = p.buffer ? arg.pointer && arg.global && arg.constant == p.readOnly &&
                                  arg.name == std::string(p.name) + "_base"
                            : !arg.pointer && arg.name == p.name;
    matches = matches && typeMatches(arg, p.type);
    if (p.buffer && matches) {
      ArgInfo offset;
      matches = argInfo(kernel, index + 1, offset) && !offset.pointer &&
                offset.name == std::string(p.name) + "_offset" && typeMatches(offset, "ulong");
    }
    if (!matches)
      fail(ErrorCode::InvalidArgument, fn + ": parameter " + std::to_string(i) + " of the signature (" + describe(p) +
                                           ") does not match argument " + std::to_string(index) +
                                           " of the OpenCL kernel (" + describe(arg) + ")");
    index += p.buffer ? 2 : 1;
  }
}

}  // namespace

cl_program OpenCLDevice::program() {
  std::lock_guard<std::mutex> lock(programMutex_);
  if (program_ != nullptr) return program_;
  if (!buildError_.empty()) fail(ErrorCode::BackendError, buildError_);
  const char* source = kOpenCLProgramSource;
  const std::size_t length = std::strlen(source);
  cl_int err = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(context_, 1, &source, &length, &err);
  checkCl(err, "building the OpenCL program: clCreateProgramWithSource");
  // Argument information lets a typed launch check the kernel's parameters by name and type.
  std::string options = "-cl-std=CL1.2 -cl-kernel-arg-info";
  if (hasFp64_) options += " -DDA_HAS_FP64=1";
  // Correctly rounded float division where the device offers it: a point on a voxel's
  // edge, (x - min) / size, then lands in the same voxel as on CUDA and the host.
  if (correctlyRoundedDivide_) options += " -cl-fp32-correctly-rounded-divide-sqrt";
  err = clBuildProgram(p, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log;
    std::size_t size = 0;
    if (clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) == CL_SUCCESS && size > 0) {
      log.resize(size);
      clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      while (!log.empty() && log.back() == '\0') log.pop_back();
      if (log.size() > kMaxBuildLogChars) log = log.substr(0, kMaxBuildLogChars) + "\n[build log truncated]";
    }
    clReleaseProgram(p);
    std::string message = "building the OpenCL program for " + describe() + " with \"" + options +
                          "\" failed: " + clErrorMessage("clBuildProgram", err) + "\nbuild log:\n" + log;
    // A compile error is deterministic: report it again instead of rebuilding.
    // Other failures (e.g. out of memory) may be transient and are retried.
    if (err == CL_BUILD_PROGRAM_FAILURE) buildError_ = message;
    fail(ErrorCode::BackendError, message);
  }
  program_ = p;
  return p;
}

OpenCLDevice::KernelSlot& OpenCLDevice::kernel(const char* name) {
  std::lock_guard<std::mutex> lock(kernelsMutex_);
  auto it = kernels_.find(name);
  if (it != kernels_.end()) return *it->second;
  cl_program p = program();
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(p, name, &err);
  if (err == CL_INVALID_KERNEL_NAME)
    fail(ErrorCode::Unsupported, std::string("launch: no OpenCL kernel named '") + name +
                                     "' in the program (kernels come from src/kernels/*.h and src/opencl/*.cl)");
  checkCl(err, std::string("clCreateKernel(") + name + ")");
  auto slot = std::make_unique<KernelSlot>();
  slot->kernel = k;
  const char* query = "clGetKernelInfo";
  err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof slot->numArgs, &slot->numArgs, nullptr);
  if (err == CL_SUCCESS) {
    query = "clGetKernelWorkGroupInfo";
    err = clGetKernelWorkGroupInfo(k, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof slot->maxGroupItems,
                                   &slot->maxGroupItems, nullptr);
  }
  if (err != CL_SUCCESS) {
    clReleaseKernel(k);
    checkCl(err, std::string(query) + "(" + name + ")");
  }
  KernelSlot& ref = *slot;
  kernels_.emplace(name, std::move(slot));
  return ref;
}

bool OpenCLDevice::runsWorkGroupsOf(const char* name, std::size_t size) {
  const cl_kernel k = kernel(name).kernel;
  std::size_t maxGroup = 0;
  cl_ulong localBytes = 0;
  checkCl(clGetKernelWorkGroupInfo(k, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof maxGroup, &maxGroup, nullptr),
          std::string("clGetKernelWorkGroupInfo(") + name + ", CL_KERNEL_WORK_GROUP_SIZE)");
  checkCl(clGetKernelWorkGroupInfo(k, device_, CL_KERNEL_LOCAL_MEM_SIZE, sizeof localBytes, &localBytes, nullptr),
          std::string("clGetKernelWorkGroupInfo(") + name + ", CL_KERNEL_LOCAL_MEM_SIZE)");
  const cl_ulong deviceLocalBytes = deviceInfo<cl_ulong>(device_, CL_DEVICE_LOCAL_MEM_SIZE, "CL_DEVICE_LOCAL_MEM_SIZE");
  return maxGroup >= size && localBytes <= deviceLocalBytes;
}

void OpenCLDevice::enqueueKernel(const char* fn, const char* name, OpenCLQueue& q, cl_uint workDims,
                                 const std::size_t* global, const std::vector<RawArg>& args,
                                 const std::size_t* local) {
  enqueue(kernel(name), fn, name, q, workDims, global, args.data(), args.size(), local);
}

void OpenCLDevice::enqueue(KernelSlot& k, const char* fn, const char* name, OpenCLQueue& q, cl_uint workDims,
                           const std::size_t* global, const RawArg* args, std::size_t argCount,
                           const std::size_t* local) {
  if (argCount != k.numArgs)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": kernel '" + name + "' takes " + std::to_string(k.numArgs) +
                                         " OpenCL arguments but " + std::to_string(argCount) +
                                         " were given (a buffer counts as two: cl_mem and byte offset)");
  std::lock_guard<std::mutex> lock(k.mutex);
  // Messages are formatted only on failure: every launch of every frame passes here.
  for (std::size_t i = 0; i < argCount; ++i) {
    const cl_int err = clSetKernelArg(k.kernel, static_cast<cl_uint>(i), args[i].size, args[i].value);
    if (err == CL_SUCCESS) continue;
    if (err == CL_INVALID_ARG_SIZE || err == CL_INVALID_ARG_VALUE || err == CL_INVALID_MEM_OBJECT)
      fail(ErrorCode::InvalidArgument, std::string(fn) + ": argument " + std::to_string(i) + " of kernel '" + name +
                                           "' does not match its parameter (" + clErrorMessage("clSetKernelArg", err) +
                                           ")");
    checkCl(err, std::string(fn) + ": clSetKernelArg(" + name + ", " + std::to_string(i) + ")");
  }
  const cl_int err = clEnqueueNDRangeKernel(q.queue(), k.kernel, workDims, nullptr, global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) checkCl(err, std::string(fn) + ": clEnqueueNDRangeKernel(" + name + ")");
}

void OpenCLDevice::doLaunch(const KernelLaunch& l, QueueImpl& qi) {
  const char* fn = "launch";
  enqueueLaunch(fn, l, queueOf(qi, fn));
}

void OpenCLDevice::enqueueLaunch(const char* fn, const KernelLaunch& l, OpenCLQueue& q) {
  if (l.name == nullptr || *l.name == '\0')
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": the kernel name is empty");
  if (l.workDims < 1 || l.workDims > 3)
    fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + l.name + ": workDims " + std::to_string(l.workDims) +
                                         " is not 1, 2 or 3");
  l.checkWorkGroup(fn);
  for (int i = 0; i < l.workDims; ++i)
    if (l.globalSize[static_cast<std::size_t>(i)] == 0) return;  // an empty index space launches nothing
  KernelSlot& k = kernel(l.name);
  if (l.signature != nullptr && k.matched.load(std::memory_order_acquire) != l.signature) {
    checkSignature(k.kernel, k.numArgs, *l.signature);
    k.matched.store(l.signature, std::memory_order_release);
  }

  // Storage that outlives the RawArg pointers into it (8 bytes per value): on the stack
  // for the kernels' own parameter lists, which are short.
  constexpr std::size_t kStackArgs = 48;
  const std::size_t n = l.args.size();
  cl_mem stackMems[kStackArgs];
  cl_ulong stackValues[kStackArgs];
  RawArg stackRaw[2 * kStackArgs];
  std::vector<cl_mem> heapMems;
  std::vector<cl_ulong> heapValues;
  std::vector<RawArg> heapRaw;
  cl_mem* mems = stackMems;
  cl_ulong* values = stackValues;
  RawArg* rawArgs = stackRaw;
  if (n > kStackArgs) {
    heapMems.resize(n);
    heapValues.resize(n);
    heapRaw.resize(2 * n);
    mems = heapMems.data();
    values = heapValues.data();
    rawArgs = heapRaw.data();
  }
  std::size_t rawCount = 0;
  auto push = [&](std::size_t size, const void* value) { rawArgs[rawCount++] = RawArg{size, value}; };
  for (std::size_t i = 0; i < n; ++i) {
    const KernelArg& a = l.args[i];
    void* slot = &values[i];
    switch (a.kind) {
      case KernelArg::Kind::buffer: {
        mems[i] = memOf(a.buffer, fn);
        if (a.buffer->bytes() != 0 && a.offset > a.buffer->bytes())
          fail(ErrorCode::OutOfRange, std::string(fn) + ": " + l.name + ": byte offset " +
                                               std::to_string(a.offset) + " of argument " + std::to_string(i) +
                                               " is past the end of its " + std::to_string(a.buffer->bytes()) +
                                               "-byte buffer");
        values[i] = a.offset;
        push(sizeof(cl_mem), &mems[i]);
        push(sizeof(cl_ulong), slot);
        break;
      }
      case KernelArg::Kind::i32: std::memcpy(slot, &a.value.i32, 4); push(4, slot); break;
      case KernelArg::Kind::u32: std::memcpy(slot, &a.value.u32, 4); push(4, slot); break;
      case KernelArg::Kind::f32: std::memcpy(slot, &a.value.f32, 4); push(4, slot); break;
      case KernelArg::Kind::i64: std::memcpy(slot, &a.value.i64, 8); push(8, slot); break;
      case KernelArg::Kind::u64: std::memcpy(slot, &a.value.u64, 8); push(8, slot); break;
      case KernelArg::Kind::f64: std::memcpy(slot, &a.value.f64, 8); push(8, slot); break;
    }
  }
  const auto dims = static_cast<cl_uint>(l.workDims);
  if (l.localSize != 0) {
    const std::size_t local[3] = {l.localSize, 1, 1};
    enqueue(k, fn, l.name, q, dims, l.globalSize.data(), rawArgs, rawCount, local);
    return;
  }
  const FittedWorkGroups fit = fitWorkGroups(l.workDims, l.globalSize, k.maxGroupItems);
  enqueue(k, fn, l.name, q, dims, fit.global.data(), rawArgs, rawCount, fit.explicitLocal ? fit.local.data() : nullptr);
}

}  // namespace devicearray::detail::opencl

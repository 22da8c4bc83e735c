/* Parameter lists of the shared kernels, declared once for the kernel and for the host.
 *
 * A kernel's parameters are an X-macro in a header of src/backend/ without kernel
 * bodies (conversion_signatures.h, pointcloud_signatures.h, ...):
 *
 *   #define DA_SCALE_PARAMS(S0, B0, S, B) S0(int, n) S(float, s) B(float, data)
 *
 * S(T, name) is a scalar of type T, B(T, name) a buffer whose elements the kernel sees
 * as T (const T when it only reads them); the first parameter is written S0 or B0; types are int, float and the da_* integer
 * types of src/kernels/prelude.h. The kernel expands the list with DA_PARAMS and
 * DA_BUFFERS_INIT (src/kernels/NAME.h):
 *
 *   DA_KERNEL(da_scale)(DA_PARAMS(DA_SCALE_PARAMS)) {
 *     DA_BUFFERS_INIT(DA_SCALE_PARAMS);
 *     ...
 *   }
 *
 * and the host with DA_KERNEL_SIGNATURE (kernel_signature.hpp) into the C++ type that
 * launch<kernels::da_scale>(...) checks its arguments against.
 *
 * Why an X-macro: the kernel and the host expand the same text, so they cannot drift on
 * any backend, and the list stays in a header without bodies that core code may include.
 *
 * Plain macros, valid in C++, CUDA C++ and OpenCL C; cmake/EmbedOpenCL.cmake puts every
 * .h file of src/backend/ into the OpenCL program before the kernels. */
#ifndef DEVICEARRAY_BACKEND_KERNEL_PARAMS_H
#define DEVICEARRAY_BACKEND_KERNEL_PARAMS_H

/* A list is `#define DA_NAME_PARAMS(S0, B0, S, B) ...`: its first parameter written with
 * S0 or B0, the others with S and B, so that an expansion can separate them with commas
 * without a variadic macro (OpenCL C 1.2 has none). */

/* The kernel's parameter list (DA_BUFFER for each buffer). */
#define DA_PARAM_SCALAR_FIRST_(T, name) T name
#define DA_PARAM_BUFFER_FIRST_(T, name) DA_BUFFER(T, name)
#define DA_PARAM_SCALAR_(T, name) , T name
#define DA_PARAM_BUFFER_(T, name) , DA_BUFFER(T, name)
#define DA_PARAMS(list) list(DA_PARAM_SCALAR_FIRST_, DA_PARAM_BUFFER_FIRST_, DA_PARAM_SCALAR_, DA_PARAM_BUFFER_)

/* The kernel body's first statement: the wait for the kernel before it in the stream
 * (DA_AFTER_PREVIOUS_KERNEL, src/kernels/prelude.h), then DA_BUFFER_INIT of every
 * buffer of the list. */
#define DA_INIT_SCALAR_(T, name)
#define DA_INIT_BUFFER_(T, name) DA_BUFFER_INIT(T, name);
#define DA_BUFFERS_INIT(list) \
  DA_AFTER_PREVIOUS_KERNEL(); \
  list(DA_INIT_SCALAR_, DA_INIT_BUFFER_, DA_INIT_SCALAR_, DA_INIT_BUFFER_) (void)0

#endif /* DEVICEARRAY_BACKEND_KERNEL_PARAMS_H */

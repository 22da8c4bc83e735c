// Python values checked at the boundary, so a wrong type or value is a TypeError or
// ValueError naming the argument rather than a failed cast deep inside a call.
#include <nanobind/nanobind.h>

#include <climits>
#include <cstdint>
#include <string>

#include "common.hpp"

namespace devicearray::python {

long long intArgument(nb::handle value, const char* what, long long min, long long max) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
    throw nb::type_error((std::string(what) + " must be an int, not " + typeName(value)).c_str());
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0 || v < min || v > max)
    throw nb::value_error((std::string(what) + " = " + nb::cast<std::string>(nb::repr(value)) + " is out of range [" +
                           std::to_string(min) + ", " + std::to_string(max) + "]")
                              .c_str());
  return v;
}

bool boolArgument(nb::handle value, const char* what) {
  if (PyBool_Check(value.ptr())) return value.ptr() == Py_True;
  // numpy.bool_ (numpy.bool in numpy 2) is what comparisons of arrays give.
  nb::handle type = nb::handle(Py_TYPE(value.ptr()));
  if (nb::hasattr(type, "__module__") && pyStr(type.attr("__module__")) == "numpy") {
    const std::string name = typeName(value);
    if (name == "bool_" || name == "bool") return PyObject_IsTrue(value.ptr()) == 1;
  }
  throw nb::type_error((std::string(what) + " must be None or a bool, not " + typeName(value)).c_str());
}

nb::tuple tupleArgument(nb::handle value, std::size_t n, const char* what) {
  if (!PyTuple_Check(value.ptr()))
    throw nb::type_error((std::string(what) + " must be a tuple of " + std::to_string(n) + " items, not " +
                          typeName(value))
                             .c_str());
  nb::tuple t = nb::borrow<nb::tuple>(value);
  if (t.size() != n)
    throw nb::value_error((std::string(what) + " must have " + std::to_string(n) + " items, got " +
                           std::to_string(t.size()))
                              .c_str());
  return t;
}

// Below 64 KiB nothing is mapped (Linux's default vm.mmap_min_addr; Windows reserves
// the same): such a "handle" is a small integer, not a stream or queue.
bool plausiblePointer(std::uintptr_t handle) { return handle >= 65536 && handle % alignof(void*) == 0; }

}  // namespace devicearray::python

#pragma once
// Whether the calling thread runs a CUDA host function, where CUDA forbids every CUDA call.

namespace weft::device {

namespace detail {
inline thread_local bool insideHostFunction = false;
}  // namespace detail

/// True while the calling thread runs a CUDA host function (cudaLaunchHostFunc, a graph's host
/// node) inside a HostFunctionScope: code it reaches (an abort, say) must make no CUDA call there,
/// which would fail or deadlock.
inline bool insideHostFunction() { return detail::insideHostFunction; }

/// Marks the calling thread as running a CUDA host function for the scope's lifetime.
class HostFunctionScope {
 public:
  HostFunctionScope() { detail::insideHostFunction = true; }
  ~HostFunctionScope() { detail::insideHostFunction = false; }
  HostFunctionScope(const HostFunctionScope&) = delete;
  HostFunctionScope& operator=(const HostFunctionScope&) = delete;
};

}  // namespace weft::device

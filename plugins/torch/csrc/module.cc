// The extension module strata_torch._C: makes StrataBackend objects for
// torch.distributed (strata_torch/__init__.py registers the backend).
#include <torch/extension.h>

#include "backend.h"

namespace {

c10::intrusive_ptr<c10d::Backend> createBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                double timeoutSeconds, const std::string& profilingName) {
  auto timeout = std::chrono::milliseconds(int64_t(timeoutSeconds * 1000.0));
  auto backend = c10::make_intrusive<strata_torch::StrataBackend>(store, rank, size, timeout);
  backend->setProfilingName(profilingName);
  return backend;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "strata's c10d backend for torch.distributed";
  m.def("create_backend", &createBackend, "A strata c10d::Backend bootstrapped through the store",
        py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_seconds"),
        py::arg("profiling_name") = "strata",
        py::call_guard<py::gil_scoped_release>());
  m.def("version", [] {
    int v = 0;
    strataGetVersion(&v);
    return v;
  });
}

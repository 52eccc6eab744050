// Kernel registration for the operators one model runs on the CPU, written by ExecuTorch's
// codegen (executorch.codegen.gen) through executorch_espnn.selective; do not edit.
// This file is a torchgen CodeTemplate of executorch-espnn: ${...} is filled in by the codegen.
//
// executorch_espnn_register_kernels() registers the selected kernels once and returns 0 or
// the ExecuTorch error code.  It also runs from a static initializer when the linker keeps
// this object; static archives drop unreferenced objects, so firmware should call it (or
// reference it) before loading the program.

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/event_tracer_hooks.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/kernel/kernel_includes.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/log.h>
#include <executorch/runtime/platform/profiler.h>

#include "${fn_header}"

namespace torch {
namespace executor {
namespace {

using KernelArrayRef = ::executorch::runtime::Span<const Kernel>;

// The trailing Kernel() keeps the array well-formed when every operator is delegated; it is
// not registered.
const Kernel selected_kernels[] = {
    ${unboxed_kernels} // each Kernel(...) entry ends with a comma
    Kernel()};

constexpr size_t kSelectedKernels = sizeof(selected_kernels) / sizeof(selected_kernels[0]) - 1;

} // namespace
} // namespace executor
} // namespace torch

extern "C" int executorch_espnn_register_kernels(void) {
    static const int result = [] {
        if (torch::executor::kSelectedKernels == 0) {
            return 0;
        }
        const auto err = ::executorch::runtime::register_kernels(torch::executor::KernelArrayRef(
            torch::executor::selected_kernels, torch::executor::kSelectedKernels));
        if (err != ::executorch::runtime::Error::Ok) {
            ET_LOG(Error, "registering the model's CPU kernels failed: 0x%x",
                   static_cast<unsigned>(err));
        }
        return static_cast<int>(err);
    }();
    return result;
}

namespace {
[[maybe_unused]] const int selected_kernels_registered = executorch_espnn_register_kernels();
} // namespace

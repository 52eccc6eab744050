# The ExecuTorch runtime a firmware compiles from ExecuTorch's own sources: the one list of its
# source files, defines and include dirs, of the schema headers to generate, and of where the
# CPU kernel of a selected operator lives.  ExecuTorch's sources come from no package registry
# reachable here; a build takes a source tree of pytorch/executorch at the release of the pinned
# executorch wheel (docs/component.md, "The ExecuTorch runtime from sources").
#
# One file, three readers:
#   CMake   include() it: plain set() commands, nothing else;
#   Python  executorch_espnn.runtime_sources (typed reader; SCons builds and the emulated
#           firmware driver use it), which refuses anything but comments and set();
#   tests   tests/test_runtime_sources.py checks the reader, that CMake reads the same lists, and,
#           with EXECUTORCH_SOURCE_DIR set, the lists against the tree's build_variables.bzl.
#
# Paths are relative to the root of the ExecuTorch tree unless a comment says otherwise.

# The runtime: Program, Method, the backend and kernel registries, the platform glue.
# ExecuTorch's EXECUTORCH_CORE_SRCS without a default PAL (runtime/platform/default/*.cpp):
# the component brings the one PAL of each world (pal/sources.cmake).
set(EXECUTORCH_RUNTIME_SRCS
  runtime/backend/interface.cpp
  runtime/core/device_allocator.cpp
  runtime/core/device_memory_buffer.cpp
  runtime/core/evalue.cpp
  runtime/core/exec_aten/util/tensor_shape_to_c_string.cpp
  runtime/core/exec_aten/util/tensor_util_portable.cpp
  runtime/core/portable_type/tensor_impl.cpp
  runtime/core/tag.cpp
  runtime/core/tensor_layout.cpp
  runtime/executor/method.cpp
  runtime/executor/method_meta.cpp
  runtime/executor/program.cpp
  runtime/executor/program_validation.cpp
  runtime/executor/pte_data_map.cpp
  runtime/executor/tensor_parser_exec_aten.cpp
  runtime/executor/tensor_parser_portable.cpp
  runtime/kernel/operator_registry.cpp
  runtime/platform/abort.cpp
  runtime/platform/log.cpp
  runtime/platform/platform.cpp
  runtime/platform/profiler.cpp
  runtime/platform/runtime.cpp
  schema/extended_header.cpp)

# Used header-only (EspnnModel reads the embedded .pte through it, with no copy).
set(EXECUTORCH_RUNTIME_HEADER_ONLY
  extension/data_loader/buffer_data_loader.h)

# Include dirs of everything that includes ExecuTorch headers.  Besides these (relative to the
# tree), a build adds: the folder that holds the tree under the name `executorch` (sources say
# #include <executorch/runtime/...>; a build dir with a link `executorch` -> the tree does), the
# folder of the generated schema headers (below) and the flatbuffers include dir (below).
set(EXECUTORCH_RUNTIME_INCLUDE_DIRS
  runtime/core/portable_type/c10)

# Defines for every source that includes ExecuTorch headers (the component's too).
set(EXECUTORCH_PUBLIC_DEFINES
  C10_USING_CUSTOM_GENERATED_MACROS)
# Defines for the runtime sources only, as ExecuTorch's CMake build sets them: program data may
# be aligned up to 1024 bytes; the constant_buffer layout older than constant segments is off.
# A firmware adds MAX_KERNEL_NUM=<number of registered kernels> (the default table has 2000
# slots, 24 KB of RAM on a 32-bit chip) and, to drop the log strings, ET_LOG_ENABLED=0.
set(EXECUTORCH_RUNTIME_DEFINES
  FLATBUFFERS_MAX_ALIGNMENT=1024
  ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0)

# Schema headers: flatc (the executorch wheel ships it, executorch/data/bin/flatc) runs in the
# tree's schema/ folder as `flatc <args> -o <gen>/executorch/schema <files>` and writes
# <name>_generated.h for each; <gen> is then an include dir.
set(EXECUTORCH_SCHEMA_SRCS
  schema/program.fbs
  schema/scalar_type.fbs)
set(EXECUTORCH_SCHEMA_FLATC_ARGS
  --cpp --cpp-std c++11 --gen-mutable --scoped-enums)
set(EXECUTORCH_SCHEMA_INCLUDE_SUBDIR
  executorch/schema)

# flatbuffers headers: ExecuTorch's submodule pin, which is also the version of the wheel's flatc
# (the generated headers refuse other versions).  The include dir is relative to a flatbuffers
# source tree.
set(EXECUTORCH_FLATBUFFERS_VERSION
  24.3.25)
set(EXECUTORCH_FLATBUFFERS_INCLUDE_DIR
  include)

# CPU kernels of the operators a model leaves on the CPU (executorch_espnn.selective writes their
# registration).  The kernel of <namespace>::<name>.<overload> is <dir of namespace>/op_<name>.cpp
# unless EXECUTORCH_KERNEL_SOURCE_OVERRIDES lists <namespace>::<name>; a namespace without a dir
# has no kernel a firmware can compile.
set(EXECUTORCH_KERNEL_DIRS
  aten=kernels/portable/cpu
  dim_order_ops=kernels/portable/cpu
  quantized_decomposed=kernels/quantized/cpu)
set(EXECUTORCH_KERNEL_SOURCE_OVERRIDES
  aten::_cdist_forward=kernels/portable/cpu/op_cdist_forward.cpp
  aten::_log_softmax=kernels/portable/cpu/op_log_softmax.cpp
  aten::_native_batch_norm_legit=kernels/portable/cpu/op_native_batch_norm.cpp
  aten::_native_batch_norm_legit_no_training=kernels/portable/cpu/op_native_batch_norm.cpp
  aten::_pdist_forward=kernels/portable/cpu/op_pdist_forward.cpp
  aten::_softmax=kernels/portable/cpu/op_softmax.cpp
  aten::_to_copy=kernels/portable/cpu/op_to_copy.cpp
  aten::_upsample_bilinear2d_aa=kernels/portable/cpu/op_upsample_bilinear2d_aa.cpp
  aten::copy_=kernels/portable/cpu/op_copy.cpp
  aten::index_put_=kernels/portable/cpu/op_index_put.cpp
  quantized_decomposed::choose_qparams_per_token_asymmetric=kernels/quantized/cpu/op_choose_qparams.cpp
  quantized_decomposed::dequantize_per_channel=kernels/quantized/cpu/op_dequantize.cpp
  quantized_decomposed::dequantize_per_tensor=kernels/quantized/cpu/op_dequantize.cpp
  quantized_decomposed::dequantize_per_token=kernels/quantized/cpu/op_dequantize.cpp
  quantized_decomposed::embedding_2bit=kernels/quantized/cpu/op_embedding2b.cpp
  quantized_decomposed::embedding_4bit=kernels/quantized/cpu/op_embedding4b.cpp
  quantized_decomposed::embedding_byte=kernels/quantized/cpu/op_embedding.cpp
  quantized_decomposed::quantize_per_channel=kernels/quantized/cpu/op_quantize.cpp
  quantized_decomposed::quantize_per_tensor=kernels/quantized/cpu/op_quantize.cpp
  quantized_decomposed::quantize_per_token=kernels/quantized/cpu/op_quantize.cpp)
# What the kernels call besides themselves: compile these into the same static library and the
# linker keeps only what the selected kernels use.
set(EXECUTORCH_KERNEL_SUPPORT_SRCS
  kernels/portable/cpu/pattern/unary_ufunc_realhbbf16_to_bool.cpp
  kernels/portable/cpu/pattern/unary_ufunc_realhbbf16_to_floathbf16.cpp
  kernels/portable/cpu/pattern/unary_ufunc_realhbf16.cpp
  kernels/portable/cpu/util/activation_ops_util.cpp
  kernels/portable/cpu/util/advanced_index_util.cpp
  kernels/portable/cpu/util/arange_util.cpp
  kernels/portable/cpu/util/broadcast_util.cpp
  kernels/portable/cpu/util/copy_ops_util.cpp
  kernels/portable/cpu/util/delinearize_index.cpp
  kernels/portable/cpu/util/distance_util.cpp
  kernels/portable/cpu/util/dtype_util.cpp
  kernels/portable/cpu/util/index_util.cpp
  kernels/portable/cpu/util/kernel_ops_util.cpp
  kernels/portable/cpu/util/matmul_ops_util.cpp
  kernels/portable/cpu/util/normalization_ops_util.cpp
  kernels/portable/cpu/util/padding_util.cpp
  kernels/portable/cpu/util/reduce_util.cpp
  kernels/portable/cpu/util/repeat_util.cpp
  kernels/portable/cpu/util/select_copy_util.cpp
  kernels/portable/cpu/util/slice_util.cpp
  kernels/portable/cpu/util/upsample_util.cpp
  kernels/quantized/cpu/embeddingxb.cpp)

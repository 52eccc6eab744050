# The C11 engine and the host ESP-NN kernels: source lists for both build worlds.
#
# Included by espnn_component/CMakeLists.txt.
#  - ESP-IDF (ESP_PLATFORM): only sets the lists below; cmake/idf.cmake registers them and the
#    real ESP-NN comes from the espressif/esp-nn component.
#  - Plain CMake: adds the static library `espnn_engine` (engine + ESP-NN kernels, position
#    independent so it can go into a shared library).  The kernels are this project's host
#    implementation of the ESP-NN API, or, with -DESPNN_ESP_NN_DIR=<esp-nn checkout>, the real
#    ESP-NN's ANSI sources (tests/test_engine.py checks the two agree bit for bit).
#
# Variables set for both:
#   ESPNN_ENGINE_SRCS, ESPNN_ENGINE_INCLUDE_DIRS (public), ESPNN_ENGINE_PRIV_INCLUDE_DIRS,
#   ESPNN_HOST_KERNEL_SRCS, ESPNN_HOST_KERNEL_INCLUDE_DIRS, ESPNN_RUN_SRCS (the espnn_run tool),
#   ESPNN_ESP_NN_ANSI_KERNELS (ESP-NN's ANSI C kernels the engine calls, relative to an ESP-NN
#   checkout; its include dirs: include and src/common)

set(_espnn_root ${CMAKE_CURRENT_LIST_DIR}/..)

set(ESPNN_ENGINE_SRCS
    ${_espnn_root}/engine/src/broadcast.c
    ${_espnn_root}/engine/src/conv_common.c
    ${_espnn_root}/engine/src/engine.c
    ${_espnn_root}/engine/src/errors.c
    ${_espnn_root}/engine/src/parse.c
    ${_espnn_root}/engine/src/permute.c
    ${_espnn_root}/engine/src/registry.c
    ${_espnn_root}/engine/src/scratch_rules.c
    ${_espnn_root}/engine/src/validate.c
    ${_espnn_root}/engine/ops/add.c
    ${_espnn_root}/engine/ops/batch_matmul.c
    ${_espnn_root}/engine/ops/concat.c
    ${_espnn_root}/engine/ops/conv2d.c
    ${_espnn_root}/engine/ops/depthwise_conv2d.c
    ${_espnn_root}/engine/ops/fully_connected.c
    ${_espnn_root}/engine/ops/layer_norm.c
    ${_espnn_root}/engine/ops/lut.c
    ${_espnn_root}/engine/ops/mean_hw.c
    ${_espnn_root}/engine/ops/mul.c
    ${_espnn_root}/engine/ops/pad.c
    ${_espnn_root}/engine/ops/pool2d.c
    ${_espnn_root}/engine/ops/prelu.c
    ${_espnn_root}/engine/ops/quantize.c
    ${_espnn_root}/engine/ops/reshape.c
    ${_espnn_root}/engine/ops/slice.c
    ${_espnn_root}/engine/ops/softmax.c
    ${_espnn_root}/engine/ops/transpose.c
    ${_espnn_root}/engine/ops/transpose_conv2d.c
    ${_espnn_root}/engine/ops/upsample_bilinear.c
    ${_espnn_root}/engine/ops/upsample_nearest.c)
set(ESPNN_ENGINE_INCLUDE_DIRS ${_espnn_root}/engine/include)
set(ESPNN_ENGINE_PRIV_INCLUDE_DIRS ${_espnn_root}/engine/src)

set(ESPNN_HOST_KERNEL_SRCS
    ${_espnn_root}/host_espnn/src/add_elementwise_s8.c
    ${_espnn_root}/host_espnn/src/avg_pool_s8.c
    ${_espnn_root}/host_espnn/src/conv_s8.c
    ${_espnn_root}/host_espnn/src/depthwise_conv_s8.c
    ${_espnn_root}/host_espnn/src/fully_connected_per_ch_s8.c
    ${_espnn_root}/host_espnn/src/fully_connected_s8.c
    ${_espnn_root}/host_espnn/src/max_pool_s8.c
    ${_espnn_root}/host_espnn/src/mul_broadcast_channel_s8.c
    ${_espnn_root}/host_espnn/src/mul_elementwise_s8.c
    ${_espnn_root}/host_espnn/src/s3_contracts.c
    ${_espnn_root}/host_espnn/src/scratch_guard.c
    ${_espnn_root}/host_espnn/src/softmax_s8.c)
set(ESPNN_HOST_KERNEL_INCLUDE_DIRS ${_espnn_root}/host_espnn/include)
set(ESPNN_RUN_SRCS ${_espnn_root}/engine/tools/espnn_run.c)
# ESP-NN's reference (ANSI C) kernels for exactly the functions the engine calls
set(ESPNN_ESP_NN_ANSI_KERNELS
    src/basic_math/esp_nn_add_ansi.c
    src/basic_math/esp_nn_mul_ansi.c
    src/convolution/esp_nn_conv_ansi.c
    src/convolution/esp_nn_depthwise_conv_ansi.c
    src/fully_connected/esp_nn_fully_connected_ansi.c
    src/pooling/esp_nn_avg_pool_ansi.c
    src/pooling/esp_nn_max_pool_ansi.c
    src/softmax/esp_nn_softmax_ansi.c)

if(NOT ESP_PLATFORM)
  set(ESPNN_ESP_NN_DIR "" CACHE PATH
      "An ESP-NN source tree: build the host engine on its ANSI kernels instead of ours")
  option(ESPNN_WERROR "Treat warnings in the engine as errors" OFF)

  if(ESPNN_ESP_NN_DIR)
    if(NOT EXISTS ${ESPNN_ESP_NN_DIR}/include/esp_nn.h)
      message(FATAL_ERROR "ESPNN_ESP_NN_DIR=${ESPNN_ESP_NN_DIR} has no include/esp_nn.h: "
                          "point it at the root of an espressif/esp-nn checkout")
    endif()
    list(TRANSFORM ESPNN_ESP_NN_ANSI_KERNELS PREPEND ${ESPNN_ESP_NN_DIR}/ OUTPUT_VARIABLE _espnn_kernel_srcs)
    add_library(espnn_kernels STATIC ${_espnn_kernel_srcs})
    target_include_directories(espnn_kernels
      PUBLIC ${ESPNN_ESP_NN_DIR}/include
      PRIVATE ${ESPNN_ESP_NN_DIR}/src/common)
    # third-party code: GNU C (statement expressions), its own warnings are not ours to fix
    set_target_properties(espnn_kernels PROPERTIES C_STANDARD 11 C_EXTENSIONS ON
                          POSITION_INDEPENDENT_CODE ON)
    target_compile_options(espnn_kernels PRIVATE -w)
  else()
    add_library(espnn_kernels STATIC ${ESPNN_HOST_KERNEL_SRCS})
    target_include_directories(espnn_kernels PUBLIC ${ESPNN_HOST_KERNEL_INCLUDE_DIRS})
    set_target_properties(espnn_kernels PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                          C_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  endif()

  add_library(espnn_engine STATIC ${ESPNN_ENGINE_SRCS})
  target_include_directories(espnn_engine
    PUBLIC ${ESPNN_ENGINE_INCLUDE_DIRS}
    PRIVATE ${ESPNN_ENGINE_PRIV_INCLUDE_DIRS})
  target_link_libraries(espnn_engine PRIVATE espnn_kernels)
  set_target_properties(espnn_engine PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                        C_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    foreach(_t espnn_engine)
      target_compile_options(${_t} PRIVATE -Wall -Wextra $<$<BOOL:${ESPNN_WERROR}>:-Werror>)
    endforeach()
    if(NOT ESPNN_ESP_NN_DIR)
      target_compile_options(espnn_kernels PRIVATE -Wall -Wextra
                             $<$<BOOL:${ESPNN_WERROR}>:-Werror>)
    endif()
  endif()
endif()

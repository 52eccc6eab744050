# The engine's source lists, for every build world: cmake/engine.cmake includes this file and
# builds from it, executorch_espnn/component_sources.py reads it for the Python builds (the
# PlatformIO Arduino library, emulated/, fuzz/, the engine tests).  So it holds set(NAME word
# ...) commands and comments only, each word a plain path with at most a ${NAME} set above it; a
# new source under src/ or ops/ that is in no list fails tests/test_component_sources.py.
set(ESPNN_ENGINE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(ESPNN_HOST_ESPNN_DIR ${CMAKE_CURRENT_LIST_DIR}/../host_espnn)
set(ESPNN_ENGINE_SRCS
    ${ESPNN_ENGINE_DIR}/src/broadcast.c
    ${ESPNN_ENGINE_DIR}/src/conv_common.c
    ${ESPNN_ENGINE_DIR}/src/engine.c
    ${ESPNN_ENGINE_DIR}/src/errors.c
    ${ESPNN_ENGINE_DIR}/src/parse.c
    ${ESPNN_ENGINE_DIR}/src/permute.c
    ${ESPNN_ENGINE_DIR}/src/registry.c
    ${ESPNN_ENGINE_DIR}/src/scratch_rules.c
    ${ESPNN_ENGINE_DIR}/src/validate.c
    ${ESPNN_ENGINE_DIR}/ops/add.c
    ${ESPNN_ENGINE_DIR}/ops/batch_matmul.c
    ${ESPNN_ENGINE_DIR}/ops/concat.c
    ${ESPNN_ENGINE_DIR}/ops/conv2d.c
    ${ESPNN_ENGINE_DIR}/ops/depthwise_conv2d.c
    ${ESPNN_ENGINE_DIR}/ops/div.c
    ${ESPNN_ENGINE_DIR}/ops/fully_connected.c
    ${ESPNN_ENGINE_DIR}/ops/layer_norm.c
    ${ESPNN_ENGINE_DIR}/ops/lut.c
    ${ESPNN_ENGINE_DIR}/ops/mean_hw.c
    ${ESPNN_ENGINE_DIR}/ops/mul.c
    ${ESPNN_ENGINE_DIR}/ops/pad.c
    ${ESPNN_ENGINE_DIR}/ops/pool2d.c
    ${ESPNN_ENGINE_DIR}/ops/prelu.c
    ${ESPNN_ENGINE_DIR}/ops/quantize.c
    ${ESPNN_ENGINE_DIR}/ops/reshape.c
    ${ESPNN_ENGINE_DIR}/ops/slice.c
    ${ESPNN_ENGINE_DIR}/ops/softmax.c
    ${ESPNN_ENGINE_DIR}/ops/transpose.c
    ${ESPNN_ENGINE_DIR}/ops/transpose_conv2d.c
    ${ESPNN_ENGINE_DIR}/ops/upsample_bilinear.c
    ${ESPNN_ENGINE_DIR}/ops/upsample_nearest.c)
set(ESPNN_ENGINE_INCLUDE_DIRS ${ESPNN_ENGINE_DIR}/include)
set(ESPNN_ENGINE_PRIV_INCLUDE_DIRS ${ESPNN_ENGINE_DIR}/src)

set(ESPNN_HOST_KERNEL_SRCS
    ${ESPNN_HOST_ESPNN_DIR}/src/add_elementwise_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/avg_pool_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/conv_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/depthwise_conv_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/fully_connected_per_ch_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/fully_connected_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/max_pool_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/mul_broadcast_channel_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/mul_elementwise_s8.c
    ${ESPNN_HOST_ESPNN_DIR}/src/s3_contracts.c
    ${ESPNN_HOST_ESPNN_DIR}/src/scratch_guard.c
    ${ESPNN_HOST_ESPNN_DIR}/src/softmax_s8.c)
set(ESPNN_HOST_KERNEL_INCLUDE_DIRS ${ESPNN_HOST_ESPNN_DIR}/include)
set(ESPNN_RUN_SRCS ${ESPNN_ENGINE_DIR}/tools/espnn_run.c)
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

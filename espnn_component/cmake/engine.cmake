# The C11 engine and the host ESP-NN kernels: source lists for both build worlds.
#
# Included by espnn_component/CMakeLists.txt.  The lists themselves are in engine/sources.cmake
# (plain set() commands, so executorch_espnn/component_sources.py reads the same file).
#  - ESP-IDF (ESP_PLATFORM): only sets the lists; cmake/idf.cmake registers them and the
#    real ESP-NN comes from the espressif/esp-nn component.
#  - Plain CMake: adds the static library `espnn_engine` (engine + ESP-NN kernels, position
#    independent so it can go into a shared library).  The kernels are this project's host
#    implementation of the ESP-NN API, or, with -DESPNN_ESP_NN_DIR=<esp-nn checkout>, the real
#    ESP-NN's ANSI sources (tests/test_engine.py checks the two agree bit for bit).
#
# Variables set for both (by engine/sources.cmake):
#   ESPNN_ENGINE_SRCS, ESPNN_ENGINE_INCLUDE_DIRS (public), ESPNN_ENGINE_PRIV_INCLUDE_DIRS,
#   ESPNN_HOST_KERNEL_SRCS, ESPNN_HOST_KERNEL_INCLUDE_DIRS, ESPNN_RUN_SRCS (the espnn_run tool),
#   ESPNN_ESP_NN_ANSI_KERNELS (ESP-NN's ANSI C kernels the engine calls, relative to an ESP-NN
#   checkout; its include dirs: include and src/common)

include(${CMAKE_CURRENT_LIST_DIR}/../engine/sources.cmake)

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

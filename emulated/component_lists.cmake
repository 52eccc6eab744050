# Run with: cmake -DCOMPONENT_DIR=<espnn_component> -DOUT=<file> -P this
# Reads the component's own source lists the way its ESP-IDF registration does (ESP_PLATFORM
# set: the list files only set variables) and writes them to OUT as NAME=a;b;c lines, so the
# emulated builds compile exactly what the component's CMake lists name.
cmake_minimum_required(VERSION 3.16)
set(ESP_PLATFORM 1)
include("${COMPONENT_DIR}/cmake/engine.cmake")
include("${COMPONENT_DIR}/cmake/adapter.cmake")
include("${COMPONENT_DIR}/memory/sources.cmake")
include("${COMPONENT_DIR}/pal/sources.cmake")
file(WRITE "${OUT}" "")
foreach(_v ESPNN_ENGINE_SRCS ESPNN_ENGINE_INCLUDE_DIRS ESPNN_ENGINE_PRIV_INCLUDE_DIRS
        ESPNN_HOST_KERNEL_SRCS ESPNN_HOST_KERNEL_INCLUDE_DIRS ESPNN_ESP_NN_ANSI_KERNELS
        ESPNN_ADAPTER_SOURCES ESPNN_MODEL_SOURCES
        ESPNN_MEM_IDF_SOURCES ESPNN_MEM_HOST_SOURCES ESPNN_MEM_PRIVATE_INCLUDE_DIRS
        ESPNN_PAL_IDF_SOURCES ESPNN_PAL_HOST_SOURCES ESPNN_PAL_BAREMETAL_SOURCES
        ESPNN_PAL_SYMBOLS)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "the component's CMake files do not define ${_v}")
  endif()
  file(APPEND "${OUT}" "${_v}=${${_v}}\n")
endforeach()

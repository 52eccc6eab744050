# Run with: cmake -DCOMPONENT_DIR=<espnn_component> -DNAMES=<a;b;c> -DOUT=<file> -P this
# Includes the component's source lists the way its ESP-IDF registration does (ESP_PLATFORM
# set: the list files only set variables) and writes the variables NAMES to OUT as NAME=a;b;c
# lines, so tests/test_component_sources.py can check that executorch_espnn.component_sources
# reads exactly what CMake sets.
cmake_minimum_required(VERSION 3.16)
set(ESP_PLATFORM 1)
include("${COMPONENT_DIR}/cmake/engine.cmake")
include("${COMPONENT_DIR}/cmake/adapter.cmake")
include("${COMPONENT_DIR}/memory/sources.cmake")
include("${COMPONENT_DIR}/pal/sources.cmake")
file(WRITE "${OUT}" "")
foreach(_v IN LISTS NAMES)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "the component's CMake files do not define ${_v}")
  endif()
  file(APPEND "${OUT}" "${_v}=${${_v}}\n")
endforeach()

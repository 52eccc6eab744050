# Run with: cmake -DESP_NN_DIR=<esp-nn checkout> -DIDF_TARGET=esp32c3 -DCONFIG=<file> -DOUT=<file> -P this
# Reads ESP-NN's own CMakeLists.txt as ESP-IDF would for IDF_TARGET, with the sdkconfig values
# of CONFIG (NAME=value lines: ESP-NN's Kconfig resolved by emulated/esp_nn_build.py), and writes
# the sources, include dirs, compile options and definitions it registers to OUT as
# NAME=a;b;c lines.  idf_component_register and the target_* commands are stood in for: they
# record their arguments (there is no ESP-IDF here), so the emulated firmware compiles exactly
# the files and flags ESP-NN's build selects for that chip.
cmake_minimum_required(VERSION 3.16)
string(TOUPPER "${IDF_TARGET}" _target)
set(CONFIG_IDF_TARGET_${_target} y)
set(IDF_TARGET ${IDF_TARGET})
file(STRINGS "${CONFIG}" _config)
foreach(_line IN LISTS _config)
  string(REGEX MATCH "^([A-Za-z0-9_]+)=(.*)$" _m "${_line}")
  if(_m)
    set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endif()
endforeach()
set(COMPONENT_LIB esp_nn)
set(_srcs "")
set(_includes "")
set(_options "")
set(_definitions "")
function(idf_component_register)
  cmake_parse_arguments(A "" "" "SRCS;INCLUDE_DIRS;REQUIRES;PRIV_REQUIRES" ${ARGN})
  set(_srcs "${A_SRCS}" PARENT_SCOPE)
  set(_includes "${A_INCLUDE_DIRS}" PARENT_SCOPE)
endfunction()
function(target_compile_options _lib _scope)
  set(_options "${_options};${ARGN}" PARENT_SCOPE)
endfunction()
function(target_compile_definitions _lib _scope)
  set(_definitions "${_definitions};${ARGN}" PARENT_SCOPE)
endfunction()
include("${ESP_NN_DIR}/CMakeLists.txt")
list(FILTER _srcs EXCLUDE REGEX "^$")
list(FILTER _options EXCLUDE REGEX "^$")
list(FILTER _definitions EXCLUDE REGEX "^$")
file(WRITE "${OUT}" "SRCS=${_srcs}\nINCLUDE_DIRS=${_includes}\nOPTIONS=${_options}\nDEFINITIONS=${_definitions}\n")

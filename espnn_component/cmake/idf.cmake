# ESP-IDF registration of the component (CMakeLists.txt includes this when ESP_PLATFORM is set,
# after cmake/engine.cmake).  What goes into firmware:
#   engine (C11, ESPNN_ENGINE_SRCS from cmake/engine.cmake) calling the real ESP-NN
#   (espressif/esp-nn; the host ESP-NN kernels are never compiled here), the ExecuTorch adapter
#   and EspnnModel, the memory policy's ESP-IDF world, and the ESP-IDF PAL when
#   CONFIG_ESPNN_ET_PROVIDE_PAL=y.  The host files (espnn_mem_host.c, espnn_pal_host.cpp,
#   runtime/espnn_host_api.cpp, runtime/host_runner.cpp) never are.
# The ExecuTorch runtime (1.5.1 sources with a CMakeLists that registers them) must be an
# ESP-IDF component named `executorch`; see docs/component.md for where it comes from.
#
# Compile definitions recording what the component was built with (docs/component.md):
#   ESPNN_ET_EXECUTORCH_VERSION="1.5.1"  the ExecuTorch runtime version (public; EspnnModel
#                                        compares the generated header's stamp with it)
#   ESPNN_ET_COMPONENT_VERSION="0.1.0"   this component (= ESPNN_ET_PACKAGE_VERSION of
#                                        include/espnn_version.h; public)
#   ESPNN_ET_USE_MEMORY_POLICY           private: the adapter allocates through espnn_mem.h
# The payload format version is ESPNN_FORMAT_MAJOR/MINOR of engine/include/espnn_format.h.

set(ESPNN_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")
get_filename_component(ESPNN_ROOT "${ESPNN_ROOT}" ABSOLUTE)

include("${ESPNN_ROOT}/cmake/adapter.cmake")
include("${ESPNN_ROOT}/memory/sources.cmake")
include("${ESPNN_ROOT}/pal/sources.cmake")

foreach(_var ESPNN_ENGINE_SRCS ESPNN_ENGINE_INCLUDE_DIRS)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "executorch_espnn: cmake/engine.cmake does not define ${_var}")
  endif()
endforeach()

# The ExecuTorch runtime the component is built for: the version pinned with the executorch
# wheel that lowers the models (pyproject.toml).  A runtime package of another version may set
# ESPNN_EXECUTORCH_VERSION before the project() call; the header stamp check then names both.
if(NOT DEFINED ESPNN_EXECUTORCH_VERSION)
  set(ESPNN_EXECUTORCH_VERSION "1.5.1")
endif()
file(STRINGS "${ESPNN_ROOT}/include/espnn_version.h" _espnn_version_line
     REGEX "^#define ESPNN_ET_PACKAGE_VERSION \"")
string(REGEX MATCH "\"([0-9.]+)\"" _espnn_version_match "${_espnn_version_line}")
set(ESPNN_COMPONENT_VERSION "${CMAKE_MATCH_1}")

set(ESPNN_IDF_SOURCES ${ESPNN_ENGINE_SRCS} ${ESPNN_ADAPTER_SOURCES} ${ESPNN_MODEL_SOURCES}
                      ${ESPNN_MEM_IDF_SOURCES})
if(CONFIG_ESPNN_ET_PROVIDE_PAL)
  list(APPEND ESPNN_IDF_SOURCES ${ESPNN_PAL_IDF_SOURCES})
endif()

# EspnnModel maps the model partition (custom_executorch_storage = partition): esp_partition.h
# is spi_flash's up to ESP-IDF 5.0 and its own component from 5.1 on.
set(_espnn_flash_requires spi_flash)
if(DEFINED IDF_VERSION_MAJOR AND (IDF_VERSION_MAJOR GREATER 5 OR
   (IDF_VERSION_MAJOR EQUAL 5 AND IDF_VERSION_MINOR GREATER_EQUAL 1)))
  list(APPEND _espnn_flash_requires esp_partition)
endif()

idf_component_register(
  SRCS ${ESPNN_IDF_SOURCES}
  INCLUDE_DIRS "${ESPNN_ROOT}/include" ${ESPNN_ENGINE_INCLUDE_DIRS}
  PRIV_INCLUDE_DIRS ${ESPNN_ENGINE_PRIV_INCLUDE_DIRS} "${ESPNN_ROOT}/adapter" "${ESPNN_ROOT}/runtime"
                    ${ESPNN_MEM_PRIVATE_INCLUDE_DIRS}
  REQUIRES executorch
  PRIV_REQUIRES esp-nn esp_timer heap log freertos esp_psram ${_espnn_flash_requires})

# In early expansion (ESP-IDF collecting requirements) only the call above matters.
if(CMAKE_BUILD_EARLY_EXPANSION)
  return()
endif()

target_compile_definitions(${COMPONENT_LIB}
  PUBLIC
    "ESPNN_ET_EXECUTORCH_VERSION=\"${ESPNN_EXECUTORCH_VERSION}\""
    "ESPNN_ET_COMPONENT_VERSION=\"${ESPNN_COMPONENT_VERSION}\""
  PRIVATE
    ESPNN_ET_USE_MEMORY_POLICY)
# ESP-IDF already builds with -Wall -Werror=all (C as gnu17, C++ as gnu++2b, no exceptions, no
# RTTI).  -Wextra for our C only: the ExecuTorch headers are not system headers in an ESP-IDF
# build and trip -Wextra (unused parameters) in every C++ file that includes them.
target_compile_options(${COMPONENT_LIB} PRIVATE $<$<COMPILE_LANGUAGE:C>:-Wextra>)

if(CONFIG_ESPNN_ET_PROVIDE_PAL)
  # The runtime defines weak et_pal_* defaults.  Our strong ones live in a static archive, whose
  # members the linker only pulls for undefined symbols: -u makes it take ours.
  foreach(_sym ${ESPNN_PAL_SYMBOLS})
    target_link_libraries(${COMPONENT_LIB} INTERFACE "-u ${_sym}")
  endforeach()
endif()

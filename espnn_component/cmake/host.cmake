# Plain-CMake (non ESP-IDF) build of the component against the executorch pip wheel:
#
#   cmake -S espnn_component -B build -DCMAKE_PREFIX_PATH=<site-packages>/executorch
#
# Targets
#   espnn_backend            static: engine + host ESP-NN kernels + EspNNDelegateBackend whose
#                            memory comes from ExecuTorch's runtime allocator.  Installed and
#                            exported as executorch_espnn::backend for desktop applications.
#   espnn_model              static: the same backend built on the memory policy, EspnnModel and
#                            the host memory policy.  Exported as executorch_espnn::model.
#                            (Link one of the two: both define the backend.)
#   executorch_espnn_host    shared: what executorch_espnn.host loads into Python (memory-policy
#                            backend + the measurement API); links executorch::runtime only, the
#                            Python process already holds the kernels.
#   espnn_runner             the standalone runner, when ESPNN_MODEL_DIR names a folder with a
#                            generated model_pte.h and model_pte_data.S.
#
# The wheel's CMake package needs CMake >= 3.28 (use the pip `cmake`), C++17,
# -DC10_USING_CUSTOM_GENERATED_MACROS and its include dirs, which executorch::runtime carries.

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

find_package(executorch CONFIG QUIET)
if(NOT executorch_FOUND OR NOT TARGET executorch::runtime)
  message(FATAL_ERROR
    "executorch_espnn: the ExecuTorch CMake package was not found. Point CMAKE_PREFIX_PATH at the "
    "executorch wheel: -DCMAKE_PREFIX_PATH=$(python -c 'import executorch, os; "
    "print(os.path.dirname(executorch.__file__))') (and use CMake >= 3.28, e.g. pip install cmake).")
endif()
set(ESPNN_EXECUTORCH_VERSION "${executorch_VERSION}")

set(ESPNN_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")
cmake_path(NORMAL_PATH ESPNN_ROOT)

file(STRINGS "${ESPNN_ROOT}/include/espnn_version.h" _espnn_version_line
     REGEX "^#define ESPNN_ET_PACKAGE_VERSION \"")
string(REGEX MATCH "\"([0-9.]+)\"" _espnn_version_match "${_espnn_version_line}")
set(ESPNN_PACKAGE_VERSION "${CMAKE_MATCH_1}")

if(MSVC)
  set(ESPNN_WARNINGS /W4 /WX)
else()
  set(ESPNN_WARNINGS -Wall -Wextra -Werror)
endif()

# --- engine + ESP-NN kernels: targets espnn_engine and espnn_kernels of cmake/engine.cmake ----
foreach(_target espnn_engine espnn_kernels)
  if(NOT TARGET ${_target})
    message(FATAL_ERROR "executorch_espnn: cmake/engine.cmake does not define the target ${_target}")
  endif()
endforeach()
# the installed static libraries carry the engine's objects, so a consumer links one archive
set(ESPNN_ENGINE_OBJECTS $<TARGET_OBJECTS:espnn_engine> $<TARGET_OBJECTS:espnn_kernels>)

# --- memory policy (host world) --------------------------------------------------------------
include("${ESPNN_ROOT}/memory/sources.cmake" OPTIONAL RESULT_VARIABLE _espnn_mem_cmake)
if(_espnn_mem_cmake)
  add_library(espnn_memory_objects OBJECT ${ESPNN_MEM_HOST_SOURCES})
  target_include_directories(espnn_memory_objects PRIVATE "${ESPNN_ROOT}/include"
                             ${ESPNN_MEM_PRIVATE_INCLUDE_DIRS})
  target_compile_options(espnn_memory_objects PRIVATE ${ESPNN_WARNINGS})
  set(ESPNN_HAVE_MEMORY_POLICY ON)
else()
  set(ESPNN_HAVE_MEMORY_POLICY OFF)
  message(STATUS "executorch_espnn: no memory policy sources (memory/sources.cmake); "
                 "building only the runtime-allocator backend")
endif()

# --- the adapter, in its two memory modes ----------------------------------------------------
set(ESPNN_ADAPTER_SOURCES
  "${ESPNN_ROOT}/adapter/espnn_backend.cpp"
  "${ESPNN_ROOT}/adapter/espnn_compat.cpp"
  "${ESPNN_ROOT}/adapter/espnn_lock.cpp"
  "${ESPNN_ROOT}/adapter/espnn_status.cpp")
set(ESPNN_PUBLIC_INCLUDE_DIRS "${ESPNN_ROOT}/include" ${ESPNN_ENGINE_INCLUDE_DIRS})

function(espnn_add_adapter name)
  cmake_parse_arguments(PARSE_ARGV 1 _a "MEMORY_POLICY" "" "SOURCES")
  add_library(${name} OBJECT ${ESPNN_ADAPTER_SOURCES} ${_a_SOURCES})
  target_include_directories(${name} PRIVATE ${ESPNN_PUBLIC_INCLUDE_DIRS} "${ESPNN_ROOT}/adapter")
  target_compile_definitions(${name} PRIVATE
    "ESPNN_ET_EXECUTORCH_VERSION=\"${ESPNN_EXECUTORCH_VERSION}\"")
  if(_a_MEMORY_POLICY)
    target_compile_definitions(${name} PRIVATE ESPNN_ET_USE_MEMORY_POLICY)
  endif()
  target_compile_options(${name} PRIVATE ${ESPNN_WARNINGS})
  # only the documented C entry points leave a shared library
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden
                                           VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE executorch::runtime)
endfunction()

espnn_add_adapter(espnn_adapter_runtime_alloc)

add_library(espnn_backend STATIC $<TARGET_OBJECTS:espnn_adapter_runtime_alloc>
                                 ${ESPNN_ENGINE_OBJECTS})
set_target_properties(espnn_backend PROPERTIES EXPORT_NAME backend LINKER_LANGUAGE CXX)
target_include_directories(espnn_backend PUBLIC
  "$<BUILD_INTERFACE:${ESPNN_PUBLIC_INCLUDE_DIRS}>"
  "$<INSTALL_INTERFACE:include/executorch_espnn>")
target_link_libraries(espnn_backend PUBLIC executorch::runtime)
add_library(executorch_espnn::backend ALIAS espnn_backend)
set(ESPNN_INSTALL_TARGETS espnn_backend)

if(ESPNN_HAVE_MEMORY_POLICY)
  espnn_add_adapter(espnn_adapter_policy MEMORY_POLICY
    SOURCES "${ESPNN_ROOT}/runtime/espnn_model.cpp" "${ESPNN_ROOT}/runtime/espnn_selftest.cpp")

  # The host PAL (pal/sources.cmake) belongs to executables only: the Python library must
  # leave logging to the Python runtime's own PAL.
  include("${ESPNN_ROOT}/pal/sources.cmake")
  add_library(espnn_pal_host_objects OBJECT ${ESPNN_PAL_HOST_SOURCES})
  target_include_directories(espnn_pal_host_objects PRIVATE "${ESPNN_ROOT}/include")
  target_compile_options(espnn_pal_host_objects PRIVATE ${ESPNN_WARNINGS})
  target_link_libraries(espnn_pal_host_objects PRIVATE executorch::runtime)

  add_library(espnn_model STATIC $<TARGET_OBJECTS:espnn_adapter_policy>
                                 ${ESPNN_ENGINE_OBJECTS}
                                 $<TARGET_OBJECTS:espnn_memory_objects>
                                 $<TARGET_OBJECTS:espnn_pal_host_objects>)
  set_target_properties(espnn_model PROPERTIES EXPORT_NAME model LINKER_LANGUAGE CXX)
  target_include_directories(espnn_model PUBLIC
    "$<BUILD_INTERFACE:${ESPNN_PUBLIC_INCLUDE_DIRS}>"
    "$<INSTALL_INTERFACE:include/executorch_espnn>")
  target_link_libraries(espnn_model PUBLIC executorch::runtime)
  # libexecutorch.so has weak et_pal_* defaults and nothing in an application references the
  # PAL's archive member: -u makes the linker take ours, which then interpose the defaults.
  foreach(_sym ${ESPNN_PAL_SYMBOLS})
    target_link_options(espnn_model INTERFACE "LINKER:-u,${_sym}")
  endforeach()
  add_library(executorch_espnn::model ALIAS espnn_model)
  list(APPEND ESPNN_INSTALL_TARGETS espnn_model)

  add_library(executorch_espnn_host SHARED
    "${ESPNN_ROOT}/runtime/espnn_host_api.cpp"
    $<TARGET_OBJECTS:espnn_adapter_policy>
    ${ESPNN_ENGINE_OBJECTS}
    $<TARGET_OBJECTS:espnn_memory_objects>)
  target_include_directories(executorch_espnn_host PRIVATE ${ESPNN_PUBLIC_INCLUDE_DIRS}
                             "${ESPNN_ROOT}/adapter")
  target_compile_options(executorch_espnn_host PRIVATE ${ESPNN_WARNINGS})
  set_target_properties(executorch_espnn_host PROPERTIES CXX_VISIBILITY_PRESET hidden
                                                         VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(executorch_espnn_host PRIVATE executorch::runtime)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    # an unresolved symbol must fail here, not at dlopen() inside Python
    target_link_options(executorch_espnn_host PRIVATE "LINKER:--no-undefined")
  endif()
endif()

# --- the standalone runner for one generated model header -----------------------------------
set(ESPNN_MODEL_DIR "" CACHE PATH "Folder with a generated model_pte.h and model_pte_data.S")
if(ESPNN_MODEL_DIR)
  if(NOT ESPNN_HAVE_MEMORY_POLICY)
    message(FATAL_ERROR "executorch_espnn: the runner needs the memory policy (memory/sources.cmake)")
  endif()
  foreach(_f model_pte.h model_pte_data.S)
    if(NOT EXISTS "${ESPNN_MODEL_DIR}/${_f}")
      message(FATAL_ERROR "executorch_espnn: ESPNN_MODEL_DIR=${ESPNN_MODEL_DIR} has no ${_f}; "
                          "generate it with executorch_espnn.model_header.write_model_header()")
    endif()
  endforeach()
  enable_language(ASM)
  add_executable(espnn_runner "${ESPNN_ROOT}/runtime/host_runner.cpp"
                              "${ESPNN_MODEL_DIR}/model_pte_data.S")
  target_include_directories(espnn_runner PRIVATE "${ESPNN_MODEL_DIR}")
  target_compile_options(espnn_runner PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${ESPNN_WARNINGS}>)
  # the kernels a standalone program needs: CPU operators and quantize/dequantize (a Python
  # process provides these itself, so the shared library above must not link them)
  target_link_libraries(espnn_runner PRIVATE espnn_model executorch::kernels_optimized
                                              executorch::kernels_quantized)
endif()

# --- CMake package: find_package(executorch_espnn CONFIG REQUIRED) ---------------------------
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(ESPNN_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/executorch_espnn")
install(TARGETS ${ESPNN_INSTALL_TARGETS} EXPORT executorch_espnn-targets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(FILES
  "${ESPNN_ROOT}/include/executorch_espnn.h"
  "${ESPNN_ROOT}/include/espnn_pte.h"
  "${ESPNN_ROOT}/include/espnn_mem.h"
  "${ESPNN_ROOT}/include/espnn_version.h"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/executorch_espnn")
foreach(_dir ${ESPNN_ENGINE_INCLUDE_DIRS})
  install(DIRECTORY "${_dir}/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/executorch_espnn"
          FILES_MATCHING PATTERN "espnn_*.h")
endforeach()
install(EXPORT executorch_espnn-targets NAMESPACE executorch_espnn::
        DESTINATION "${ESPNN_CMAKE_INSTALL_DIR}")
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/executorch_espnn-config.cmake.in"
  "${CMAKE_CURRENT_BINARY_DIR}/executorch_espnn-config.cmake"
  INSTALL_DESTINATION "${ESPNN_CMAKE_INSTALL_DIR}")
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/executorch_espnn-config-version.cmake"
  VERSION "${ESPNN_PACKAGE_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/executorch_espnn-config.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/executorch_espnn-config-version.cmake"
        DESTINATION "${ESPNN_CMAKE_INSTALL_DIR}")

# The ExecuTorch runtime as the ESP-IDF component `executorch` (what the component's
# `REQUIRES executorch` resolves), compiled from a pytorch/executorch source tree with the one
# source list (executorch_runtime.cmake), plus one model's CPU kernels and their registration.
# Include it from the CMakeLists.txt of a folder named `executorch`:
#   - PlatformIO writes one under $BUILD_DIR/executorch/components/executorch/ (the builder sets
#     the inputs below);
#   - idf.py projects get one from cmake/idf_project.cmake (docs/component.md).
#
# Inputs (CMake variables, or cache variables: -D on the command line):
#   EXECUTORCH_SOURCE_DIR    pytorch/executorch at the executorch wheel's commit
#   FLATBUFFERS_SOURCE_DIR   google/flatbuffers at ExecuTorch's pin (or FLATBUFFERS_INCLUDE_DIR:
#                            the folder holding flatbuffers/*.h)
#   ESPNN_KERNELS_CMAKE      kernels.cmake of the model (the kernel step writes it next to the
#                            registration: ESPNN_KERNEL_SRCS, ESPNN_REGISTERED_KERNELS,
#                            ESPNN_REGISTRATION_SRC)
#   EXECUTORCH_FLATC         the executorch wheel's flatc (default: `flatc` on PATH, which the
#                            wheel installs into its Python's bin folder); its version must be
#                            the flatbuffers pin, the generated headers refuse any other
#
# What it registers: EXECUTORCH_RUNTIME_SRCS, the model's kernel sources with
# EXECUTORCH_KERNEL_SUPPORT_SRCS (none without CPU operators) and the registration; public
# include dirs: the folder holding the tree as `executorch`, EXECUTORCH_RUNTIME_INCLUDE_DIRS, the
# generated schema headers, the flatbuffers headers; public EXECUTORCH_PUBLIC_DEFINES, private
# EXECUTORCH_RUNTIME_DEFINES and the log level of CONFIG_ESPNN_ET_LOG_LEVEL; MAX_KERNEL_NUM =
# the registered kernel count on the one source that reads it; and, since nothing references
# the registration inside the static archive, `-u executorch_espnn_register_kernels` on every
# link that uses the component.
if(CMAKE_BUILD_EARLY_EXPANSION)
  # ESP-IDF collecting requirements, possibly in a CMake process of its own that knows none of
  # the inputs: the runtime requires no other component, nothing else matters yet
  idf_component_register()
  return()
endif()
set(_et_dir "${CMAKE_CURRENT_LIST_DIR}")
include("${_et_dir}/executorch_runtime.cmake")
set(_et_fix_tree "pass -DEXECUTORCH_SOURCE_DIR=<a pytorch/executorch checkout at the executorch wheel's commit> (python scripts/fetch_sources.py downloads and verifies it)")

# --- the inputs ---------------------------------------------------------------------------------
if(NOT EXECUTORCH_SOURCE_DIR)
  message(FATAL_ERROR "executorch: EXECUTORCH_SOURCE_DIR is not set; ${_et_fix_tree}")
endif()
get_filename_component(_et_tree "${EXECUTORCH_SOURCE_DIR}" ABSOLUTE)
if(NOT IS_DIRECTORY "${_et_tree}")
  message(FATAL_ERROR "executorch: EXECUTORCH_SOURCE_DIR=${EXECUTORCH_SOURCE_DIR} is not a folder; ${_et_fix_tree}")
endif()
if(NOT FLATBUFFERS_INCLUDE_DIR)
  if(NOT FLATBUFFERS_SOURCE_DIR)
    message(FATAL_ERROR "executorch: FLATBUFFERS_SOURCE_DIR is not set; pass -DFLATBUFFERS_SOURCE_DIR=<a google/flatbuffers checkout at v${EXECUTORCH_FLATBUFFERS_VERSION}>")
  endif()
  set(FLATBUFFERS_INCLUDE_DIR "${FLATBUFFERS_SOURCE_DIR}/${EXECUTORCH_FLATBUFFERS_INCLUDE_DIR}")
endif()
get_filename_component(_et_fb_include "${FLATBUFFERS_INCLUDE_DIR}" ABSOLUTE)
if(NOT EXISTS "${_et_fb_include}/flatbuffers/base.h")
  message(FATAL_ERROR "executorch: ${_et_fb_include} has no flatbuffers/base.h; pass -DFLATBUFFERS_SOURCE_DIR=<a google/flatbuffers checkout at v${EXECUTORCH_FLATBUFFERS_VERSION}>")
endif()
if(NOT ESPNN_KERNELS_CMAKE OR NOT EXISTS "${ESPNN_KERNELS_CMAKE}")
  message(FATAL_ERROR "executorch: ESPNN_KERNELS_CMAKE=${ESPNN_KERNELS_CMAKE} names no kernels.cmake (the model's CPU kernels and their registration); generate it with `python scripts/espnn_idf_model.py <model> --out <dir>` and pass -DESPNN_MODEL_DIR=<dir>")
endif()
include("${ESPNN_KERNELS_CMAKE}")

# --- the sources, each checked ------------------------------------------------------------------
set(_et_srcs ${EXECUTORCH_RUNTIME_SRCS})
if(ESPNN_KERNEL_SRCS)
  list(APPEND _et_srcs ${ESPNN_KERNEL_SRCS} ${EXECUTORCH_KERNEL_SUPPORT_SRCS})
endif()
list(TRANSFORM _et_srcs PREPEND "${_et_tree}/")
set(_et_schema ${EXECUTORCH_SCHEMA_SRCS})
list(TRANSFORM _et_schema PREPEND "${_et_tree}/")
set(_et_missing "")
foreach(_f ${_et_srcs} ${_et_schema})
  if(NOT EXISTS "${_f}")
    list(APPEND _et_missing "${_f}")
  endif()
endforeach()
if(_et_missing)
  list(GET _et_missing 0 _et_first)
  list(LENGTH _et_missing _et_n)
  message(FATAL_ERROR "executorch: the ExecuTorch tree ${_et_tree} lacks ${_et_first} (${_et_n} listed file(s) missing); ${_et_fix_tree}")
endif()

# --- one file name per source ---------------------------------------------------------------------
# ExecuTorch holds files of one name in several folders (kernels/portable/cpu/op_add.cpp and
# kernels/quantized/cpu/op_add.cpp, the two op_embedding.cpp), and builders that name objects
# after the source's file name put both into one object: espressif32's espidf.py compiles the
# sources CMake lists itself and names those outside the project and ESP-IDF $BUILD_DIR/<name>.o.
# So each source is compiled through a file of its own that includes it, named after its whole
# path in the tree (kernels__portable__cpu__op_add.cpp); its quoted includes still resolve
# next to the real file and __FILE__ still names it.  Written only when the text changes, so a
# no-op build stays one.
set(_et_unit_dir "${CMAKE_CURRENT_BINARY_DIR}/src")
set(_et_units "")
set(_et_unit_names "")
foreach(_f ${_et_srcs})
  file(RELATIVE_PATH _et_rel "${_et_tree}" "${_f}")
  string(REPLACE "/" "__" _et_name "${_et_rel}")
  if(_et_name IN_LIST _et_unit_names)
    message(FATAL_ERROR "executorch: two listed sources flatten to the file name ${_et_name} (one is ${_et_rel}); name them apart in espnn_component/cmake/executorch_runtime.cmake")
  endif()
  list(APPEND _et_unit_names "${_et_name}")
  set(_et_unit "${_et_unit_dir}/${_et_name}")
  set(_et_text "/* Generated by executorch_component.cmake: ${_et_rel} of the ExecuTorch tree under a file name of its own */\n#include \"${_f}\"\n")
  set(_et_old "")
  if(EXISTS "${_et_unit}")
    file(READ "${_et_unit}" _et_old)
  endif()
  if(NOT _et_old STREQUAL _et_text)
    file(WRITE "${_et_unit}" "${_et_text}")
  endif()
  list(APPEND _et_units "${_et_unit}")
endforeach()

get_filename_component(_et_registration_dir "${ESPNN_REGISTRATION_SRC}" DIRECTORY)

# sources say #include <executorch/...>: the folder holding the tree under that name, when it
# holds nothing else (as the builder's download cache does); otherwise a link in the build
# folder, so that the tree's siblings never shadow a header
get_filename_component(_et_tree_name "${_et_tree}" NAME)
get_filename_component(_et_parent "${_et_tree}" DIRECTORY)
file(GLOB _et_siblings LIST_DIRECTORIES true "${_et_parent}/*")
list(FILTER _et_siblings EXCLUDE REGEX "/[.][^/]*$")  # hidden files (the cache's marker) hold no headers
if(_et_tree_name STREQUAL "executorch" AND _et_siblings STREQUAL "${_et_tree}")
  set(_et_stage_link OFF)
  set(_et_include_root "${_et_parent}")
else()
  set(_et_stage_link ON)
  set(_et_include_root "${CMAKE_CURRENT_BINARY_DIR}/include")
endif()
set(_et_gen "${CMAKE_CURRENT_BINARY_DIR}/gen")
set(_et_include_dirs "${_et_include_root}")
foreach(_d ${EXECUTORCH_RUNTIME_INCLUDE_DIRS})
  list(APPEND _et_include_dirs "${_et_tree}/${_d}")
endforeach()
list(APPEND _et_include_dirs "${_et_gen}" "${_et_fb_include}")

# --- flatc: the wheel's, of the flatbuffers pin -------------------------------------------------
set(_et_fix_flatc "install the executorch wheel (pip install executorch==1.5.1) into the Python you lower models with and pass -DEXECUTORCH_FLATC=<that Python's bin folder>/flatc (or put that folder on PATH)")
if(NOT EXECUTORCH_FLATC)
  find_program(EXECUTORCH_FLATC flatc)
  if(NOT EXECUTORCH_FLATC)
    message(FATAL_ERROR "executorch: no flatc found; ExecuTorch's schema headers need the executorch wheel's flatc ${EXECUTORCH_FLATBUFFERS_VERSION}: ${_et_fix_flatc}")
  endif()
endif()
execute_process(COMMAND "${EXECUTORCH_FLATC}" --version OUTPUT_VARIABLE _et_flatc_version
                ERROR_VARIABLE _et_flatc_error RESULT_VARIABLE _et_flatc_rc)
string(STRIP "${_et_flatc_version}" _et_flatc_version)
if(NOT _et_flatc_rc EQUAL 0 OR NOT _et_flatc_version MATCHES "version ${EXECUTORCH_FLATBUFFERS_VERSION}$")
  message(FATAL_ERROR "executorch: ${EXECUTORCH_FLATC} says '${_et_flatc_version}${_et_flatc_error}', not flatc version ${EXECUTORCH_FLATBUFFERS_VERSION} (the executorch wheel's, ExecuTorch's flatbuffers pin); ${_et_fix_flatc}")
endif()

if(_et_stage_link)
  file(MAKE_DIRECTORY "${_et_include_root}")
  file(CREATE_LINK "${_et_tree}" "${_et_include_root}/executorch" SYMBOLIC)
endif()
file(MAKE_DIRECTORY "${_et_gen}/${EXECUTORCH_SCHEMA_INCLUDE_SUBDIR}")

idf_component_register(
  SRCS ${_et_units} "${ESPNN_REGISTRATION_SRC}"
  INCLUDE_DIRS ${_et_include_dirs}
  PRIV_INCLUDE_DIRS "${_et_registration_dir}")

# the schema headers, generated as ExecuTorch's CMake does: flatc in the tree's schema folder
set(_et_headers "")
set(_et_schema_names "")
foreach(_s ${EXECUTORCH_SCHEMA_SRCS})
  get_filename_component(_n "${_s}" NAME)
  get_filename_component(_stem "${_s}" NAME_WE)
  list(APPEND _et_schema_names "${_n}")
  list(APPEND _et_headers "${_et_gen}/${EXECUTORCH_SCHEMA_INCLUDE_SUBDIR}/${_stem}_generated.h")
endforeach()
list(GET _et_schema 0 _et_first_schema)
get_filename_component(_et_schema_dir "${_et_first_schema}" DIRECTORY)
# espressif32's espidf.py compiles the sources of CMake's code model itself and runs no custom
# command, so the headers are generated now, at configure time, whenever one is missing or older
# than a schema; the custom command below keeps them current in ninja builds (idf.py).
set(_et_generate OFF)
foreach(_h ${_et_headers})
  foreach(_s ${_et_schema})
    if("${_s}" IS_NEWER_THAN "${_h}")
      set(_et_generate ON)
    endif()
  endforeach()
endforeach()
if(_et_generate)
  execute_process(
    COMMAND "${EXECUTORCH_FLATC}" ${EXECUTORCH_SCHEMA_FLATC_ARGS}
            -o "${_et_gen}/${EXECUTORCH_SCHEMA_INCLUDE_SUBDIR}" ${_et_schema_names}
    WORKING_DIRECTORY "${_et_schema_dir}"
    RESULT_VARIABLE _et_flatc_rc OUTPUT_VARIABLE _et_flatc_out ERROR_VARIABLE _et_flatc_out)
  if(NOT _et_flatc_rc EQUAL 0)
    string(STRIP "${_et_flatc_out}" _et_flatc_out)
    message(FATAL_ERROR "executorch: ${EXECUTORCH_FLATC} could not generate the schema headers from ${_et_schema_dir} (${_et_flatc_out}); ${_et_fix_tree}")
  endif()
endif()
add_custom_command(
  OUTPUT ${_et_headers}
  COMMAND "${EXECUTORCH_FLATC}" ${EXECUTORCH_SCHEMA_FLATC_ARGS}
          -o "${_et_gen}/${EXECUTORCH_SCHEMA_INCLUDE_SUBDIR}" ${_et_schema_names}
  WORKING_DIRECTORY "${_et_schema_dir}"
  DEPENDS ${_et_schema}
  COMMENT "Generating the ExecuTorch schema headers with ${EXECUTORCH_FLATC}"
  VERBATIM)
add_custom_target(executorch_schema_headers DEPENDS ${_et_headers})
add_dependencies(${COMPONENT_LIB} executorch_schema_headers)

# CONFIG_ESPNN_ET_LOG_LEVEL (the component's Kconfig): 0 none, 1 error, 2 info, 3 debug
set(_et_log_defines "ET_MIN_LOG_LEVEL=Info")
if(DEFINED CONFIG_ESPNN_ET_LOG_LEVEL)
  if(CONFIG_ESPNN_ET_LOG_LEVEL EQUAL 0)
    set(_et_log_defines "ET_LOG_ENABLED=0")
  elseif(CONFIG_ESPNN_ET_LOG_LEVEL EQUAL 1)
    set(_et_log_defines "ET_MIN_LOG_LEVEL=Error")
  elseif(CONFIG_ESPNN_ET_LOG_LEVEL EQUAL 3)
    set(_et_log_defines "ET_MIN_LOG_LEVEL=Debug")
  endif()
endif()
target_compile_definitions(${COMPONENT_LIB}
  PUBLIC ${EXECUTORCH_PUBLIC_DEFINES}
  PRIVATE ${EXECUTORCH_RUNTIME_DEFINES} ${_et_log_defines})
# ExecuTorch's warnings are not ours to fix (ESP-IDF compiles with -Werror=all)
target_compile_options(${COMPONENT_LIB} PRIVATE -w)

# the kernel table: exactly the registered kernels, on the one source that reads MAX_KERNEL_NUM
set(_et_table ${ESPNN_REGISTERED_KERNELS})
if(NOT _et_table OR _et_table LESS 1)
  set(_et_table 1)
endif()
list(LENGTH _et_srcs _et_n)
math(EXPR _et_last "${_et_n} - 1")
foreach(_i RANGE ${_et_last})  # (not ZIP_LISTS: ESP-IDF 5.0 accepts CMake 3.16)
  list(GET _et_srcs ${_i} _f)
  list(GET _et_units ${_i} _et_unit)
  file(STRINGS "${_f}" _et_reads REGEX "MAX_KERNEL_NUM" LIMIT_COUNT 1)
  if(_et_reads)
    set_source_files_properties("${_et_unit}" PROPERTIES COMPILE_DEFINITIONS "MAX_KERNEL_NUM=${_et_table}")
  endif()
endforeach()

# nothing references the registration inside the archive: keep it (and through it the kernels)
target_link_libraries(${COMPONENT_LIB} INTERFACE "-u executorch_espnn_register_kernels")

# Run with: cmake -DCOMPONENT_DIR=<component folder> -DOUT=<file> [-DPAL=ON] [-DEARLY=ON]
#                 [-DBINARY_DIR=<dir>] [-DLOG_LEVEL=<0..3>] -P this
# Pretends to be ESP-IDF processing a component (espnn_component, a generated wrapper, the
# generated `executorch` component): sets ESP_PLATFORM and the CONFIG_ variables, defines
# idf_component_register and the target_*/custom-command/source-property commands components
# call, includes the component's CMakeLists.txt, and writes every recorded argument to OUT as
# NAME=a;b;c lines.  BINARY_DIR stands for the component's build folder.
cmake_minimum_required(VERSION 3.16)
set(ESP_PLATFORM 1)
if(PAL)
  set(CONFIG_ESPNN_ET_PROVIDE_PAL y)
endif()
if(DEFINED LOG_LEVEL)
  set(CONFIG_ESPNN_ET_LOG_LEVEL ${LOG_LEVEL})
endif()
if(BINARY_DIR)
  set(CMAKE_CURRENT_BINARY_DIR "${BINARY_DIR}")
endif()
if(EARLY)
  set(CMAKE_BUILD_EARLY_EXPANSION 1)
endif()
file(WRITE "${OUT}" "")

function(_record name)
  file(APPEND "${OUT}" "${name}=${ARGN}\n")
endfunction()

macro(idf_component_register)
  cmake_parse_arguments(_reg "WHOLE_ARCHIVE"
    "KCONFIG;KCONFIG_PROJBUILD"
    "SRCS;SRC_DIRS;EXCLUDE_SRCS;INCLUDE_DIRS;PRIV_INCLUDE_DIRS;REQUIRES;PRIV_REQUIRES;LDFRAGMENTS;EMBED_FILES;EMBED_TXTFILES"
    ${ARGN})
  foreach(_k SRCS SRC_DIRS INCLUDE_DIRS PRIV_INCLUDE_DIRS REQUIRES PRIV_REQUIRES LDFRAGMENTS EMBED_FILES)
    _record(${_k} ${_reg_${_k}})
  endforeach()
  if(_reg_UNPARSED_ARGUMENTS)
    _record(UNPARSED ${_reg_UNPARSED_ARGUMENTS})
  endif()
  set(COMPONENT_LIB __idf_executorch_espnn)
  set(COMPONENT_TARGET __idf_executorch_espnn)
endmacro()

function(target_compile_definitions target)
  _record(DEFINITIONS ${ARGN})
endfunction()
function(target_compile_options target)
  _record(OPTIONS ${ARGN})
endfunction()
function(target_link_libraries target)
  _record(LINK ${ARGN})
endfunction()
function(target_include_directories target)
  _record(TARGET_INCLUDES ${ARGN})
endfunction()
function(add_custom_command)
  _record(CUSTOM_COMMAND ${ARGN})
endfunction()
function(add_custom_target name)
  _record(CUSTOM_TARGET ${name} ${ARGN})
endfunction()
function(add_dependencies target)
  _record(DEPENDENCIES ${target} ${ARGN})
endfunction()
function(set_source_files_properties)
  _record(SOURCE_PROPERTIES ${ARGN})
endfunction()

include("${COMPONENT_DIR}/CMakeLists.txt")
_record(ENGINE_SOURCES ${ESPNN_ENGINE_SRCS})
_record(HOST_KERNEL_SOURCES ${ESPNN_HOST_KERNEL_SRCS})
_record(DONE 1)

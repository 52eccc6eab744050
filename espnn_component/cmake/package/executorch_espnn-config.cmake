# executorch_espnn as a CMake package in source form: the folder that
# `executorch-espnn cmake-prefix` (executorch_espnn.resources.cmake_prefix_path()) prints, in a
# checkout and in the installed wheel alike.
#
#   cmake -S app -B build -DCMAKE_PREFIX_PATH="$(executorch-espnn cmake-prefix)"
#
#   find_package(executorch CONFIG REQUIRED)
#   find_package(executorch_espnn CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE executorch_espnn::backend executorch::kernels_optimized)
#   // in main(): executorch_espnn_register_backend();   (see executorch_espnn.h)
#
# The delegate is compiled inside the consuming project, from the package's sources, against
# the ExecuTorch it found (no prebuilt library to mismatch: a wheel cannot know the app's
# compiler).  `cmake-prefix` prints the ExecuTorch wheel's folder after this one, so one
# CMAKE_PREFIX_PATH finds both.  The installed, prebuilt form is espnn_component's own install
# (docs/runtime.md, "CMake package").
get_filename_component(_espnn_component "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

include(CMakeFindDependencyMacro)
if(NOT TARGET executorch::runtime)
  find_dependency(executorch CONFIG)
endif()

if(NOT TARGET executorch_espnn::backend)
  # targets only, built when the app links them; their ALIASes (executorch_espnn::backend,
  # executorch_espnn::model) are visible to the whole project
  add_subdirectory("${_espnn_component}" "${CMAKE_BINARY_DIR}/_executorch_espnn" EXCLUDE_FROM_ALL)
endif()
set(EXECUTORCH_ESPNN_EXECUTORCH_VERSION "${executorch_VERSION}")
set(executorch_espnn_FOUND TRUE)

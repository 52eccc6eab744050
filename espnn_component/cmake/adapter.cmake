# The C++ sources around the engine, for every build world: the ExecuTorch adapter
# (EspNNDelegateBackend) and EspnnModel.  cmake/idf.cmake compiles both into the component,
# cmake/host.cmake builds its two adapter flavours from ESPNN_ADAPTER_SOURCES and adds
# ESPNN_MODEL_SOURCES to the memory-policy one, and emulated/ reads both for its 32-bit builds.
set(_espnn_adapter_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(ESPNN_ADAPTER_SOURCES
  ${_espnn_adapter_root}/adapter/espnn_arena_lease.cpp
  ${_espnn_adapter_root}/adapter/espnn_backend.cpp
  ${_espnn_adapter_root}/adapter/espnn_compat.cpp
  ${_espnn_adapter_root}/adapter/espnn_lock.cpp
  ${_espnn_adapter_root}/adapter/espnn_profile_sink.cpp
  ${_espnn_adapter_root}/adapter/espnn_status.cpp)
set(ESPNN_MODEL_SOURCES ${_espnn_adapter_root}/runtime/espnn_model.cpp
                        ${_espnn_adapter_root}/runtime/espnn_selftest.cpp
                        ${_espnn_adapter_root}/runtime/espnn_model_partition.cpp
                        ${_espnn_adapter_root}/runtime/espnn_profile_print.cpp
                        ${_espnn_adapter_root}/runtime/espnn_model_image.c
                        ${_espnn_adapter_root}/runtime/espnn_shared_arena.cpp)

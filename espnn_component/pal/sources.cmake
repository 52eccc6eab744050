# The platform layer per world.  A build links exactly one of the three: ESP-IDF (cmake/idf.cmake)
# uses ESPNN_PAL_IDF_SOURCES when CONFIG_ESPNN_ET_PROVIDE_PAL=y; host builds use
# ESPNN_PAL_HOST_SOURCES; a bare-metal firmware (no RTOS, e.g. the emulated Cortex-M7 build of
# emulated/mcu_stack.py) uses ESPNN_PAL_BAREMETAL_SOURCES.  Each defines every et_pal_* function
# once (tests/test_pal.py); espnn_pal_util.h is what they share.
set(ESPNN_PAL_IDF_SOURCES ${CMAKE_CURRENT_LIST_DIR}/espnn_pal_idf.cpp)
set(ESPNN_PAL_HOST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/espnn_pal_host.cpp)
set(ESPNN_PAL_BAREMETAL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/espnn_pal_baremetal.cpp)
# The PAL's symbols, for forcing the object out of a static archive (see cmake/idf.cmake).
set(ESPNN_PAL_SYMBOLS
  et_pal_init et_pal_abort et_pal_current_ticks et_pal_ticks_to_ns_multiplier
  et_pal_emit_log_message et_pal_allocate et_pal_free)

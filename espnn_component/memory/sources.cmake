# Memory-policy sources per world.  Exactly one world file links into a build: ESP-IDF
# (cmake/idf.cmake) uses ESPNN_MEM_IDF_SOURCES, host builds ESPNN_MEM_HOST_SOURCES; both share
# the decision logic in espnn_mem_core.c.  The include dir is private to the component.
set(ESPNN_MEM_DIR ${CMAKE_CURRENT_LIST_DIR})
set(ESPNN_MEM_IDF_SOURCES
  ${ESPNN_MEM_DIR}/espnn_mem_core.c
  ${ESPNN_MEM_DIR}/espnn_mem_idf.c)
set(ESPNN_MEM_HOST_SOURCES
  ${ESPNN_MEM_DIR}/espnn_mem_core.c
  ${ESPNN_MEM_DIR}/espnn_mem_host.c)
set(ESPNN_MEM_PRIVATE_INCLUDE_DIRS ${ESPNN_MEM_DIR})

/*
 * The policy configuration of this build, from the ESPNN_CFG_* macros of espnn_config.h.
 * Private to memory/: included by exactly one world file (espnn_mem_idf.c or espnn_mem_host.c).
 */
#ifndef ESPNN_MEM_CONFIG_H
#define ESPNN_MEM_CONFIG_H

#include "espnn_config.h"
#include "espnn_mem.h"

#define ESPNN_MEM_CONFIG_INIT                                                      \
    {                                                                              \
        (espnn_mem_placement_t)ESPNN_CFG_ARENA_PLACEMENT,                          \
            (espnn_mem_placement_t)ESPNN_CFG_PLANNED_PLACEMENT,                    \
            (espnn_mem_weights_t)ESPNN_CFG_WEIGHTS, (size_t)ESPNN_CFG_INTERNAL_RAM_CAP, \
            ESPNN_CFG_SPIRAM != 0                                                  \
    }

#endif /* ESPNN_MEM_CONFIG_H */

/*
 * Drives the memory policy's public API from commands on stdin, one per line, and prints one
 * result line per command (tests/test_memory_policy.py):
 *   internal FREE LARGEST | psram FREE LARGEST PRESENT   script the stand-in heap (IDF build)
 *   alloc USE BYTES ALIGN WHAT...  -> "ok ID KIND BYTES ALIGNED" | "fail MESSAGE"
 *   malloc USE BYTES WHAT...       -> "ok ID KIND BYTES ALIGNED" | "fail"
 *   free ID | release ID           -> "freed"
 *   inuse -> "inuse N"   live -> "live N"   config -> "config arena=.. planned=.. ..."
 * USE is arena|planned|weights|state; KIND is internal|psram|host|none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "espnn_mem.h"

#ifdef ESPNN_TEST_IDF
#include "heap_caps_standin.h"
#endif

#define MAX_BLOCKS 64

static espnn_mem_block_t s_blocks[MAX_BLOCKS];
static void *s_ptrs[MAX_BLOCKS];
static int s_next;

static espnn_mem_use_t parse_use(const char *s) {
    if (strcmp(s, "arena") == 0) return ESPNN_MEM_ARENA;
    if (strcmp(s, "planned") == 0) return ESPNN_MEM_PLANNED;
    if (strcmp(s, "weights") == 0) return ESPNN_MEM_WEIGHTS;
    if (strcmp(s, "state") == 0) return ESPNN_MEM_STATE;
    fprintf(stderr, "driver: unknown use %s\n", s);
    exit(2);
}

static const char *kind_word(espnn_mem_kind_t k) {
    switch (k) {
    case ESPNN_MEM_KIND_INTERNAL: return "internal";
    case ESPNN_MEM_KIND_PSRAM: return "psram";
    case ESPNN_MEM_KIND_HOST: return "host";
    case ESPNN_MEM_KIND_NONE: break;
    }
    return "none";
}

static const char *rest_of(char *line, int skip) {
    char *p = line;
    for (int i = 0; i < skip && p != NULL; i++) {
        p = strchr(p, ' ');
        if (p != NULL) p++;
    }
    return p != NULL ? p : "";
}

int main(void) {
    char line[512];
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char cmd[16] = {0}, use[16] = {0};
        unsigned long a = 0, b = 0;
        if (sscanf(line, "%15s", cmd) != 1) continue;
#ifdef ESPNN_TEST_IDF
        unsigned long c = 0;
        if (strcmp(cmd, "internal") == 0 && sscanf(line, "%*s %lu %lu", &a, &b) == 2) {
            standin_heap_script(STANDIN_INTERNAL, a, b);
            puts("scripted");
        } else if (strcmp(cmd, "psram") == 0 && sscanf(line, "%*s %lu %lu %lu", &a, &b, &c) == 3) {
            standin_heap_script(STANDIN_PSRAM, a, b);
            standin_psram_present(c != 0);
            puts("scripted");
        } else if (strcmp(cmd, "live") == 0) {
            printf("live %d\n", standin_live_count());
        } else
#endif
        if (strcmp(cmd, "alloc") == 0 && sscanf(line, "%*s %15s %lu %lu", use, &a, &b) == 3) {
            char msg[ESPNN_MEM_MSG_MAX];
            espnn_mem_block_t blk = espnn_mem_alloc(parse_use(use), a, b, rest_of(line, 4), msg,
                                                    sizeof msg);
            if (blk.ptr == NULL) {
                printf("fail %s\n", msg);
            } else {
                size_t align = b == 0 ? 16 : b;
                s_blocks[s_next] = blk;
                printf("ok %d %s %lu %d\n", s_next++, kind_word(blk.kind),
                       (unsigned long)blk.bytes, ((uintptr_t)blk.ptr % align) == 0);
            }
        } else if (strcmp(cmd, "malloc") == 0 && sscanf(line, "%*s %15s %lu", use, &a) == 2) {
            void *p = espnn_mem_malloc(parse_use(use), a, rest_of(line, 3));
            if (p == NULL) {
                puts("fail");
            } else {
                memset(p, 0x5A, a); /* the whole requested size must be writable */
                s_ptrs[s_next] = p;
                printf("ok %d - %lu %d\n", s_next++, a, ((uintptr_t)p % 16) == 0);
            }
        } else if (strcmp(cmd, "free") == 0 && sscanf(line, "%*s %lu", &a) == 1) {
            espnn_mem_free(s_blocks[a]);
            s_blocks[a].ptr = NULL;
            puts("freed");
        } else if (strcmp(cmd, "release") == 0 && sscanf(line, "%*s %lu", &a) == 1) {
            espnn_mem_release(s_ptrs[a]);
            s_ptrs[a] = NULL;
            puts("freed");
        } else if (strcmp(cmd, "inuse") == 0) {
            printf("inuse %lu\n", (unsigned long)espnn_mem_internal_in_use());
        } else if (strcmp(cmd, "config") == 0) {
            const espnn_mem_config_t *cfg = espnn_mem_get_config();
            printf("config arena=%d planned=%d weights=%d cap=%lu spiram=%d\n", (int)cfg->arena,
                   (int)cfg->planned, (int)cfg->weights, (unsigned long)cfg->internal_cap,
                   (int)cfg->psram_enabled);
        } else {
            fprintf(stderr, "driver: bad command: %s\n", line);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}

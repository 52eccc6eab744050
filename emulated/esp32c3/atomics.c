/*
 * The C11 atomics the ESP32-C3 cannot do in one instruction.  The C3 core is rv32imc: no "A"
 * extension, so GCC turns every read-modify-write atomic into a call to these libatomic
 * helpers (aligned loads and stores stay plain instructions).  ESP-IDF supplies them the same
 * way on this single-core chip (components/newlib): with machine interrupts masked around a
 * plain read-modify-write, which is atomic with respect to everything that can run here.
 * Used by the memory policy's counters (memory/espnn_mem_core.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t irq_save(void)
{
    uint32_t mstatus;
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrrci %0, mstatus, 8\n.option pop"
                     : "=r"(mstatus)::"memory");
    return mstatus;
}

static inline void irq_restore(uint32_t mstatus)
{
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrs mstatus, %0\n.option pop" ::"r"(
                         mstatus & 8u)
                     : "memory");
}

/* __atomic_<op>_<bits>: the old value, the new one from `update` (of old and v) */
#define RMW_OP(bits, type, op, update)                                                               \
    type __atomic_##op##_##bits(volatile void *p, type v, int order);                                \
    type __atomic_##op##_##bits(volatile void *p, type v, int order)                                 \
    {                                                                                                \
        (void)order;                                                                                 \
        const uint32_t s = irq_save();                                                               \
        const type old = *(volatile type *)p;                                                        \
        *(volatile type *)p = (type)(update);                                                        \
        irq_restore(s);                                                                              \
        return old;                                                                                  \
    }

#define RMW(bits, type)                                                                              \
    RMW_OP(bits, type, fetch_add, old + v)                                                           \
    RMW_OP(bits, type, fetch_sub, old - v)                                                           \
    RMW_OP(bits, type, exchange, v)                                                                  \
    bool __atomic_compare_exchange_##bits(volatile void *p, void *expected, type desired, bool weak, \
                                          int success, int failure);                                 \
    bool __atomic_compare_exchange_##bits(volatile void *p, void *expected, type desired, bool weak, \
                                          int success, int failure)                                  \
    {                                                                                                \
        (void)weak;                                                                                  \
        (void)success;                                                                               \
        (void)failure;                                                                               \
        const uint32_t s = irq_save();                                                               \
        const type cur = *(volatile type *)p;                                                        \
        type want;                                                                                   \
        memcpy(&want, expected, sizeof want);                                                        \
        const bool ok = cur == want;                                                                 \
        if (ok) {                                                                                    \
            *(volatile type *)p = desired;                                                           \
        } else {                                                                                     \
            memcpy(expected, &cur, sizeof cur);                                                      \
        }                                                                                            \
        irq_restore(s);                                                                              \
        return ok;                                                                                   \
    }

RMW(1, unsigned char)
RMW(2, unsigned short)
RMW(4, unsigned int) /* the builtins' own types: uint32_t is unsigned long here */

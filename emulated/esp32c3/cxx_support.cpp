/*
 * What libsupc++ would give a C++ firmware, for a compiler that ships no C++ library
 * (riscv64-unknown-elf with the arm-none-eabi libstdc++ headers, emulated/targets.py): the
 * allocation operators on picolibc's heap, and the ABI hooks the compiler emits calls to.
 * Built with -fno-exceptions -fno-rtti -fno-threadsafe-statics, so no unwinder, type info or
 * guard functions are needed.  A failed allocation returns nullptr (the memory policy checks
 * every allocation), as operator new (std::nothrow) does; a pure virtual call aborts, and so do
 * the std::__throw_* helpers the containers' checks call (with -fno-exceptions there is nothing
 * to throw to: std::vector's length check, used by the measuring firmware's host API).
 */
#include <bits/functexcept.h>
#include <cstdlib>
#include <stdlib.h> /* ::aligned_alloc: the newlib-configured headers do not put it in std */
#include <new>

void *operator new(std::size_t n) { return std::malloc(n == 0 ? 1 : n); }
void *operator new[](std::size_t n) { return std::malloc(n == 0 ? 1 : n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n == 0 ? 1 : n); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return std::malloc(n == 0 ? 1 : n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

void *operator new(std::size_t n, std::align_val_t a) {
    const std::size_t al = static_cast<std::size_t>(a);
    return ::aligned_alloc(al, (n + al - 1) / al * al);
}
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }

extern "C" {
/* static objects' destructors are registered here; a firmware never unloads them */
void *__dso_handle = nullptr;
int __cxa_atexit(void (*)(void *), void *, void *) { return 0; }
void __cxa_pure_virtual() { std::abort(); }
void __cxa_deleted_virtual() { std::abort(); }
}

namespace std {
void __throw_length_error(const char *) { std::abort(); }
void __throw_bad_alloc() { std::abort(); }
void __throw_bad_array_new_length() { std::abort(); }
void __throw_logic_error(const char *) { std::abort(); }
void __throw_out_of_range(const char *) { std::abort(); }
void __throw_out_of_range_fmt(const char *, ...) { std::abort(); }
void __throw_invalid_argument(const char *) { std::abort(); }
} // namespace std

/* Host implementation of the Arduino compatibility layer (see Arduino.h). */
#include "Arduino.h"

#include <chrono>
#include <cinttypes>
#include <random>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point start_time() {
    static const Clock::time_point t0 = Clock::now();
    return t0;
}

std::mt19937 &rng() {
    static std::mt19937 gen(0);
    return gen;
}

std::string format_unsigned(unsigned long long v, int base) {
    if (base < 2 || base > 36) base = 10;
    if (v == 0) return "0";
    char buf[72];
    int i = 0;
    while (v > 0) {
        unsigned d = static_cast<unsigned>(v % static_cast<unsigned>(base));
        buf[i++] = static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10);
        v /= static_cast<unsigned>(base);
    }
    std::string out;
    while (i > 0) out.push_back(buf[--i]);
    return out;
}

std::string format_signed(long long v, int base) {
    if (base == 10 && v < 0) {
        return "-" + format_unsigned(0ULL - static_cast<unsigned long long>(v), 10);
    }
    return format_unsigned(static_cast<unsigned long long>(v), base);
}

std::string format_float(double v, int digits) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (digits < 0) digits = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

HostSerial Serial;

extern "C" {

unsigned long millis(void) {
    return static_cast<unsigned long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_time()).count());
}

unsigned long micros(void) {
    return static_cast<unsigned long>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_time()).count());
}

void delay(unsigned long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void delayMicroseconds(unsigned int us) {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
}

void yield(void) { std::this_thread::yield(); }

/* Pins do not exist on the host: writes are ignored, reads return LOW / 0. */
void pinMode(uint8_t, uint8_t) {}
void digitalWrite(uint8_t, uint8_t) {}
int digitalRead(uint8_t) { return LOW; }
int analogRead(uint8_t) { return 0; }

}  // extern "C"

long random(long max) { return max <= 0 ? 0 : random(0, max); }

long random(long min, long max) {
    if (max <= min) return min;
    std::uniform_int_distribution<long> dist(min, max - 1);
    return dist(rng());
}

void randomSeed(unsigned long seed) { rng().seed(static_cast<std::mt19937::result_type>(seed)); }

long map(long x, long in_min, long in_max, long out_min, long out_max) {
    if (in_max == in_min) return out_min;
    return (x - in_min) * (out_max - out_min) / (in_max - in_min) + out_min;
}

String::String(int v, int base) : s_(format_signed(v, base)) {}
String::String(unsigned int v, int base) : s_(format_unsigned(v, base)) {}
String::String(long v, int base) : s_(format_signed(v, base)) {}
String::String(unsigned long v, int base) : s_(format_unsigned(v, base)) {}
String::String(float v, int digits) : s_(format_float(v, digits)) {}
String::String(double v, int digits) : s_(format_float(v, digits)) {}

int String::indexOf(const String &o) const {
    size_t pos = s_.find(o.s_);
    return pos == std::string::npos ? -1 : static_cast<int>(pos);
}

String String::substring(unsigned int from, unsigned int to) const {
    if (from > s_.size()) return String();
    if (to > s_.size()) to = static_cast<unsigned int>(s_.size());
    if (to < from) std::swap(from, to);
    return String(s_.substr(from, to - from));
}

void String::trim() {
    size_t a = s_.find_first_not_of(" \t\r\n");
    size_t b = s_.find_last_not_of(" \t\r\n");
    s_ = a == std::string::npos ? std::string() : s_.substr(a, b - a + 1);
}

void HostSerial::flush() { fflush(stdout); }

size_t HostSerial::write(uint8_t c) {
    fputc(c, stdout);
    if (c == '\n') fflush(stdout);
    return 1;
}

size_t HostSerial::write(const uint8_t *buf, size_t n) {
    size_t done = fwrite(buf, 1, n, stdout);
    if (memchr(buf, '\n', n) != nullptr) fflush(stdout);
    return done;
}

size_t HostSerial::write(const char *s) { return s ? write(reinterpret_cast<const uint8_t *>(s), strlen(s)) : 0; }

size_t HostSerial::print(const char *s) { return write(s); }
size_t HostSerial::print(char c) { return write(static_cast<uint8_t>(c)); }
size_t HostSerial::print(long v, int base) { return write(format_signed(v, base).c_str()); }
size_t HostSerial::print(unsigned long v, int base) { return write(format_unsigned(v, base).c_str()); }
size_t HostSerial::print(long long v, int base) { return write(format_signed(v, base).c_str()); }
size_t HostSerial::print(unsigned long long v, int base) { return write(format_unsigned(v, base).c_str()); }
size_t HostSerial::print(double v, int digits) { return write(format_float(v, digits).c_str()); }

size_t HostSerial::printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(stdout, fmt, ap);
    va_end(ap);
    if (strchr(fmt, '\n') != nullptr) fflush(stdout);
    return n < 0 ? 0 : static_cast<size_t>(n);
}

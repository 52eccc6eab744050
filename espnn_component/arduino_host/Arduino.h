/*
 * Arduino compatibility for the executorch-espnn host board: enough of the Arduino core for
 * model sketches (setup()/loop(), Serial, millis()/micros()/delay(), a few pin and math
 * helpers) to build and run unchanged on this computer.  Output goes to stdout.
 *
 * The host main() runs setup() once, then loop() a fixed number of times (default 1) so
 * `pio run -t exec` and `pio test` terminate: `--loops N` on the command line (0 = forever,
 * e.g. `pio run -e host -t exec -a "--loops 10"`) or ESPNN_HOST_LOOPS=N in the environment.
 */
#ifndef ESPNN_ARDUINO_HOST_H
#define ESPNN_ARDUINO_HOST_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#include <string>

extern "C" {
#endif

#define ESPNN_ARDUINO_HOST 1
#ifndef ARDUINO
#define ARDUINO 10819
#endif

#define HIGH 0x1
#define LOW 0x0
#define INPUT 0x01
#define OUTPUT 0x03
#define INPUT_PULLUP 0x05
#ifndef LED_BUILTIN
#define LED_BUILTIN 2
#endif

typedef uint8_t byte;
typedef bool boolean;

unsigned long millis(void);
unsigned long micros(void);
void delay(unsigned long ms);
void delayMicroseconds(unsigned int us);
void yield(void);

void pinMode(uint8_t pin, uint8_t mode);
void digitalWrite(uint8_t pin, uint8_t value);
int digitalRead(uint8_t pin);
int analogRead(uint8_t pin);

#ifdef __cplusplus
} /* extern "C" */

/* The sketch's entry points (C++ linkage, as on Arduino). */
void setup(void);
void loop(void);

long random(long max);
long random(long min, long max);
void randomSeed(unsigned long seed);
long map(long x, long in_min, long in_max, long out_min, long out_max);

template <typename T, typename L, typename H>
inline T constrain(T x, L lo, H hi) {
    return x < lo ? static_cast<T>(lo) : (x > hi ? static_cast<T>(hi) : x);
}

#ifndef ESPNN_ARDUINO_NO_MINMAX
template <typename A, typename B>
inline auto min(A a, B b) -> decltype(a < b ? a : b) { return b < a ? b : a; }
template <typename A, typename B>
inline auto max(A a, B b) -> decltype(a < b ? a : b) { return a < b ? b : a; }
#endif

enum { DEC = 10, HEX = 16, OCT = 8, BIN = 2 };

/* A small Arduino String: enough for building messages and printing them. */
class String {
public:
    String() = default;
    String(const char *s) : s_(s ? s : "") {}
    String(const std::string &s) : s_(s) {}
    String(char c) : s_(1, c) {}
    String(int v, int base = DEC);
    String(unsigned int v, int base = DEC);
    String(long v, int base = DEC);
    String(unsigned long v, int base = DEC);
    String(float v, int digits = 2);
    String(double v, int digits = 2);
    const char *c_str() const { return s_.c_str(); }
    unsigned int length() const { return static_cast<unsigned int>(s_.size()); }
    String &operator+=(const String &o) { s_ += o.s_; return *this; }
    friend String operator+(String a, const String &b) { a += b; return a; }
    bool operator==(const String &o) const { return s_ == o.s_; }
    bool operator!=(const String &o) const { return s_ != o.s_; }
    char operator[](unsigned int i) const { return i < s_.size() ? s_[i] : '\0'; }
    int indexOf(const String &o) const;
    String substring(unsigned int from, unsigned int to = 0xFFFFFFFFu) const;
    long toInt() const { return strtol(s_.c_str(), nullptr, 10); }
    float toFloat() const { return strtof(s_.c_str(), nullptr); }
    void trim();
    bool startsWith(const String &p) const { return s_.compare(0, p.s_.size(), p.s_) == 0; }

private:
    std::string s_;
};

/* Serial: writes to stdout (flushed at every newline); reads nothing. */
class HostSerial {
public:
    void begin(unsigned long baud, ...) { (void)baud; }
    void end() {}
    operator bool() const { return true; }
    int available() { return 0; }
    int read() { return -1; }
    int peek() { return -1; }
    void flush();
    size_t write(uint8_t c);
    size_t write(const uint8_t *buf, size_t n);
    size_t write(const char *s);

    size_t print(const char *s);
    size_t print(const String &s) { return print(s.c_str()); }
    size_t print(char c);
    size_t print(int v, int base = DEC) { return print(static_cast<long>(v), base); }
    size_t print(unsigned int v, int base = DEC) { return print(static_cast<unsigned long>(v), base); }
    size_t print(long v, int base = DEC);
    size_t print(unsigned long v, int base = DEC);
    size_t print(long long v, int base = DEC);
    size_t print(unsigned long long v, int base = DEC);
    size_t print(double v, int digits = 2);

    size_t println() { return print("\n"); }
    template <typename T>
    size_t println(const T &v) { size_t n = print(v); return n + println(); }
    template <typename T>
    size_t println(const T &v, int fmt) { size_t n = print(v, fmt); return n + println(); }

    size_t printf(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    void setTimeout(unsigned long) {}
};

extern HostSerial Serial;

#endif /* __cplusplus */

#endif /* ESPNN_ARDUINO_HOST_H */

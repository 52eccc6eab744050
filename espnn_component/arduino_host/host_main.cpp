/*
 * main() of every host-board program: runs an Arduino sketch (setup() once, then loop()) or an
 * ESP-IDF style app (app_main()).  loop() runs `--loops N` times (default 1, 0 = forever) so
 * that `pio run -t exec` and `pio test` terminate; ESPNN_HOST_LOOPS=N does the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void setup(void) __attribute__((weak));
void loop(void) __attribute__((weak));
extern "C" void app_main(void) __attribute__((weak));

static long parse_loops(int argc, char **argv) {
    long loops = 1;
    const char *env = getenv("ESPNN_HOST_LOOPS");
    if (env != nullptr && *env != '\0') loops = strtol(env, nullptr, 10);
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "--loops", 7) != 0) continue;
        const char *value = argv[i] + 7;  /* "--loops=N", "--loops N" (one quoted argument) */
        if (*value == '\0') {
            if (i + 1 >= argc) break;
            value = argv[++i]; /* "--loops" "N" */
        } else if (*value == '=' || *value == ' ') {
            ++value;
        } else {
            continue;
        }
        loops = strtol(value, nullptr, 10);
    }
    return loops < 0 ? 1 : loops;
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    long loops = parse_loops(argc, argv);
    if (app_main != nullptr) {
        app_main();
        fflush(stdout);
        return 0;
    }
    if (setup == nullptr || loop == nullptr) {
        fprintf(stderr, "host board: the program defines neither setup()/loop() nor app_main()\n");
        return 2;
    }
    setup();
    for (long i = 0; loops == 0 || i < loops; ++i) loop();
    fflush(stdout);
    return 0;
}

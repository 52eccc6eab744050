/*
 * Runs fuzz_engine.c's LLVMFuzzerTestOneInput over files and directories without libFuzzer:
 * the gcc -m32 -fsanitize=address,undefined build replays the fuzz corpus with 32-bit size_t.
 *
 *   fuzz_replay PATH...             prints "replayed N inputs, B bytes"; a finding aborts
 *   fuzz_replay --verdicts FILE...  also prints espnn_inspect's verdict on each file, from an
 *                                   exact-size buffer: "FILE<TAB>STATUS<TAB>field<TAB>op<TAB>tensor"
 */
#define _POSIX_C_SOURCE 200809L /* stat, opendir */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "espnn_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int print_verdicts;
static unsigned long n_inputs;
static unsigned long long n_bytes;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return 1;
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return 1;
    }
    /* exact size, as libFuzzer hands it over: ASan sees any read past the end */
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1u);
    if (buf == NULL || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    if (print_verdicts) {
        espnn_info_t info;
        espnn_error_t err;
        const espnn_status_t st = espnn_inspect(buf, (size_t)n, &info, &err);
        printf("%s\t%s\t%s\t%d\t%d\n", path, espnn_status_name(st),
               st != ESPNN_OK && err.field != NULL ? err.field : "-",
               st != ESPNN_OK ? (int)err.op : -1, st != ESPNN_OK ? (int)err.tensor : -1);
        fflush(stdout);
    }
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    n_inputs++;
    n_bytes += (unsigned long long)n;
    return 0;
}

static int replay(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        return 1;
    }
    int rc = 0;
    for (struct dirent *e = readdir(d); e != NULL && rc == 0; e = readdir(d)) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        rc = replay(child);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay PATH...\n");
        return 1;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int first = 1;
    if (strcmp(argv[1], "--verdicts") == 0) {
        print_verdicts = 1;
        first = 2;
    }
    for (int i = first; i < argc; i++) {
        if (replay(argv[i]) != 0) {
            return 1;
        }
    }
    printf("replayed %lu inputs, %llu bytes (size_t is %u bits)\n", n_inputs, n_bytes,
           (unsigned)(8u * sizeof(size_t)));
    return 0;
}

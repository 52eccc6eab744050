/*
 * Status names and the one-line error text.  No stdio (the engine is freestanding): numbers
 * are formatted here, and only static ASCII strings and numbers ever reach the text, so a
 * log line built from a hostile payload is still valid UTF-8.
 */
#include "espnn_internal.h"

static const char *const status_names[ESPNN_STATUS_COUNT] = {
    [ESPNN_OK] = "ESPNN_OK",
    [ESPNN_ERR_ARGUMENT] = "ESPNN_ERR_ARGUMENT",
    [ESPNN_ERR_TRUNCATED] = "ESPNN_ERR_TRUNCATED",
    [ESPNN_ERR_MAGIC] = "ESPNN_ERR_MAGIC",
    [ESPNN_ERR_VERSION] = "ESPNN_ERR_VERSION",
    [ESPNN_ERR_TARGET] = "ESPNN_ERR_TARGET",
    [ESPNN_ERR_INVALID] = "ESPNN_ERR_INVALID",
    [ESPNN_ERR_UNSUPPORTED] = "ESPNN_ERR_UNSUPPORTED",
    [ESPNN_ERR_ALIGNMENT] = "ESPNN_ERR_ALIGNMENT",
    [ESPNN_ERR_MEMORY] = "ESPNN_ERR_MEMORY",
    [ESPNN_ERR_IO] = "ESPNN_ERR_IO",
    [ESPNN_ERR_STATE] = "ESPNN_ERR_STATE",
};

static const char *const status_text[ESPNN_STATUS_COUNT] = {
    [ESPNN_OK] = "ok",
    [ESPNN_ERR_ARGUMENT] = "invalid argument",
    [ESPNN_ERR_TRUNCATED] = "payload truncated",
    [ESPNN_ERR_MAGIC] = "not an EspNNDelegateBackend payload",
    [ESPNN_ERR_VERSION] = "unsupported payload format version",
    [ESPNN_ERR_TARGET] = ("payload built for another target or ESP-NN version (re-export "
                          "it for this chip)"),
    [ESPNN_ERR_INVALID] = "payload invalid",
    [ESPNN_ERR_UNSUPPORTED] = "unsupported by this engine",
    [ESPNN_ERR_ALIGNMENT] = "misaligned memory",
    [ESPNN_ERR_MEMORY] = "buffer smaller than espnn_inspect() asked for",
    [ESPNN_ERR_IO] = "input/output buffer missing or of the wrong size",
    [ESPNN_ERR_STATE] = "model not initialised",
};

const char *espnn_status_name(espnn_status_t status)
{
    return (unsigned)status < ESPNN_STATUS_COUNT ? status_names[status] : "ESPNN_ERR_?";
}

typedef struct text {
    char *buf;
    size_t size;
    size_t len; /* what would have been written */
} text_t;

static void put_char(text_t *t, char c)
{
    if (t->len + 1 < t->size) {
        t->buf[t->len] = c;
    }
    t->len++;
}

static void put_str(text_t *t, const char *s)
{
    for (; *s != '\0'; s++) {
        put_char(t, *s);
    }
}

/* Decimal by repeated subtraction of powers of ten: no 64-bit division, which some
 * bare-metal libgcc builds (Xtensa lx106) do not provide. */
static void put_int(text_t *t, int64_t v)
{
    static const uint64_t pow10[20] = {
        1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
        1000000000u, 10000000000u, 100000000000u, 1000000000000u, 10000000000000u,
        100000000000000u, 1000000000000000u, 10000000000000000u, 100000000000000000u,
        1000000000000000000u, 10000000000000000000u,
    };
    /* magnitude in unsigned so INT64_MIN has one too */
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int top = 0;
    while (top < 19 && pow10[top + 1] <= m) {
        top++;
    }
    if (v < 0) {
        put_char(t, '-');
    }
    for (int i = top; i >= 0; i--) {
        int digit = 0;
        while (m >= pow10[i]) {
            m -= pow10[i];
            digit++;
        }
        put_char(t, (char)('0' + digit));
    }
}

static void put_version(text_t *t, int64_t v)
{
    put_int(t, (v >> 16) & 0xFFFF);
    put_char(t, '.');
    put_int(t, v & 0xFFFF);
}

const char espnn_field_not_linked[] = "opcode";

size_t espnn_format_error(const espnn_error_t *err, char *buf, size_t size)
{
    text_t t = {buf, size, 0};
    if (err == NULL) {
        put_str(&t, "no error information");
    } else {
        const unsigned st = (unsigned)err->status;
        put_str(&t, st < ESPNN_STATUS_COUNT ? status_text[st] : "unknown status");
        if (err->op >= 0) {
            put_str(&t, ": op ");
            put_int(&t, err->op);
            if (err->opcode >= 0) {
                put_str(&t, " (");
                put_str(&t, espnn_opcode_name((uint32_t)err->opcode));
                put_char(&t, ')');
            }
        }
        if (err->tensor >= 0) {
            put_str(&t, ": tensor ");
            put_int(&t, err->tensor);
        }
        if (err->field == espnn_field_not_linked) {
            put_str(&t, ": not linked into this firmware, which links its embedded models' ops "
                        "only: set CONFIG_ESPNN_ET_ALL_OPS=y (menuconfig, sdkconfig.defaults) "
                        "or build the engine with -DESPNN_ENGINE_ALL_OPS=1");
        } else if (err->field != NULL) {
            const bool version = err->status == ESPNN_ERR_VERSION;
            put_str(&t, ": field '");
            put_str(&t, err->field);
            put_str(&t, "' = ");
            if (version) {
                put_version(&t, err->value);
                put_str(&t, " (this engine reads ");
                put_version(&t, err->limit);
                put_str(&t, ")");
            } else {
                put_int(&t, err->value);
                put_str(&t, " (limit ");
                put_int(&t, err->limit);
                put_char(&t, ')');
            }
        }
    }
    if (size > 0) {
        buf[t.len < size ? t.len : size - 1] = '\0';
    }
    return t.len;
}

/*
 * Structural validation of a payload: header, tensor table, io table, op records.
 *
 * The rules and their order mirror executorch_espnn/payload/reader.py, so the Python reader
 * and this parser accept and reject the same payloads (tests/test_engine.py mutates payloads
 * to check it).  Every field is read byte-wise; every sum and product is checked.
 */
#include "espnn_parse.h"
#include "espnn_util.h"

static const char *const dims_names[ESPNN_MAX_RANK] = {"dims[0]", "dims[1]", "dims[2]",
                                                       "dims[3]"};
static const char *const input_names[ESPNN_MAX_OP_INPUTS] = {
    "inputs[0]",  "inputs[1]",  "inputs[2]",  "inputs[3]",  "inputs[4]",  "inputs[5]",
    "inputs[6]",  "inputs[7]",  "inputs[8]",  "inputs[9]",  "inputs[10]", "inputs[11]",
    "inputs[12]", "inputs[13]", "inputs[14]", "inputs[15]",
};

const char *espnn_input_field(uint32_t slot);
const char *espnn_input_field(uint32_t slot)
{
    return slot < ESPNN_MAX_OP_INPUTS ? input_names[slot] : "inputs";
}

static espnn_status_t hfail(espnn_error_t *err, espnn_status_t st, const char *field,
                            int64_t value, int64_t limit)
{
    return espnn_fail(err, st, field, -1, -1, -1, value, limit);
}

static espnn_status_t tfail(espnn_error_t *err, const char *field, uint32_t tensor,
                            int64_t value, int64_t limit)
{
    return espnn_fail(err, ESPNN_ERR_INVALID, field, -1, -1, (int32_t)tensor, value, limit);
}

/* op UINT32_MAX: not about one op */
static espnn_status_t ofail(espnn_error_t *err, const char *field, uint32_t op, int32_t opcode,
                            int64_t value, int64_t limit)
{
    return espnn_fail(err, ESPNN_ERR_INVALID, field, op == UINT32_MAX ? -1 : (int32_t)op, opcode,
                      -1, value, limit);
}

static espnn_status_t parse_header(const uint8_t *b, size_t len, espnn_hdr_t *h,
                                   espnn_error_t *err)
{
    if (len < ESPNN_HEADER_SIZE) {
        return hfail(err, ESPNN_ERR_TRUNCATED, "header", (int64_t)len, ESPNN_HEADER_SIZE);
    }
    if (b[0] != ESPNN_MAGIC_0 || b[1] != ESPNN_MAGIC_1 || b[2] != ESPNN_MAGIC_2 ||
        b[3] != ESPNN_MAGIC_3) {
        return hfail(err, ESPNN_ERR_MAGIC, "magic", espnn_rd_u32(b), 0x4E4E5345);
    }
    h->format_major = espnn_rd_u16(b + 4);
    h->format_minor = espnn_rd_u16(b + 6);
    if (h->format_major != ESPNN_FORMAT_MAJOR || h->format_minor > ESPNN_FORMAT_MINOR) {
        return hfail(err, ESPNN_ERR_VERSION, "format_version",
                     ((int64_t)h->format_major << 16) | h->format_minor,
                     ((int64_t)ESPNN_FORMAT_MAJOR << 16) | ESPNN_FORMAT_MINOR);
    }
    h->producer[0] = b[8];
    h->producer[1] = b[9];
    h->producer[2] = b[10];
    h->target = b[11];
    if (h->target >= ESPNN_TARGET_COUNT) {
        return hfail(err, ESPNN_ERR_INVALID, "target", h->target, ESPNN_TARGET_COUNT - 1);
    }
#if ESPNN_BUILD_TARGET >= 0
    if (h->target != ESPNN_TARGET_GENERIC && h->target != ESPNN_BUILD_TARGET) {
        return hfail(err, ESPNN_ERR_TARGET, "target", h->target, ESPNN_BUILD_TARGET);
    }
#endif
    h->total_size = espnn_rd_u32(b + 12);
    if ((uint64_t)h->total_size != (uint64_t)len) {
        return hfail(err, (uint64_t)len < (uint64_t)h->total_size ? ESPNN_ERR_TRUNCATED
                                                                   : ESPNN_ERR_INVALID,
                     "total_size", h->total_size, (int64_t)len);
    }
    if (h->total_size > ESPNN_MAX_PAYLOAD_BYTES) {
        return hfail(err, ESPNN_ERR_INVALID, "total_size", h->total_size,
                     ESPNN_MAX_PAYLOAD_BYTES);
    }
    h->flags = espnn_rd_u32(b + 16);
    /* the io-homes flag is format 2.4's: a 2.3 payload that sets it is damaged */
    if ((h->flags & ~(uint32_t)ESPNN_HEADER_FLAGS_KNOWN) != 0 || (h->flags != 0 && h->format_minor < 4) ||
        espnn_rd_u32(b + 56) != 0 || espnn_rd_u32(b + 60) != 0) {
        return hfail(err, ESPNN_ERR_INVALID, "flags", h->flags, 0);
    }
    h->n_tensors = espnn_rd_u16(b + 20);
    h->n_ops = espnn_rd_u16(b + 22);
    h->n_inputs = espnn_rd_u16(b + 24);
    h->n_outputs = espnn_rd_u16(b + 26);
    {
        const char *names[4] = {"n_tensors", "n_ops", "n_inputs", "n_outputs"};
        uint32_t vals[4] = {h->n_tensors, h->n_ops, h->n_inputs, h->n_outputs};
        uint32_t lims[4] = {ESPNN_MAX_TENSORS, ESPNN_MAX_OPS, ESPNN_MAX_IO, ESPNN_MAX_IO};
        for (int i = 0; i < 4; i++) {
            if (vals[i] < 1 || vals[i] > lims[i]) {
                return hfail(err, ESPNN_ERR_INVALID, names[i], vals[i], lims[i]);
            }
        }
    }
    h->tensors_offset = espnn_rd_u32(b + 28);
    h->io_offset = espnn_rd_u32(b + 32);
    h->ops_offset = espnn_rd_u32(b + 36);
    h->ops_size = espnn_rd_u32(b + 40);
    h->const_offset = espnn_rd_u32(b + 44);
    h->const_size = espnn_rd_u32(b + 48);
    h->arena_size = espnn_rd_u32(b + 52);
    /* counts are <= 4096 and <= 32 here: these sums cannot wrap */
    const uint32_t want_io = ESPNN_HEADER_SIZE + ESPNN_TENSOR_RECORD_SIZE * h->n_tensors;
    const uint32_t n_io = h->n_inputs + h->n_outputs;
    const uint32_t homes = want_io + espnn_align_up(2u * n_io, 4u);
    const bool has_homes = (h->flags & ESPNN_HEADER_FLAG_IO_HOMES) != 0;
    const uint32_t want_ops = homes + (has_homes ? 4u * n_io : 0u);
    h->homes_offset = has_homes ? homes : 0u;
    if (h->tensors_offset != ESPNN_HEADER_SIZE) {
        return hfail(err, ESPNN_ERR_INVALID, "tensors_offset", h->tensors_offset,
                     ESPNN_HEADER_SIZE);
    }
    if (h->io_offset != want_io) {
        return hfail(err, ESPNN_ERR_INVALID, "io_offset", h->io_offset, want_io);
    }
    if (h->ops_offset != want_ops) {
        return hfail(err, ESPNN_ERR_INVALID, "ops_offset", h->ops_offset, want_ops);
    }
    const uint64_t ops_end = (uint64_t)h->ops_offset + h->ops_size;
    if (h->const_offset % ESPNN_CONST_ALIGN != 0 || (uint64_t)h->const_offset < ops_end ||
        (uint64_t)h->const_offset >= ops_end + ESPNN_CONST_ALIGN) {
        return hfail(err, ESPNN_ERR_INVALID, "const_offset", h->const_offset, (int64_t)ops_end);
    }
    if ((uint64_t)h->const_offset + h->const_size != (uint64_t)h->total_size) {
        return hfail(err, ESPNN_ERR_INVALID, "const_size", h->const_size,
                     (int64_t)h->total_size - h->const_offset);
    }
    if (h->arena_size > ESPNN_MAX_ARENA_BYTES) {
        return hfail(err, ESPNN_ERR_INVALID, "arena_size", h->arena_size, ESPNN_MAX_ARENA_BYTES);
    }
    return ESPNN_OK;
}

void espnn_tensor_decode(const uint8_t *payload, const espnn_hdr_t *hdr, uint32_t id,
                         espnn_tview_t *t)
{
    const uint8_t *r = payload + hdr->tensors_offset + (size_t)id * ESPNN_TENSOR_RECORD_SIZE;
    t->dtype = r[0];
    t->rank = r[1];
    t->storage = r[2];
    t->flags = r[3];
    t->numel = 1;
    for (int k = 0; k < ESPNN_MAX_RANK; k++) {
        t->dims[k] = espnn_rd_u16(r + 4 + 2 * k);
        t->numel *= t->dims[k]; /* validated: cannot wrap */
    }
    t->offset = espnn_rd_u32(r + 12);
    t->scale_bits = espnn_rd_u32(r + 16);
    t->scale = espnn_bits_to_f32(t->scale_bits);
    t->zero_point = espnn_rd_i32(r + 20);
    t->esize = espnn_dtype_size(t->dtype);
    t->nbytes = t->numel * t->esize; /* not stored in format 2; validated: fits 32 bits */
}

static espnn_status_t check_tensor(const uint8_t *b, const espnn_hdr_t *h, uint32_t i,
                                   espnn_error_t *err)
{
    const uint8_t *r = b + h->tensors_offset + (size_t)i * ESPNN_TENSOR_RECORD_SIZE;
    const uint32_t dtype = r[0], rank = r[1], storage = r[2], flags = r[3];
    const uint32_t esize = espnn_dtype_size(dtype);
    if (esize == 0 || storage > ESPNN_STORAGE_OUTPUT) {
        return tfail(err, "dtype/storage", i, esize == 0 ? dtype : storage, 0);
    }
    if (rank > ESPNN_MAX_RANK) {
        return tfail(err, "rank", i, rank, ESPNN_MAX_RANK);
    }
    if ((flags & ~(uint32_t)ESPNN_TENSOR_FLAGS_KNOWN) != 0 ||
        ((flags & ESPNN_TENSOR_FLAG_NHWC) && rank != 4)) {
        return tfail(err, "flags", i, flags, ESPNN_TENSOR_FLAGS_KNOWN);
    }
    uint32_t product = esize;
    bool wrapped = false;
    for (uint32_t k = 0; k < ESPNN_MAX_RANK; k++) {
        const uint32_t d = espnn_rd_u16(r + 4 + 2 * k);
        if (k < rank && (d < 1 || d > ESPNN_MAX_DIM)) {
            return tfail(err, dims_names[k], i, d, ESPNN_MAX_DIM);
        }
        if (k >= rank && d != 1) {
            return tfail(err, dims_names[k], i, d, 1);
        }
        if (!wrapped && !espnn_mul_u32(product, d, &product)) {
            wrapped = true; /* the byte size exceeds ESPNN_MAX_TENSOR_BYTES */
        }
    }
    /* nbytes is not stored: it is this product, which must fit 32 bits (a wrapped product
     * would pass the range checks below with a size far smaller than the tensor's) */
    if (wrapped) {
        return tfail(err, "nbytes", i, -1, (int64_t)ESPNN_MAX_TENSOR_BYTES);
    }
    const uint32_t nbytes = product;
    const uint32_t scale_bits = espnn_rd_u32(r + 16);
    /* finite (exponent not all ones) and not negative (-0.0 is allowed, as in Python) */
    if ((scale_bits & 0x7F800000u) == 0x7F800000u ||
        ((scale_bits & 0x80000000u) && (scale_bits & 0x7FFFFFFFu))) {
        return tfail(err, "scale", i, scale_bits, 0);
    }
    const int32_t zp = espnn_rd_i32(r + 20);
    if (dtype == ESPNN_DTYPE_INT8 && (zp < -128 || zp > 127)) {
        return tfail(err, "zero_point", i, zp, zp < 0 ? -128 : 127);
    }
    const uint32_t off = espnn_rd_u32(r + 12);
    if (storage == ESPNN_STORAGE_ARENA) {
        if (off % esize != 0 || (uint64_t)off + nbytes > h->arena_size) {
            return tfail(err, "offset", i, off, h->arena_size);
        }
    } else if (storage == ESPNN_STORAGE_CONST) {
        if (off % ESPNN_CONST_ALIGN != 0 || (uint64_t)off + nbytes > h->const_size) {
            return tfail(err, "offset", i, off, h->const_size);
        }
    } else {
        const uint32_t lim = storage == ESPNN_STORAGE_INPUT ? h->n_inputs : h->n_outputs;
        if (off >= lim) {
            return tfail(err, "offset", i, off, lim);
        }
        if (dtype != ESPNN_DTYPE_INT8 && dtype != ESPNN_DTYPE_FLOAT32) {
            return tfail(err, "dtype", i, dtype, ESPNN_DTYPE_INT8);
        }
    }
    return ESPNN_OK;
}

static espnn_status_t check_io(const uint8_t *b, const espnn_hdr_t *h, espnn_error_t *err)
{
    for (uint32_t dir = 0; dir < 2; dir++) {
        const uint32_t n = dir == 0 ? h->n_inputs : h->n_outputs;
        const uint32_t base = h->io_offset + (dir == 0 ? 0u : 2u * h->n_inputs);
        const uint8_t want = dir == 0 ? ESPNN_STORAGE_INPUT : ESPNN_STORAGE_OUTPUT;
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t tid = espnn_rd_u16(b + base + 2 * k);
            bool ok = tid < h->n_tensors;
            if (ok) {
                const uint8_t *r = b + h->tensors_offset + (size_t)tid * ESPNN_TENSOR_RECORD_SIZE;
                ok = r[2] == want && espnn_rd_u32(r + 12) == k;
            }
            if (!ok) {
                return espnn_fail(err, ESPNN_ERR_INVALID, dir == 0 ? "inputs" : "outputs", -1,
                                  -1, (int32_t)tid, k, n);
            }
        }
    }
    /* Each io home (format 2.4) lies inside the arena, aligned like any arena buffer. */
    if (h->homes_offset != 0) {
        for (uint32_t k = 0; k < h->n_inputs + h->n_outputs; k++) {
            const uint32_t home = espnn_rd_u32(b + h->homes_offset + 4 * k);
            if (home == ESPNN_NO_HOME) {
                continue;
            }
            const uint32_t tid = espnn_rd_u16(b + h->io_offset + 2 * k); /* < n_tensors, checked */
            espnn_tview_t t;
            espnn_tensor_decode(b, h, tid, &t);
            if (home % ESPNN_ARENA_ALIGN != 0 || (uint64_t)home + t.nbytes > h->arena_size) {
                return espnn_fail(err, ESPNN_ERR_INVALID, "io_homes", -1, -1, (int32_t)tid, home,
                                  h->arena_size);
            }
        }
    }
    /* Every io tensor is the one its table entry names: a second tensor claiming the same
     * delegate buffer with other dims would read or write past that buffer. */
    for (uint32_t i = 0; i < h->n_tensors; i++) {
        const uint8_t *r = b + h->tensors_offset + (size_t)i * ESPNN_TENSOR_RECORD_SIZE;
        if (r[2] != ESPNN_STORAGE_INPUT && r[2] != ESPNN_STORAGE_OUTPUT) {
            continue;
        }
        const uint32_t k = espnn_rd_u32(r + 12); /* < n_inputs/n_outputs, checked */
        const uint32_t base = h->io_offset + (r[2] == ESPNN_STORAGE_INPUT ? 0u : 2u * h->n_inputs);
        if (espnn_rd_u16(b + base + 2 * k) != i) {
            return tfail(err, "offset", i, k, -1);
        }
    }
    return ESPNN_OK;
}

void espnn_oprec_decode(const uint8_t *payload, uint32_t pos, espnn_oprec_t *r)
{
    const uint8_t *p = payload + pos;
    r->pos = pos;
    r->opcode = espnn_rd_u16(p);
    r->n_inputs = p[2];
    r->record_size = espnn_rd_u16(p + 6);
    r->scratch_offset = espnn_rd_u32(p + 8);
    r->scratch_size = espnn_rd_u32(p + 12);
    for (uint32_t s = 0; s <= r->n_inputs; s++) {
        r->ids[s] = espnn_rd_u16(p + ESPNN_OP_HEADER_SIZE + 2 * s);
    }
    const uint32_t params_at = ESPNN_OP_HEADER_SIZE + espnn_align_up(2u * (r->n_inputs + 1), 4u);
    const uint32_t n_params = espnn_rd_u16(p + 4) / 4u;
    for (uint32_t k = 0; k < n_params && k < 16; k++) {
        r->params[k] = espnn_rd_i32(p + params_at + 4 * k);
    }
}

static espnn_status_t check_ops_structure(const uint8_t *b, const espnn_hdr_t *h,
                                          espnn_error_t *err)
{
    const uint32_t ops_end = h->ops_offset + h->ops_size; /* <= const_offset: no wrap */
    uint32_t pos = h->ops_offset;
    for (uint32_t i = 0; i < h->n_ops; i++) {
        if ((uint64_t)pos + ESPNN_OP_HEADER_SIZE > ops_end) {
            return ofail(err, "ops_size", i, -1, h->ops_size, pos - h->ops_offset);
        }
        const uint8_t *p = b + pos;
        const uint32_t opcode = espnn_rd_u16(p);
        const uint32_t nin = p[2], nout = p[3];
        const uint32_t psize = espnn_rd_u16(p + 4), rsize = espnn_rd_u16(p + 6);
        const uint32_t s_off = espnn_rd_u32(p + 8), s_size = espnn_rd_u32(p + 12);
        const espnn_op_spec_t *spec = espnn_op_spec(opcode);
        if (spec == NULL) {
            return ofail(err, "opcode", i, -1, opcode, ESPNN_OP_COUNT - 1);
        }
        const int32_t oc = (int32_t)opcode;
        if (espnn_op_family(opcode) == NULL) { /* a valid opcode this firmware did not link */
            return espnn_fail(err, ESPNN_ERR_UNSUPPORTED, espnn_field_not_linked, (int32_t)i, oc,
                              -1, opcode, 0);
        }
        if (spec->since_minor > h->format_minor) { /* an opcode newer than the payload's format */
            return ofail(err, "opcode", i, oc, h->format_minor, spec->since_minor);
        }
        if (nout != 1) {
            return ofail(err, "n_outputs", i, oc, nout, 1);
        }
        if (spec->n_inputs == 0) {
            if (nin < 1 || nin > ESPNN_MAX_OP_INPUTS) {
                return ofail(err, "n_inputs", i, oc, nin, ESPNN_MAX_OP_INPUTS);
            }
        } else if (nin != spec->n_inputs) {
            return ofail(err, "n_inputs", i, oc, nin, spec->n_inputs);
        }
        if (psize != 4u * spec->n_params) {
            return ofail(err, "params_size", i, oc, psize, 4u * spec->n_params);
        }
        const uint32_t want = ESPNN_OP_HEADER_SIZE + espnn_align_up(2u * (nin + 1), 4u) + psize;
        if (rsize != want || (uint64_t)pos + rsize > ops_end) {
            return ofail(err, "record_size", i, oc, rsize, want);
        }
        for (uint32_t s = 0; s < nin; s++) {
            const uint32_t tid = espnn_rd_u16(p + ESPNN_OP_HEADER_SIZE + 2 * s);
            if (tid != ESPNN_NO_TENSOR && tid >= h->n_tensors) {
                return ofail(err, espnn_input_field(s), i, oc, tid, h->n_tensors);
            }
        }
        const uint32_t out = espnn_rd_u16(p + ESPNN_OP_HEADER_SIZE + 2 * nin);
        if (out >= h->n_tensors) {
            return ofail(err, "output", i, oc, out, h->n_tensors);
        }
        if (s_size == 0 && s_off != 0) {
            return ofail(err, "scratch_offset", i, oc, s_off, 0);
        }
        if (s_size != 0 && (s_off % 16 != 0 || (uint64_t)s_off + s_size > h->arena_size)) {
            return ofail(err, "scratch_offset", i, oc, s_off, h->arena_size);
        }
        pos += rsize;
    }
    if (pos != ops_end) {
        return ofail(err, "ops_size", UINT32_MAX, -1, h->ops_size, pos - h->ops_offset);
    }
    return ESPNN_OK;
}

espnn_status_t espnn_parse_structure(const uint8_t *buf, size_t len, espnn_hdr_t *hdr,
                                     espnn_error_t *err)
{
    espnn_status_t st = parse_header(buf, len, hdr, err);
    if (st != ESPNN_OK) {
        return st;
    }
    for (uint32_t i = 0; i < hdr->n_tensors; i++) {
        st = check_tensor(buf, hdr, i, err);
        if (st != ESPNN_OK) {
            return st;
        }
    }
    st = check_io(buf, hdr, err);
    if (st != ESPNN_OK) {
        return st;
    }
    return check_ops_structure(buf, hdr, err);
}

/*
 * Semantic validation: each op's rules (delegated to its family's prepare, which also
 * precomputes what eval needs) and the dataflow rules over the whole op list.  Mirrors
 * executorch_espnn/payload/validate.py rule for rule.
 */
#include "espnn_parse.h"
#include "espnn_util.h"

const char *espnn_input_field(uint32_t slot);

espnn_status_t espnn_fail(espnn_error_t *err, espnn_status_t status, const char *field,
                          int32_t op, int32_t opcode, int32_t tensor, int64_t value,
                          int64_t limit)
{
    if (err != NULL) {
        err->status = status;
        err->field = field;
        err->op = op;
        err->opcode = opcode;
        err->tensor = tensor;
        err->value = value;
        err->limit = limit;
    }
    return status;
}

espnn_status_t espnn_prep_fail_status(espnn_prep_t *p, espnn_status_t status, const char *field,
                                      int64_t value, int64_t limit)
{
    return espnn_fail(p->err, status, field, (int32_t)p->op_index, (int32_t)p->opcode, -1, value,
                      limit);
}

espnn_status_t espnn_prep_fail(espnn_prep_t *p, const char *field, int64_t value, int64_t limit)
{
    return espnn_prep_fail_status(p, ESPNN_ERR_INVALID, field, value, limit);
}

bool espnn_prep_has(const espnn_prep_t *p, uint32_t slot)
{
    return slot <= p->n_inputs && p->ids[slot] != ESPNN_NO_TENSOR;
}

void espnn_prep_tensor(const espnn_prep_t *p, uint32_t slot, espnn_tview_t *t)
{
    espnn_tensor_decode(p->payload, p->hdr, p->ids[slot], t);
}

const char *espnn_prep_param_name(const espnn_prep_t *p, uint32_t index)
{
    const espnn_op_spec_t *spec = espnn_op_spec(p->opcode);
    return (spec != NULL && spec->params != NULL && index < spec->n_params) ? spec->params[index]
                                                                           : "params";
}

espnn_status_t espnn_prep_param(espnn_prep_t *p, uint32_t index, int64_t lo, int64_t hi,
                                int32_t *out)
{
    const int32_t v = p->params[index];
    if (v < lo || v > hi) {
        return espnn_prep_fail(p, espnn_prep_param_name(p, index), v, v < lo ? lo : hi);
    }
    if (out != NULL) {
        *out = v;
    }
    return ESPNN_OK;
}

espnn_status_t espnn_prep_dtype(espnn_prep_t *p, const espnn_tview_t *t, uint8_t want,
                                const char *field)
{
    return t->dtype == want ? ESPNN_OK : espnn_prep_fail(p, field, t->dtype, want);
}

espnn_status_t espnn_prep_rank(espnn_prep_t *p, const espnn_tview_t *t, uint8_t want,
                               const char *field)
{
    return t->rank == want ? ESPNN_OK : espnn_prep_fail(p, field, t->rank, want);
}

espnn_status_t espnn_prep_int8_rank4_io(espnn_prep_t *p, uint32_t out_slot, espnn_tview_t *x,
                                        espnn_tview_t *o)
{
    espnn_prep_tensor(p, 0, x);
    espnn_prep_tensor(p, out_slot, o);
    espnn_status_t st = espnn_prep_dtype(p, x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, x, 4, "input");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, o, ESPNN_DTYPE_INT8, "output");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, o, 4, "output");
    }
    return st;
}

espnn_status_t espnn_prep_const(espnn_prep_t *p, uint32_t slot, espnn_tview_t *t,
                                const char *field)
{
    espnn_prep_tensor(p, slot, t);
    return t->storage == ESPNN_STORAGE_CONST
               ? ESPNN_OK
               : espnn_prep_fail(p, field, t->storage, ESPNN_STORAGE_CONST);
}

espnn_status_t espnn_prep_act(espnn_prep_t *p, uint32_t i_min, uint32_t i_max)
{
    int32_t lo, hi;
    espnn_status_t st = espnn_prep_param(p, i_min, -128, 127, &lo);
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, i_max, -128, 127, &hi);
    }
    if (st == ESPNN_OK && lo > hi) {
        st = espnn_prep_fail(p, "act_min", lo, hi);
    }
    return st;
}

espnn_status_t espnn_prep_in_offset(espnn_prep_t *p, uint32_t index)
{
    return espnn_prep_param(p, index, -127, 128, NULL);
}

espnn_status_t espnn_prep_out_offset(espnn_prep_t *p, uint32_t index)
{
    return espnn_prep_param(p, index, -128, 127, NULL);
}

int32_t espnn_const_i32(const espnn_prep_t *p, const espnn_tview_t *t, uint32_t index)
{
    return espnn_rd_i32(p->consts + t->offset + 4u * index);
}

bool espnn_dims_equal(const espnn_tview_t *a, const espnn_tview_t *b)
{
    if (a->rank != b->rank) {
        return false;
    }
    for (uint32_t k = 0; k < ESPNN_MAX_RANK; k++) {
        if (a->dims[k] != b->dims[k]) {
            return false;
        }
    }
    return true;
}

static bool is_vector(const espnn_tview_t *t, uint32_t n)
{
    return t->rank == 1 && t->dims[0] == n;
}

espnn_status_t espnn_prep_filter_bias(espnn_prep_t *p, uint32_t n_out)
{
    espnn_tview_t f, b;
    espnn_status_t st = espnn_prep_const(p, 1, &f, "filter");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &f, ESPNN_DTYPE_INT8, "filter");
    }
    for (uint32_t i = 0; st == ESPNN_OK && i < f.numel; i++) {
        if (p->consts[f.offset + i] == 0x80) {
            st = espnn_prep_fail(p, "filter", -128, -127); /* weights are symmetric */
        }
    }
    if (st != ESPNN_OK || !espnn_prep_has(p, 2)) {
        return st;
    }
    st = espnn_prep_const(p, 2, &b, "bias");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &b, ESPNN_DTYPE_INT32, "bias");
    }
    if (st == ESPNN_OK && !is_vector(&b, n_out)) {
        st = espnn_prep_fail(p, "bias", b.dims[0], n_out);
    }
    for (uint32_t i = 0; st == ESPNN_OK && i < n_out; i++) {
        const int32_t v = espnn_const_i32(p, &b, i);
        if (v > ESPNN_MAX_ABS_BIAS || v < -ESPNN_MAX_ABS_BIAS) {
            st = espnn_prep_fail(p, "bias", v, ESPNN_MAX_ABS_BIAS);
        }
    }
    return st;
}

espnn_status_t espnn_prep_requant_arrays(espnn_prep_t *p, uint32_t n)
{
    espnn_tview_t m, s;
    espnn_status_t st = espnn_prep_const(p, 3, &m, "mult");
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 4, &s, "shift");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &m, ESPNN_DTYPE_INT32, "mult");
    }
    if (st == ESPNN_OK && !is_vector(&m, n)) {
        st = espnn_prep_fail(p, "mult", m.dims[0], n);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &s, ESPNN_DTYPE_INT32, "shift");
    }
    if (st == ESPNN_OK && !is_vector(&s, n)) {
        st = espnn_prep_fail(p, "shift", s.dims[0], n);
    }
    for (uint32_t c = 0; st == ESPNN_OK && c < n; c++) {
        const int32_t v = espnn_const_i32(p, &m, c);
        if (v < 0) {
            st = espnn_prep_fail(p, "mult", v, 0);
        }
    }
    for (uint32_t c = 0; st == ESPNN_OK && c < n; c++) {
        const int32_t v = espnn_const_i32(p, &s, c);
        if (v < ESPNN_SHIFT_MIN || v > ESPNN_SHIFT_MAX) {
            st = espnn_prep_fail(p, "shift", v, v < 0 ? ESPNN_SHIFT_MIN : ESPNN_SHIFT_MAX);
        }
    }
    return st;
}

espnn_status_t espnn_prep_weighted(espnn_prep_t *p, uint32_t i_in_offset, uint32_t i_out_offset,
                                   uint32_t i_act_min, uint32_t i_act_max, uint32_t n_out)
{
    espnn_status_t st = espnn_prep_in_offset(p, i_in_offset);
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, i_out_offset);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, i_act_min, i_act_max);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_filter_bias(p, n_out);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_requant_arrays(p, n_out);
    }
    return st;
}

/* ---- the op pass ---------------------------------------------------------------------- */

static espnn_status_t prepare_op(const uint8_t *buf, const espnn_hdr_t *hdr,
                                 const uint8_t *consts, espnn_error_t *err, uint32_t i,
                                 const espnn_oprec_t *rec, espnn_prep_t *p, uint32_t *data)
{
    const espnn_op_spec_t *spec = espnn_op_spec(rec->opcode);
    const espnn_op_family_t *fam = espnn_op_family(rec->opcode);
    memset(p, 0, sizeof *p);
    p->payload = buf;
    p->hdr = hdr;
    p->consts = consts != NULL ? consts : buf + hdr->const_offset;
    p->consts_addr = consts != NULL ? (uintptr_t)consts : (uintptr_t)hdr->const_offset;
    p->err = err;
    p->op_index = i;
    p->opcode = rec->opcode;
    p->n_inputs = rec->n_inputs;
    memcpy(p->ids, rec->ids, sizeof p->ids);
    memcpy(p->params, rec->params, sizeof p->params);
    p->scratch_offset = rec->scratch_offset;
    p->scratch_size = rec->scratch_size;
    memset(data, 0, ESPNN_MAX_FAMILY_STATE);
    p->data = data;
    for (uint32_t s = 0; s < rec->n_inputs; s++) {
        const bool optional = spec->n_inputs != 0 && (spec->optional_mask & (1u << s)) != 0;
        if (rec->ids[s] == ESPNN_NO_TENSOR && !optional) {
            return espnn_prep_fail(p, espnn_input_field(s), ESPNN_NO_TENSOR, hdr->n_tensors);
        }
    }
    return fam->prepare(p);
}

#define BITSET_WORDS ((ESPNN_MAX_TENSORS + 31) / 32)

static bool bit_get(const uint32_t *set, uint32_t i)
{
    return (set[i / 32] >> (i % 32)) & 1u;
}

static espnn_status_t check_dataflow(const uint8_t *buf, const espnn_hdr_t *hdr,
                                     espnn_error_t *err)
{
    uint32_t written[BITSET_WORDS];
    memset(written, 0, sizeof written);
    uint32_t pos = hdr->ops_offset;
    for (uint32_t i = 0; i < hdr->n_ops; i++) {
        espnn_oprec_t rec;
        espnn_oprec_decode(buf, pos, &rec);
        pos += rec.record_size;
        const int32_t op = (int32_t)i, oc = (int32_t)rec.opcode;
        const uint32_t out_id = rec.ids[rec.n_inputs];
        espnn_tview_t out, t;
        espnn_tensor_decode(buf, hdr, out_id, &out);
        if (out.storage != ESPNN_STORAGE_ARENA && out.storage != ESPNN_STORAGE_OUTPUT) {
            return espnn_fail(err, ESPNN_ERR_INVALID, "output", op, oc, (int32_t)out_id,
                              out.storage, ESPNN_STORAGE_ARENA);
        }
        if (bit_get(written, out_id)) {
            return espnn_fail(err, ESPNN_ERR_INVALID, "output", op, oc, (int32_t)out_id, out_id,
                              -1);
        }
        for (uint32_t s = 0; s < rec.n_inputs; s++) {
            const uint32_t tid = rec.ids[s];
            if (tid == ESPNN_NO_TENSOR) {
                continue;
            }
            espnn_tensor_decode(buf, hdr, tid, &t);
            const bool activation =
                t.storage == ESPNN_STORAGE_ARENA || t.storage == ESPNN_STORAGE_OUTPUT;
            if ((activation && !bit_get(written, tid)) || tid == out_id) {
                return espnn_fail(err, ESPNN_ERR_INVALID, espnn_input_field(s), op, oc,
                                  (int32_t)tid, tid, out_id);
            }
        }
        if (out.storage == ESPNN_STORAGE_ARENA) {
            const espnn_op_spec_t *spec = espnn_op_spec(rec.opcode);
            for (uint32_t s = 0; s < rec.n_inputs; s++) {
                const uint32_t tid = rec.ids[s];
                if (tid == ESPNN_NO_TENSOR) {
                    continue;
                }
                espnn_tensor_decode(buf, hdr, tid, &t);
                if (t.storage != ESPNN_STORAGE_ARENA ||
                    !espnn_ranges_overlap(out.offset, out.nbytes, t.offset, t.nbytes)) {
                    continue;
                }
                const bool same = t.offset == out.offset && t.nbytes == out.nbytes;
                const bool in_place = same && (spec->in_place_mask & (1u << s)) != 0 &&
                                      (spec->in_place_any_dims || espnn_dims_equal(&t, &out));
                if (!in_place) {
                    return espnn_fail(err, ESPNN_ERR_INVALID, espnn_input_field(s), op, oc,
                                      (int32_t)tid, t.offset, out.offset);
                }
            }
            if (rec.scratch_size != 0 && espnn_ranges_overlap(out.offset, out.nbytes,
                                                              rec.scratch_offset,
                                                              rec.scratch_size)) {
                return espnn_fail(err, ESPNN_ERR_INVALID, "scratch_offset", op, oc,
                                  (int32_t)out_id, rec.scratch_offset, out.offset);
            }
        }
        if (rec.scratch_size != 0) {
            for (uint32_t s = 0; s < rec.n_inputs; s++) {
                const uint32_t tid = rec.ids[s];
                if (tid == ESPNN_NO_TENSOR) {
                    continue;
                }
                espnn_tensor_decode(buf, hdr, tid, &t);
                if (t.storage == ESPNN_STORAGE_ARENA &&
                    espnn_ranges_overlap(rec.scratch_offset, rec.scratch_size, t.offset,
                                         t.nbytes)) {
                    return espnn_fail(err, ESPNN_ERR_INVALID, "scratch_offset", op, oc,
                                      (int32_t)tid, rec.scratch_offset, t.offset);
                }
            }
        }
        written[out_id / 32] |= 1u << (out_id % 32);
    }
    const uint32_t base = hdr->io_offset + 2u * hdr->n_inputs;
    for (uint32_t k = 0; k < hdr->n_outputs; k++) {
        const uint32_t tid = espnn_rd_u16(buf + base + 2 * k);
        if (!bit_get(written, tid)) {
            return espnn_fail(err, ESPNN_ERR_INVALID, "outputs", -1, -1, (int32_t)tid, k, -1);
        }
    }
    return ESPNN_OK;
}

espnn_status_t espnn_validate_ops(const uint8_t *buf, const espnn_hdr_t *hdr,
                                  const uint8_t *consts, espnn_error_t *err,
                                  espnn_prep_sink_t sink, void *sink_ctx)
{
    uint32_t data[ESPNN_MAX_FAMILY_STATE / 4];
    espnn_prep_t p;
    uint32_t pos = hdr->ops_offset;
    for (uint32_t i = 0; i < hdr->n_ops; i++) {
        espnn_oprec_t rec;
        espnn_oprec_decode(buf, pos, &rec);
        pos += rec.record_size;
        espnn_status_t st = prepare_op(buf, hdr, consts, err, i, &rec, &p, data);
        if (st != ESPNN_OK) {
            return st;
        }
        if (sink != NULL) {
            sink(sink_ctx, i, &rec, &p);
        }
    }
    return sink != NULL ? ESPNN_OK : check_dataflow(buf, hdr, err);
}

uint32_t espnn_state_records(const uint8_t *buf, const espnn_hdr_t *hdr)
{
    uint32_t records = 0;
    for (uint32_t i = 0; i < hdr->n_tensors; i++) {
        espnn_tview_t t;
        espnn_tensor_decode(buf, hdr, i, &t);
        if (t.storage != ESPNN_STORAGE_CONST) {
            records = i + 1;
        }
    }
    return records;
}

uint32_t espnn_state_bytes(const uint8_t *buf, const espnn_hdr_t *hdr)
{
    /* bounded by 4096 tensors and ops: at most a few hundred KiB, no overflow */
    const uint32_t records = espnn_state_records(buf, hdr);
    uint32_t total = ESPNN_STATE_HEADER_BYTES + ESPNN_STATE_TENSOR_BYTES * records +
                     ESPNN_STATE_CONST_BYTES * (hdr->n_tensors - records) +
                     ESPNN_STATE_IO_BYTES * (hdr->n_inputs + hdr->n_outputs) +
                     ESPNN_STATE_OP_BYTES * hdr->n_ops;
    uint32_t pos = hdr->ops_offset;
    for (uint32_t i = 0; i < hdr->n_ops; i++) {
        const uint32_t opcode = espnn_rd_u16(buf + pos);
        const uint32_t nin = buf[pos + 2];
        total += espnn_align_up(2u * nin, 4u) + espnn_op_family(opcode)->state_bytes;
        pos += espnn_rd_u16(buf + pos + 6);
    }
    return total;
}

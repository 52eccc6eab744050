/*
 * Public API: inspect (validate), init (validate, then bind the caller's state and arena),
 * io binding and invoke.  See docs/engine.md for the lifecycle and the state layout.
 */
#if !defined(_POSIX_C_SOURCE) && (defined(__linux__) || defined(__unix__))
/* -std=c11 hides clock_gettime, the host's profile clock (espnn_clock.h); nothing else here
 * depends on it */
#define _POSIX_C_SOURCE 199309L
#endif
#include "espnn_parse.h"
#include "espnn_profile.h"
#include "espnn_util.h"
#if ESPNN_PROFILE
#include "espnn_clock.h"
#endif
#ifdef ESPNN_HOST_SCRATCH_GUARD
#include "esp_nn_host_guard.h"
#endif

static void clear_error(espnn_error_t *err)
{
    if (err != NULL) {
        err->status = ESPNN_OK;
        err->field = NULL;
        err->op = -1;
        err->opcode = -1;
        err->tensor = -1;
        err->value = 0;
        err->limit = 0;
    }
}

static espnn_status_t arg_fail(espnn_error_t *err, espnn_status_t st, const char *field,
                               int64_t value, int64_t limit)
{
    return espnn_fail(err, st, field, -1, -1, -1, value, limit);
}

static espnn_status_t validate(const uint8_t *buf, size_t len, espnn_hdr_t *hdr,
                               espnn_error_t *err)
{
    espnn_status_t st = espnn_parse_structure(buf, len, hdr, err);
    if (st == ESPNN_OK) {
        st = espnn_validate_ops(buf, hdr, NULL, err, NULL, NULL);
    }
    return st;
}

static void fill_info(const uint8_t *buf, const espnn_hdr_t *h, espnn_info_t *info)
{
    memset(info, 0, sizeof *info);
    info->format_major = h->format_major;
    info->format_minor = h->format_minor;
    info->producer_major = h->producer[0];
    info->producer_minor = h->producer[1];
    info->producer_patch = h->producer[2];
    info->target = h->target;
    info->n_tensors = h->n_tensors;
    info->n_ops = h->n_ops;
    info->n_inputs = h->n_inputs;
    info->n_outputs = h->n_outputs;
    info->arena_bytes = h->arena_size;
    info->state_bytes = espnn_state_bytes(buf, h);
    info->const_offset = h->const_offset;
    info->const_bytes = h->const_size;
}

espnn_status_t espnn_inspect(const void *payload, size_t len, espnn_info_t *info,
                             espnn_error_t *err)
{
    clear_error(err);
    if (payload == NULL || info == NULL) {
        return arg_fail(err, ESPNN_ERR_ARGUMENT, payload == NULL ? "payload" : "info", 0, 0);
    }
    espnn_hdr_t hdr;
    espnn_status_t st = validate((const uint8_t *)payload, len, &hdr, err);
    if (st == ESPNN_OK) {
        fill_info((const uint8_t *)payload, &hdr, info);
    }
    return st;
}

/* ---- binding -------------------------------------------------------------------------- */

typedef struct bind_ctx {
    uint8_t *state;
    espnn_op_rt_t *ops;
    uint32_t cursor; /* next free byte of the op data area */
} bind_ctx_t;

static void bind_op(void *vctx, uint32_t i, const espnn_oprec_t *rec, const espnn_prep_t *p)
{
    bind_ctx_t *ctx = (bind_ctx_t *)vctx;
    espnn_op_rt_t *op = &ctx->ops[i];
    const espnn_op_family_t *fam = espnn_op_family(rec->opcode);
    op->opcode = (uint8_t)rec->opcode;
    op->kernel = p->kernel;
    op->n_inputs = (uint8_t)rec->n_inputs;
    op->reserved0 = 0;
    op->output = rec->ids[rec->n_inputs];
    op->reserved1 = 0;
    op->scratch_offset = rec->scratch_offset;
    op->scratch_size = rec->scratch_size;
    op->data_at = ctx->cursor;
    uint8_t *d = ctx->state + ctx->cursor;
    const uint32_t ids_bytes = espnn_align_up(2u * rec->n_inputs, 4u);
    memset(d, 0, ids_bytes);
    memcpy(d, rec->ids, 2u * rec->n_inputs); /* host order; read back as uint16_t */
    memcpy(d + ids_bytes, p->data, fam->state_bytes);
    ctx->cursor += ids_bytes + fam->state_bytes;
}

static void set_bound(espnn_io_rt_t *io, void *ptr)
{
    memcpy(io->bound, &ptr, sizeof ptr);
}

static void build_state(const uint8_t *buf, const espnn_hdr_t *h, const uint8_t *consts,
                        uint8_t *state, uint32_t total)
{
    struct espnn_state *s = (struct espnn_state *)(void *)state;
    s->magic = ESPNN_STATE_MAGIC;
    s->total_bytes = total;
    s->n_tensors = h->n_tensors;
    s->n_records = espnn_state_records(buf, h);
    s->n_ops = h->n_ops;
    s->n_inputs = h->n_inputs;
    s->n_outputs = h->n_outputs;
    s->tensors_at = ESPNN_STATE_HEADER_BYTES;
    s->consts_at = s->tensors_at + ESPNN_STATE_TENSOR_BYTES * s->n_records;
    s->io_at = s->consts_at + ESPNN_STATE_CONST_BYTES * (h->n_tensors - s->n_records);
    s->ops_at = s->io_at + ESPNN_STATE_IO_BYTES * (h->n_inputs + h->n_outputs);
    s->data_at = s->ops_at + ESPNN_STATE_OP_BYTES * h->n_ops;

    espnn_tensor_rt_t *tensors = (espnn_tensor_rt_t *)(void *)(state + s->tensors_at);
    uint32_t *const_offsets = (uint32_t *)(void *)(state + s->consts_at);
    for (uint32_t i = 0; i < h->n_tensors; i++) {
        espnn_tview_t t;
        espnn_tensor_decode(buf, h, i, &t);
        if (i >= s->n_records) { /* a constant (espnn_state_records): its address is all eval needs */
            const_offsets[i - s->n_records] = t.offset;
            continue;
        }
        tensors[i].offset = t.offset;
        tensors[i].nbytes = t.nbytes;
        for (int k = 0; k < ESPNN_MAX_RANK; k++) {
            tensors[i].dims[k] = (uint16_t)t.dims[k];
        }
        tensors[i].dtype = t.dtype;
        tensors[i].rank = t.rank;
        tensors[i].storage = t.storage;
        tensors[i].flags = t.flags;
    }
    espnn_io_rt_t *io = (espnn_io_rt_t *)(void *)(state + s->io_at);
    for (uint32_t k = 0; k < h->n_inputs + h->n_outputs; k++) {
        espnn_tview_t t;
        const uint16_t tid = espnn_rd_u16(buf + h->io_offset + 2 * k);
        espnn_tensor_decode(buf, h, tid, &t);
        memset(&io[k], 0, sizeof io[k]); /* no buffer bound yet */
        io[k].tensor = tid;
        io[k].home = h->homes_offset != 0 ? espnn_rd_u32(buf + h->homes_offset + 4 * k) : ESPNN_NO_HOME;
        io[k].scale = t.scale;
        io[k].zero_point = t.zero_point;
    }
    bind_ctx_t ctx = {state, (espnn_op_rt_t *)(void *)(state + s->ops_at), s->data_at};
    (void)espnn_validate_ops(buf, h, consts, NULL, bind_op, &ctx); /* validated: cannot fail */
}

espnn_status_t espnn_init(espnn_model_t *model, const void *payload, size_t len,
                          const void *consts, void *state, size_t state_bytes, void *arena,
                          size_t arena_bytes, espnn_error_t *err)
{
    clear_error(err);
    if (model == NULL || payload == NULL || state == NULL) {
        return arg_fail(err, ESPNN_ERR_ARGUMENT,
                        model == NULL ? "model" : (payload == NULL ? "payload" : "state"), 0, 0);
    }
    memset(model, 0, sizeof *model);
    const uint8_t *buf = (const uint8_t *)payload;
    espnn_hdr_t hdr;
    espnn_status_t st = espnn_parse_structure(buf, len, &hdr, err);
    if (st != ESPNN_OK) {
        return st;
    }
    const uint8_t *cbase = consts != NULL ? (const uint8_t *)consts : buf + hdr.const_offset;
    /* Multi-byte constants are read with typed loads by the kernels: check the real address
     * (a payload copied to an odd address would otherwise trap on Xtensa), before the ops'
     * prepare, whose scratch checks depend on where the filters really are. */
    for (uint32_t i = 0; i < hdr.n_tensors; i++) {
        espnn_tview_t t;
        espnn_tensor_decode(buf, &hdr, i, &t);
        if (t.storage == ESPNN_STORAGE_CONST && t.esize > 1 &&
            (uintptr_t)(cbase + t.offset) % t.esize != 0) {
            return espnn_fail(err, ESPNN_ERR_ALIGNMENT, "offset", -1, -1, (int32_t)i,
                              (int64_t)((uintptr_t)(cbase + t.offset) % t.esize), t.esize);
        }
    }
    st = espnn_validate_ops(buf, &hdr, cbase, err, NULL, NULL);
    if (st != ESPNN_OK) {
        return st;
    }
    espnn_info_t info;
    fill_info(buf, &hdr, &info);
    if (state_bytes < info.state_bytes) {
        return arg_fail(err, ESPNN_ERR_MEMORY, "state_bytes", (int64_t)state_bytes,
                        info.state_bytes);
    }
    if ((uintptr_t)state % 4u != 0) {
        return arg_fail(err, ESPNN_ERR_ALIGNMENT, "state", (int64_t)((uintptr_t)state % 4u), 4);
    }
    if (arena_bytes < info.arena_bytes) {
        return arg_fail(err, ESPNN_ERR_MEMORY, "arena_bytes", (int64_t)arena_bytes,
                        info.arena_bytes);
    }
    if (arena == NULL && info.arena_bytes != 0) {
        return arg_fail(err, ESPNN_ERR_ARGUMENT, "arena", 0, info.arena_bytes);
    }
    if ((uintptr_t)arena % ESPNN_ARENA_ALIGN != 0) {
        return arg_fail(err, ESPNN_ERR_ALIGNMENT, "arena",
                        (int64_t)((uintptr_t)arena % ESPNN_ARENA_ALIGN), ESPNN_ARENA_ALIGN);
    }
    build_state(buf, &hdr, cbase, (uint8_t *)state, info.state_bytes);
    model->consts = cbase;
    model->arena = (uint8_t *)arena;
    model->state = (struct espnn_state *)state;
    model->info = info;
    /* an io tensor with a home in the arena (format 2.4) is bound there until the caller
     * binds a buffer of its own */
    espnn_io_rt_t *io = (espnn_io_rt_t *)(void *)((uint8_t *)state + model->state->io_at);
    for (uint32_t k = 0; k < hdr.n_inputs + hdr.n_outputs; k++) {
        if (io[k].home != ESPNN_NO_HOME) {
            set_bound(&io[k], model->arena + io[k].home);
        }
    }
    model->ready = 1;
    return ESPNN_OK;
}

/* ---- io ------------------------------------------------------------------------------- */

static void *bound(const espnn_io_rt_t *io)
{
    void *ptr;
    memcpy(&ptr, io->bound, sizeof ptr);
    return ptr;
}

static const uint8_t *state_base(const espnn_model_t *m)
{
    return (const uint8_t *)m->state;
}

static const espnn_tensor_rt_t *state_tensors(const espnn_model_t *m)
{
    return (const espnn_tensor_rt_t *)(const void *)(state_base(m) + m->state->tensors_at);
}

static espnn_io_rt_t *state_io_table(const espnn_model_t *m)
{
    return (espnn_io_rt_t *)(void *)((uint8_t *)m->state + m->state->io_at);
}

static espnn_io_rt_t *state_io(const espnn_model_t *m, int is_output, uint32_t index)
{
    return &state_io_table(m)[(is_output ? m->state->n_inputs : 0u) + index];
}

static bool io_index_ok(const espnn_model_t *m, int is_output, uint32_t index)
{
    return index < (is_output ? m->state->n_outputs : m->state->n_inputs);
}

espnn_status_t espnn_io_info(const espnn_model_t *model, int is_output, uint32_t index,
                             espnn_io_info_t *out)
{
    if (model == NULL || out == NULL) {
        return ESPNN_ERR_ARGUMENT;
    }
    if (!model->ready) {
        return ESPNN_ERR_STATE;
    }
    if (!io_index_ok(model, is_output, index)) {
        return ESPNN_ERR_ARGUMENT;
    }
    const espnn_io_rt_t *io = state_io(model, is_output, index);
    const espnn_tensor_rt_t *t = &state_tensors(model)[io->tensor];
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (int k = 0; k < ESPNN_MAX_RANK; k++) {
        out->dims[k] = t->dims[k];
    }
    out->nbytes = t->nbytes;
    out->scale = io->scale;
    out->zero_point = io->zero_point;
    out->arena_home = io->home;
    return ESPNN_OK;
}

espnn_status_t espnn_set_io(espnn_model_t *model, int is_output, uint32_t index, void *data,
                            size_t nbytes)
{
    if (model == NULL) {
        return ESPNN_ERR_ARGUMENT;
    }
    if (!model->ready) {
        return ESPNN_ERR_STATE;
    }
    if (!io_index_ok(model, is_output, index)) {
        return ESPNN_ERR_ARGUMENT;
    }
    espnn_io_rt_t *io = state_io(model, is_output, index);
    const espnn_tensor_rt_t *t = &state_tensors(model)[io->tensor];
    if (data == NULL) {
        /* NULL binds the tensor's home in the arena, where it has one */
        if (io->home == ESPNN_NO_HOME) {
            return ESPNN_ERR_ARGUMENT;
        }
        data = model->arena + io->home;
    }
    if (nbytes != t->nbytes) {
        return ESPNN_ERR_IO;
    }
    if ((uintptr_t)data % espnn_dtype_size(t->dtype) != 0) {
        return ESPNN_ERR_ALIGNMENT; /* float32 buffers are accessed as floats */
    }
    set_bound(io, data);
    return ESPNN_OK;
}

/* ---- invoke --------------------------------------------------------------------------- */

static void *tensor_ptr(const espnn_model_t *m, const espnn_tensor_rt_t *tensors,
                        const espnn_io_rt_t *io, uint32_t id)
{
    const struct espnn_state *s = m->state;
    if (id >= s->n_records) { /* a constant past the last record: its offset alone */
        const uint32_t *const_offsets = (const uint32_t *)(const void *)((const uint8_t *)s + s->consts_at);
        return (void *)(uintptr_t)(m->consts + const_offsets[id - s->n_records]);
    }
    const espnn_tensor_rt_t *t = &tensors[id];
    switch (t->storage) {
    case ESPNN_STORAGE_ARENA:
        return m->arena + t->offset;
    case ESPNN_STORAGE_CONST:
        return (void *)(uintptr_t)(m->consts + t->offset);
    case ESPNN_STORAGE_INPUT:
        return bound(&io[t->offset]);
    default:
        return bound(&io[s->n_inputs + t->offset]);
    }
}

/* The op loop.  op_ticks exists only in profiling builds: without ESPNN_PROFILE the loop holds
 * no clock read and no branch for it (what "no cost when off" means, docs/engine.md). */
#if ESPNN_PROFILE
static espnn_status_t run_ops(espnn_model_t *model, uint32_t *op_ticks, espnn_error_t *err)
#else
static espnn_status_t run_ops(espnn_model_t *model, espnn_error_t *err)
#endif
{
    clear_error(err);
    if (model == NULL) {
        return arg_fail(err, ESPNN_ERR_ARGUMENT, "model", 0, 0);
    }
    if (!model->ready || model->state == NULL || model->state->magic != ESPNN_STATE_MAGIC) {
        return arg_fail(err, ESPNN_ERR_STATE, "model", 0, 0);
    }
    const struct espnn_state *s = model->state;
    const espnn_io_rt_t *io = state_io_table(model);
    for (uint32_t k = 0; k < s->n_inputs + s->n_outputs; k++) {
        if (bound(&io[k]) == NULL) {
            const bool is_output = k >= s->n_inputs;
            return arg_fail(err, ESPNN_ERR_IO, is_output ? "outputs" : "inputs",
                            is_output ? k - s->n_inputs : k, is_output ? s->n_outputs : s->n_inputs);
        }
    }
    const uint8_t *base = state_base(model);
    const espnn_tensor_rt_t *tensors = state_tensors(model);
    const espnn_op_rt_t *ops = (const espnn_op_rt_t *)(const void *)(base + s->ops_at);
    espnn_exec_t x;
    x.tensors = tensors;
#if ESPNN_PROFILE
    /* one clock read per op: each op's time runs from the end of the previous one, so the
     * binding of its tensors is counted with it and the ops' times add up to the loop's */
    uint32_t t0 = espnn_clock_now();
#endif
    for (uint32_t i = 0; i < s->n_ops; i++) {
        const espnn_op_rt_t *op = &ops[i];
        const uint16_t *ids = (const uint16_t *)(const void *)(base + op->data_at);
        x.op = op;
        x.ids = ids;
        x.data = base + op->data_at + espnn_align_up(2u * op->n_inputs, 4u);
        for (uint32_t k = 0; k < op->n_inputs; k++) {
            x.in[k] = ids[k] == ESPNN_NO_TENSOR ? NULL : tensor_ptr(model, tensors, io, ids[k]);
        }
        x.out = tensor_ptr(model, tensors, io, op->output);
#ifdef ESPNN_HOST_SCRATCH_GUARD
        /* host test mode: the op's scratch is a side buffer with guard bytes after it (NULL
         * without scratch, as below) */
        x.scratch = hn_guard_scratch(i, op->scratch_size);
        espnn_op_family(op->opcode)->eval(&x);
        hn_guard_check();
#else
        x.scratch = op->scratch_size != 0 ? model->arena + op->scratch_offset : NULL;
        espnn_op_family(op->opcode)->eval(&x);
#endif
#if ESPNN_PROFILE
        if (op_ticks != NULL) {
            const uint32_t t1 = espnn_clock_now();
            op_ticks[i] = t1 - t0;
            t0 = t1;
        }
#endif
    }
    return ESPNN_OK;
}

#if ESPNN_PROFILE
espnn_status_t espnn_invoke(espnn_model_t *model, espnn_error_t *err)
{
    return run_ops(model, NULL, err);
}

espnn_status_t espnn_invoke_profiled(espnn_model_t *model, uint32_t *op_ticks, espnn_error_t *err)
{
    if (op_ticks == NULL) {
        clear_error(err);
        return arg_fail(err, ESPNN_ERR_ARGUMENT, "op_ticks", 0, 0);
    }
    return run_ops(model, op_ticks, err);
}

uint32_t espnn_profile_now(void)
{
    return espnn_clock_now();
}

const char *espnn_profile_unit(void)
{
    return ESPNN_CLOCK_UNIT;
}
#else
espnn_status_t espnn_invoke(espnn_model_t *model, espnn_error_t *err)
{
    return run_ops(model, err);
}
#endif

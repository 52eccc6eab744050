// two_models: hello_world's trend model and a loudness model in one firmware, run one after the
// other on the same inputs.  They never run at the same time, so they share one delegate arena
// (custom_executorch_shared_arena = yes): ESPNN_SHARED_ARENA_BYTES, the larger model's, instead
// of one arena each.  The inputs are TEST_INPUTS of model/level.py (and hello_world's mlp.py).
#include <Arduino.h>
#include <executorch_espnn.h>

#include "espnn_models.h"  // generated: model_trend_pte.h, model_level_pte.h, the shared size

static const char *const kTrend[] = {"falling", "flat", "rising"};
static const char *const kLevel[] = {"quiet", "loud"};
static const struct {
    const char *name;
    float x[4];
} kInputs[] = {
    {"rising ramp", {-1.0f, -1.0f / 3.0f, 1.0f / 3.0f, 1.0f}},
    {"flat line", {0.2f, 0.2f, 0.2f, 0.2f}},
    {"falling ramp", {0.9f, 0.3f, -0.3f, -0.9f}},
};

static EspnnSharedArena arena(ESPNN_SHARED_ARENA_BYTES);
EspnnModel trend(model_trend_pte, arena);
EspnnModel level(model_level_pte, arena);

// Feeds x to m, runs it, returns its best class and prints its scores; -1 on failure.
static int classify(EspnnModel &m, const float *x, const char *const *labels, size_t n_labels) {
    float *in = m.input<float>(0);  // write the input before every invoke()
    for (int i = 0; i < 4; ++i) in[i] = x[i];
    if (!m.invoke()) {
        Serial.println(m.error());
        return -1;
    }
    const float *y = m.output<float>(0);
    size_t best = 0;
    for (size_t i = 1; i < n_labels; ++i)
        if (y[i] > y[best]) best = i;
    Serial.printf(" %s (scores", labels[best]);
    for (size_t i = 0; i < n_labels; ++i) Serial.printf(" %.4f", y[i]);
    Serial.printf(")");
    return static_cast<int>(best);
}

void setup() {
    Serial.begin(115200);
    if (!trend.begin() || !level.begin()) {
        Serial.println(trend.error()[0] ? trend.error() : level.error());
        return;
    }
    Serial.printf("shared arena: %u bytes for both models\n", (unsigned)arena.size());
}

void loop() {
    if (!trend.ready() || !level.ready()) return;
    for (const auto &in : kInputs) {
        Serial.printf("%s: trend", in.name);
        if (classify(trend, in.x, kTrend, 3) < 0) return;
        Serial.printf(", level");
        if (classify(level, in.x, kLevel, 2) < 0) return;
        Serial.printf("\n");
    }
    delay(1000);
}

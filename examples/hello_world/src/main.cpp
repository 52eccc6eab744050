// hello_world: a tiny MLP tells whether four samples are falling, flat or rising.
// The three inputs below are TEST_INPUTS of model/mlp.py.
#include <Arduino.h>
#include <executorch_espnn.h>

#include "model_pte.h"  // generated at build time from model/mlp.py

static const char *const kLabels[] = {"falling", "flat", "rising"};
static const struct {
    const char *name;
    float x[4];
} kInputs[] = {
    {"rising ramp", {-1.0f, -1.0f / 3.0f, 1.0f / 3.0f, 1.0f}},
    {"flat line", {0.2f, 0.2f, 0.2f, 0.2f}},
    {"falling ramp", {0.9f, 0.3f, -0.3f, -0.9f}},
};

EspnnModel model(model_pte);

void setup() {
    Serial.begin(115200);
    if (!model.begin()) {
        Serial.println(model.error());
        return;
    }
    char line[192];  // custom_executorch_selftest: bit-exact with what the build computed?
    model.self_test(line, sizeof line);
    Serial.println(line);
}

void loop() {
    if (!model.ready()) return;
    for (const auto &in : kInputs) {
        float *x = model.input<float>(0);  // write the input before every invoke()
        for (int i = 0; i < 4; ++i) x[i] = in.x[i];
        if (!model.invoke()) {
            Serial.println(model.error());
            return;
        }
        const float *y = model.output<float>(0);
        int best = 0;
        for (int i = 1; i < 3; ++i)
            if (y[i] > y[best]) best = i;
        Serial.printf("%s: %s (scores %.4f %.4f %.4f, %u us)\n", in.name, kLabels[best], y[0], y[1],
                      y[2], (unsigned)model.last_latency_us());
    }
    delay(1000);
}

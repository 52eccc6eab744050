// keyword_spotting: a DS-CNN over a synthetic 49x10 MFCC-like frame; prints the top class.
#include <Arduino.h>
#include <executorch_espnn.h>
#include <math.h>

#include "model_pte.h"  // generated at build time from model/ds_cnn.py

static const char *const kLabels[] = {"silence", "unknown", "yes", "no", "up", "down", "left", "right"};
EspnnModel model(model_pte);

void setup() {
    Serial.begin(115200);
    if (!model.begin()) Serial.println(model.error());
}

void loop() {
    if (!model.ready()) return;
    float *x = model.input<float>(0);
    for (int t = 0; t < 49; ++t)
        for (int f = 0; f < 10; ++f) x[t * 10 + f] = sinf(0.3f * t + 0.7f * f);  // synthetic_mfcc()
    if (!model.invoke()) {
        Serial.println(model.error());
        return;
    }
    const float *y = model.output<float>(0);
    size_t n = model.output_numel(0), best = 0;
    for (size_t i = 1; i < n; ++i)
        if (y[i] > y[best]) best = i;
    Serial.printf("top class: %u (%s) score %.4f, %u us\n", (unsigned)best,
                  best < sizeof kLabels / sizeof kLabels[0] ? kLabels[best] : "?", y[best],
                  (unsigned)model.last_latency_us());
    delay(1000);
}

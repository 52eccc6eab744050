// hello_world: run a tiny MLP once per loop() and print its three outputs.
#include <Arduino.h>
#include <executorch_espnn.h>

#include "model_pte.h"  // generated at build time from model/mlp.py

EspnnModel model(model_pte);

void setup() {
    Serial.begin(115200);
    if (!model.begin()) Serial.println(model.error());
}

void loop() {
    if (!model.ready()) return;
    float *x = model.input<float>(0);
    for (int i = 0; i < 4; ++i) x[i] = -1.0f + 2.0f * i / 3.0f;  // the example input
    if (!model.invoke()) {
        Serial.println(model.error());
        return;
    }
    const float *y = model.output<float>(0);
    Serial.printf("output: %.4f %.4f %.4f (%u us)\n", y[0], y[1], y[2],
                  (unsigned)model.last_latency_us());
    delay(1000);
}

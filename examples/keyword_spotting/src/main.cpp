// keyword_spotting: a DS-CNN over synthetic 49x10 MFCC-like frames; prints the top class.
// keyword_frame() (include/keywords.h) is model/ds_cnn.py's, so the spotter should name the
// keyword it was fed.
#include <Arduino.h>
#include <executorch_espnn.h>

#include "keywords.h"
#include "model_pte.h"  // generated at build time from model/ds_cnn.py

static const int kTestLabels[] = {2, 5, 6, 0};  // yes, down, left, silence (TEST_LABELS)

EspnnModel model(model_pte);

void setup() {
    Serial.begin(115200);
    if (!model.begin()) {
        Serial.println(model.error());
        return;
    }
    char line[192];  // the embedded frames, bit-exact with what the build computed?
    model.self_test(line, sizeof line);
    Serial.println(line);
}

void loop() {
    if (!model.ready()) return;
    for (int label : kTestLabels) {
        keyword_frame(label, model.input<float>(0));  // write the input before every invoke()
        if (!model.invoke()) {
            Serial.println(model.error());
            return;
        }
        const float *y = model.output<float>(0);
        int best = top_class(y, kClasses);
        int second = best == 0 ? 1 : 0;
        for (int i = 0; i < kClasses; ++i)
            if (i != best && y[i] > y[second]) second = i;
        Serial.printf("heard '%s': top class %d (%s) score %.4f, next %s %.4f, %u us\n", kLabels[label],
                      best, kLabels[best], y[best], kLabels[second], y[second],
                      (unsigned)model.last_latency_us());
        Serial.print("  scores:");
        for (int i = 0; i < kClasses; ++i) Serial.printf(" %.4f", y[i]);
        Serial.println();
    }
    delay(1000);
}

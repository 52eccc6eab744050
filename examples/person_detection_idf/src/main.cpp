// person_detection_idf: an ESP-IDF app running a MobileNet-style person detector on a synthetic
// 96x96 image and logging the person score.
#include <executorch_espnn.h>
#include <math.h>
#include <stdio.h>

#include "esp_log.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "model_pte.h"  // generated at build time from model/mobilenet.py

static const char *TAG = "person_detection";

extern "C" void app_main(void) {
    static EspnnModel model(model_pte);
    if (!model.begin()) {
        ESP_LOGE(TAG, "%s", model.error());
        return;
    }
    float *img = model.input<float>(0);
    for (int y = 0; y < 96; ++y) {
        for (int x = 0; x < 96; ++x) {  // synthetic_image(): a bright disc on a gradient
            float disc = ((x - 48) * (x - 48) + (y - 40) * (y - 40) < 400) ? 1.0f : 0.0f;
            float v = 0.6f * disc + x / 96.0f * 0.4f - 0.5f;
            v = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
            img[y * 96 + x] = v * 2.0f - 0.2f;
        }
    }
    if (!model.invoke()) {
        ESP_LOGE(TAG, "%s", model.error());
        return;
    }
    const float *score = model.output<float>(0);
    ESP_LOGI(TAG, "person score %.4f, no-person score %.4f -> %s (%u us)", score[1], score[0],
             score[1] > score[0] ? "person" : "no person", (unsigned)model.last_latency_us());
}

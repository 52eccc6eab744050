// person_detection_idf: an ESP-IDF app running a MobileNet-style person detector on two
// synthetic 96x96 scenes (scene() of model/mobilenet.py: with and without a person).
#include <executorch_espnn.h>
#include <stdio.h>

#include "esp_log.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "model_pte.h"  // generated at build time from model/mobilenet.py

static const char *TAG = "person_detection";
static const int kSize = 96;

// A gradient background; with a person, a head above a body, brighter by 0.9.
static void scene(bool person, float *img) {
    const float cx = 48.0f, cy = 52.0f;
    for (int y = 0; y < kSize; ++y) {
        for (int x = 0; x < kSize; ++x) {
            float v = -0.4f + 0.3f * (x - 48.0f) / 96.0f;
            float hx = x - cx, hy = y - (cy - 26.0f), bx = (x - cx) / 14.0f, by = (y - cy) / 22.0f;
            if (person && (hx * hx + hy * hy < 81.0f || bx * bx + by * by < 1.0f)) v += 0.9f;
            img[y * kSize + x] = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
        }
    }
}

extern "C" void app_main(void) {
    static EspnnModel model(model_pte);
    if (!model.begin()) {
        ESP_LOGE(TAG, "%s", model.error());
        return;
    }
    static char line[192];  // custom_executorch_selftest: bit-exact with what the build computed?
    if (model.self_test(line, sizeof line)) {
        ESP_LOGI(TAG, "%s", line);
    } else {
        ESP_LOGE(TAG, "%s", line);
    }
    static const bool kScenes[] = {true, false};  // TEST_SCENES of model/mobilenet.py
    for (bool person : kScenes) {
        scene(person, model.input<float>(0));  // write the input before every invoke()
        if (!model.invoke()) {
            ESP_LOGE(TAG, "%s", model.error());
            return;
        }
        const float *score = model.output<float>(0);
        ESP_LOGI(TAG, "scene %s a person: person score %.4f, no-person score %.4f -> %s (%u us)",
                 person ? "with" : "without", score[1], score[0],
                 score[1] > score[0] ? "person" : "no person", (unsigned)model.last_latency_us());
        vTaskDelay(pdMS_TO_TICKS(10));
    }
}

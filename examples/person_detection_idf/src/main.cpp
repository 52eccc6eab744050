// person_detection_idf: an ESP-IDF app running a MobileNet-style person detector on two
// synthetic 96x96 camera frames (scene() of model/mobilenet.py: with and without a person).
//
// custom_executorch_io = int8 (platformio.ini): the program takes the int8 values of its first
// layer's input and returns the int8 scores, so ExecuTorch plans 9 KB of input instead of the
// 36 KB a float frame needs, and the delegate reads the frame where it is (a grayscale input,
// C == 1, has the same bytes in NCHW and NHWC).  A camera delivers bytes: one 256-entry table
// maps each byte to the model's int8 value, written straight into input<int8_t>(0).
#include <executorch_espnn.h>
#include <espnn_mem.h>
#include <math.h>
#include <stdio.h>

#include "esp_log.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "model_pte.h"  // generated at build time from model/mobilenet.py

static const char *TAG = "person_detection";
static const int kSize = 96;

// The camera: an 8-bit grayscale frame (0 black ... 255 white) of a gradient background; with
// a person, a head above a body, brighter by 0.9 (the model sees pixel p as p / 127.5 - 1).
static void camera_frame(bool person, uint8_t *gray) {
    const float cx = 48.0f, cy = 52.0f;
    for (int y = 0; y < kSize; ++y) {
        for (int x = 0; x < kSize; ++x) {
            float v = -0.4f + 0.3f * (x - 48.0f) / 96.0f;
            float hx = x - cx, hy = y - (cy - 26.0f), bx = (x - cx) / 14.0f, by = (y - cy) / 22.0f;
            if (person && (hx * hx + hy * hy < 81.0f || bx * bx + by * by < 1.0f)) v += 0.9f;
            v = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
            gray[y * kSize + x] = (uint8_t)nearbyintf((v + 1.0f) * 127.5f);
        }
    }
}

// Each camera byte as the program's int8 input: p / 127.5 - 1 quantized with the input's scale
// and zero point from model_pte.h, rounding as ExecuTorch's quantize_per_tensor does.
static void byte_table(const espnn_pte_tensor_t &in, int8_t table[256]) {
    const float inv = 1.0f / in.scale;
    for (int b = 0; b < 256; ++b) {
        const int32_t q = (int32_t)nearbyintf(((float)b / 127.5f - 1.0f) * inv) + in.zero_point;
        table[b] = (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
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
    static int8_t table[256];
    byte_table(*model.input_info(0), table);
    const espnn_pte_tensor_t &out = *model.output_info(0);
    static uint8_t frame[kSize * kSize];
    static const bool kScenes[] = {true, false};  // TEST_SCENES of model/mobilenet.py
    for (bool person : kScenes) {
        camera_frame(person, frame);
        const size_t in_use = espnn_mem_internal_in_use();
        int8_t *input = model.input<int8_t>(0);  // the program's own input storage: no copy
        if (input == nullptr) {
            ESP_LOGE(TAG, "%s", model.error());
            return;
        }
        for (int i = 0; i < kSize * kSize; ++i) {  // write the input before every invoke()
            input[i] = table[frame[i]];
        }
        if (!model.invoke()) {
            ESP_LOGE(TAG, "%s", model.error());
            return;
        }
        const int8_t *q = model.output<int8_t>(0);
        if (espnn_mem_internal_in_use() != in_use) {
            ESP_LOGE(TAG, "input<int8_t>()/output<int8_t>() allocated a view buffer");
            return;
        }
        float score[2];
        for (int k = 0; k < 2; ++k) {  // the scores, dequantized with the output's scale and zero point
            score[k] = (float)((int32_t)q[k] - out.zero_point) * out.scale;
        }
        ESP_LOGI(TAG, "scene %s a person: person score %.4f, no-person score %.4f -> %s (%u us)",
                 person ? "with" : "without", score[1], score[0],
                 score[1] > score[0] ? "person" : "no person", (unsigned)model.last_latency_us());
        vTaskDelay(pdMS_TO_TICKS(10));
    }
}

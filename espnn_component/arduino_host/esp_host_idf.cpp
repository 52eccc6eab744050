/* Host implementations behind esp_timer.h and freertos/task.h. */
#include <chrono>
#include <thread>

#include "esp_timer.h"
#include "freertos/task.h"

extern "C" int64_t esp_timer_get_time(void) {
    using Clock = std::chrono::steady_clock;
    static const Clock::time_point t0 = Clock::now();
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

extern "C" void vTaskDelay(TickType_t ticks) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ticks * portTICK_PERIOD_MS));
}

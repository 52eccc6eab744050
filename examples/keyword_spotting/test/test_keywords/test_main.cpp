// On-target tests of the keyword spotter (`pio test -e host`, or on a board): the model loads
// within the pools the generated header sizes, computes bit for bit what the host predicted
// for the embedded self-test frames (custom_executorch_selftest), and names every keyword it
// is fed.
// Lines "PASS <name>" / "FAIL <name>: <why>" and a final "END" are read by
// test/test_custom_runner.py.
#include <Arduino.h>
#include <executorch_espnn.h>

#include "keywords.h"
#include "model_pte.h"

static EspnnModel model(model_pte);

static void report(const char *name, bool ok, const char *why = "") {
    if (ok)
        Serial.printf("PASS %s\n", name);
    else
        Serial.printf("FAIL %s: %s\n", name, why);
}

void setup() {
    Serial.begin(115200);
    report("begin", model.begin(), model.error());
    report("io_shapes", model.input_numel(0) == (size_t)(kFrames * kCoeffs) &&
                            model.output_numel(0) == (size_t)kClasses,
           "unexpected input/output sizes");
    if (!model.ready()) {
        Serial.println("END");
        return;
    }
    char line[192];
    const bool exact = model.self_test(line, sizeof line);
    Serial.println(line);
    report("selftest", exact, line);
    char name[32];
    for (const auto &p : kPatterns) {
        keyword_frame(p.label, model.input<float>(0));
        bool ran = model.invoke();
        int got = ran ? top_class(model.output<float>(0), kClasses) : -1;
        snprintf(name, sizeof name, "keyword_%s", kLabels[p.label]);
        report(name, ran && got == p.label, ran ? "another class won" : model.error());
    }
    keyword_frame(0, model.input<float>(0));
    bool ran = model.invoke();
    report("silence", ran && top_class(model.output<float>(0), kClasses) == 0,
           ran ? "another class won" : model.error());
    Serial.println("END");
}

void loop() {}

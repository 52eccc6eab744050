// The synthetic MFCC-like frames of model/ds_cnn.py (keyword_frame()), shared by the sketch
// and the on-target tests.
#pragma once

#include <math.h>

static const char *const kLabels[] = {"silence", "unknown", "yes", "no", "up", "down", "left", "right"};
static const int kClasses = sizeof kLabels / sizeof kLabels[0];
static const int kFrames = 49, kCoeffs = 10;

// label -> (cycles over the 49 frames, cepstral mode): PATTERNS of ds_cnn.py
static const struct {
    int label;
    float cycles;
    int mode;
} kPatterns[] = {{2, 1.0f, 1}, {3, 2.0f, 1}, {4, 1.0f, 3}, {5, 3.0f, 2}, {6, 2.0f, 4}, {7, 4.0f, 3}};

// A keyword's clean frame, 49 x 10 floats; silence (label 0) is all zeros.
static inline void keyword_frame(int label, float *x) {
    for (int i = 0; i < kFrames * kCoeffs; ++i) x[i] = 0.0f;
    for (const auto &p : kPatterns) {
        if (p.label != label) continue;
        for (int t = 0; t < kFrames; ++t)
            for (int f = 0; f < kCoeffs; ++f)
                x[t * kCoeffs + f] = 0.8f * sinf(2.0f * (float)M_PI * p.cycles * t / kFrames) *
                                     cosf((float)M_PI * p.mode * (f + 0.5f) / kCoeffs);
    }
}

// Index of the largest of n scores.
static inline int top_class(const float *y, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (y[i] > y[best]) best = i;
    return best;
}

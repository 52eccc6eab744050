/* Declarations only: ESP-NN's logistic kernel (never called by the engine) names expf and
 * roundf; a
 * program that calls it does not link. */
#ifndef EMU_S3_MATH_H
#define EMU_S3_MATH_H
float expf(float x);
float roundf(float x);
#endif

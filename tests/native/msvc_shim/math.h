/* Syntax-check shim of the UCRT <math.h> (see README.md): declarations only. */
#ifndef BK_MSVC_SHIM_MATH_H
#define BK_MSVC_SHIM_MATH_H
#define INFINITY ((float)(1e300 * 1e300))
#define HUGE_VAL ((double)INFINITY)
#define NAN (-(float)(INFINITY * 0.0F))
double log(double x);
double log2(double x);
double log1p(double x);
double exp(double x);
double expm1(double x);
double pow(double x, double y);
double sqrt(double x);
double ceil(double x);
double floor(double x);
double round(double x);
double fabs(double x);
double fmin(double x, double y);
double fmax(double x, double y);
double frexp(double x, int *e);
double ldexp(double x, int e);
double lgamma(double x);
#endif

/* Native check of emulated/xtensa_s3/softdouble.c and stack_libc.c's formatter against the host
 * FPU and C library (tests/hardening/test_esp32s3.py): random and special binary64 values
 * through every helper, bit for bit; random values through printf conversions, byte for byte. */
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
double emu_test___adddf3(double,double); double emu_test___subdf3(double,double); double emu_test___divdf3(double,double);
int emu_test___gtdf2(double,double); int emu_test___ltdf2(double,double); int emu_test___unorddf2(double,double);
double emu_test___extendsfdf2(float); double emu_test___floatsidf(int32_t); int32_t emu_test___fixdfsi(double);
double emu_test_nearbyint(double); float emu_test_nearbyintf(float);
static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void){ rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static uint64_t B(double d){uint64_t u; memcpy(&u,&d,8); return u;}
static double D(uint64_t u){double d; memcpy(&d,&u,8); return d;}
static int same(double a, double b){ return (isnan(a) && isnan(b)) || B(a)==B(b); }
static double pick(void){ uint64_t r = rnd(); switch (r % 6) { case 0: return D(rnd()); case 1: return D(rnd() & 0x800FFFFFFFFFFFFFull); case 2: return (double)(int32_t)rnd() / (double)(1 + (rnd() % 1000)); case 3: { double s[] = {0.0,-0.0,INFINITY,-INFINITY,NAN,0.5,1.5,2.5,-0.5,1e308,4.9e-324}; return s[rnd()%11]; } default: return D((rnd() & 0xBFFFFFFFFFFFFFFFull) | 0x3000000000000000ull); } }
int emu_test_snprintf(char *out, size_t size, const char *fmt, ...);
static long check_format(void)
{
    static const char *const ffmt[] = {"%.9g", "%g", "%e", "%f", "%.3f", "%12.4e", "%-10.2g|", "%+.0f", "%#g", "%.17g", "%G", "%E"};
    long bad = 0;
    char want[1200], got[1200];
    for (long i = 0; i < 200000; i++) {
        double d = pick();
        if (i % 3 == 0) { float f = (float)d; d = f; }
        const char *fmt = ffmt[rnd() % (sizeof ffmt / sizeof ffmt[0])];
        snprintf(want, sizeof want, fmt, d);
        emu_test_snprintf(got, sizeof got, fmt, d);
        if (strcmp(want, got) != 0) { if (bad++ < 5) printf("format %s of %a: got %s want %s\n", fmt, d, got, want); }
        const long long v = (long long)rnd();
        const int k = (int)rnd();
        snprintf(want, sizeof want, "%d|%5u|%-6x|%08X|%lld|%llu|%hhd|%zu|%.3s|%c|%%|%+d|% d|%#o|%p", k, (unsigned)k, (unsigned)k, (unsigned)k, v, (unsigned long long)v, (signed char)k, (size_t)(unsigned)k, "abcdef", 'q', k, k, (unsigned)k, (void *)(size_t)(unsigned)k);
        emu_test_snprintf(got, sizeof got, "%d|%5u|%-6x|%08X|%lld|%llu|%hhd|%zu|%.3s|%c|%%|%+d|% d|%#o|%p", k, (unsigned)k, (unsigned)k, (unsigned)k, v, (unsigned long long)v, (signed char)k, (size_t)(unsigned)k, "abcdef", 'q', k, k, (unsigned)k, (void *)(size_t)(unsigned)k);
        if (strcmp(want, got) != 0) { if (bad++ < 5) printf("format ints: got %s want %s\n", got, want); }
    }
    char small[8];
    const int n = emu_test_snprintf(small, sizeof small, "%s", "truncated text");
    if (n != 14 || strcmp(small, "truncat") != 0) { bad++; printf("truncation: %d %s\n", n, small); }
    return bad;
}

int main(void){ long bad=check_format();
 for (long i=0;i<2000000;i++){ double a=pick(), b=pick();
  if(!same(emu_test___adddf3(a,b),a+b)){ if(bad++<5) printf("add %a %a\n",a,b);} 
  if(!same(emu_test___subdf3(a,b),a-b)){ if(bad++<5) printf("sub %a %a\n",a,b);} 
  if(!same(emu_test___divdf3(a,b),a/b)){ if(bad++<5) printf("div %a %a got %a want %a\n",a,b,emu_test___divdf3(a,b),a/b);} 
  if((emu_test___gtdf2(a,b)>0)!=(a>b)) { if(bad++<5) printf("gt %a %a\n",a,b);} 
  if((emu_test___ltdf2(a,b)<0)!=(a<b)) { if(bad++<5) printf("lt %a %a\n",a,b);} 
  if(emu_test___unorddf2(a,b)!=(isnan(a)||isnan(b))) bad++;
  if(!same(emu_test_nearbyint(a),nearbyint(a))){ if(bad++<5) printf("nearbyint %a\n",a);} 
  float f; uint32_t fu=(uint32_t)rnd(); memcpy(&f,&fu,4); if (i&1) f = (float)a;
  if(!same(emu_test___extendsfdf2(f),(double)f)){ if(bad++<5) printf("ext %a\n",(double)f);} 
  float n1=emu_test_nearbyintf(f), n2=nearbyintf(f); if(!( (isnan(n1)&&isnan(n2)) || memcmp(&n1,&n2,4)==0)){ if(bad++<5) printf("nearbyintf %a\n",(double)f);} 
  int32_t k=(int32_t)rnd(); if(!same(emu_test___floatsidf(k),(double)k)) bad++;
  if(!isnan(a) && fabs(a) < 2147483647.0){ if(emu_test___fixdfsi(a)!=(int32_t)a){ if(bad++<5) printf("fix %a\n",a);} }
 }
 printf("bad=%ld\n",bad); return bad!=0; }


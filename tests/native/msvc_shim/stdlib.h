/* Syntax-check shim of the UCRT <stdlib.h> (see README.md): declarations only. */
#ifndef BK_MSVC_SHIM_STDLIB_H
#define BK_MSVC_SHIM_STDLIB_H
#include <stddef.h>
void *malloc(size_t n);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
char *getenv(const char *name);
void qsort(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *));
void abort(void);
int abs(int x);
long long llabs(long long x);
/* the byte swaps MSVC declares here, not in <intrin.h> */
unsigned short _byteswap_ushort(unsigned short x);
unsigned long _byteswap_ulong(unsigned long x);
unsigned __int64 _byteswap_uint64(unsigned __int64 x);
#endif

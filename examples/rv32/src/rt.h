/* Tiny runtime for the RV32IM examples: console output through the Linux write syscall (ecall a7 = 64) and a
   small integer-only printf of our own (%d %i %u %x %X %c %s %%, l/ll length, width, '-' and '0' flags). */
#ifndef RT_H
#define RT_H
#include <stddef.h>
#include <stdint.h>
long sys_write(int fd, const void *buf, size_t len);
void put_str(const char *s);
void put_hex(const uint8_t *bytes, size_t n);
int rt_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif

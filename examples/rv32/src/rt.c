#include "rt.h"
#include <stdarg.h>
#include <string.h>

long sys_write(int fd, const void *buf, size_t len) {
    register long a0 __asm__("a0") = fd;
    register long a1 __asm__("a1") = (long)buf;
    register long a2 __asm__("a2") = (long)len;
    register long a7 __asm__("a7") = 64;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
    return a0;
}

void put_str(const char *s) { sys_write(1, s, strlen(s)); }

void put_hex(const uint8_t *bytes, size_t n) {
    static const char digits[] = "0123456789abcdef";
    char buf[2];
    for (size_t i = 0; i < n; i++) {
        buf[0] = digits[bytes[i] >> 4];
        buf[1] = digits[bytes[i] & 15];
        sys_write(1, buf, 2);
    }
}

/* Output buffer: one write syscall per printf call. */
struct out { char buf[256]; size_t n; int total; };

static void out_c(struct out *o, char c) {
    if (o->n == sizeof o->buf) { sys_write(1, o->buf, o->n); o->n = 0; }
    o->buf[o->n++] = c;
    o->total++;
}

static void out_field(struct out *o, const char *s, size_t len, int width, int left, char pad) {
    int fill = width > (int)len ? width - (int)len : 0;
    if (!left && pad == '0' && (s[0] == '-') && len > 0) { out_c(o, '-'); s++; len--; }
    if (!left) while (fill--) out_c(o, pad);
    for (size_t i = 0; i < len; i++) out_c(o, s[i]);
    if (left) while (fill-- > 0) out_c(o, ' ');
}

static size_t fmt_u64(char *end, uint64_t v, unsigned base, int upper) {
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    do { *--end = digits[v % base]; v /= base; n++; } while (v);
    return n;
}

int rt_printf(const char *fmt, ...) {
    struct out o; o.n = 0; o.total = 0;
    va_list ap; va_start(ap, fmt);
    for (; *fmt; fmt++) {
        if (*fmt != '%') { out_c(&o, *fmt); continue; }
        fmt++;
        int left = 0; char pad = ' ';
        for (;; fmt++) {
            if (*fmt == '-') left = 1;
            else if (*fmt == '0') pad = '0';
            else break;
        }
        int width = 0;
        while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
        int lng = 0;
        while (*fmt == 'l') { lng++; fmt++; }
        char tmp[24]; char *end = tmp + sizeof tmp; size_t n;
        switch (*fmt) {
        case 'd': case 'i': {
            int64_t v = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
            uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
            n = fmt_u64(end, u, 10, 0);
            if (v < 0) { *(end - n - 1) = '-'; n++; }
            out_field(&o, end - n, n, width, left, pad);
            break;
        }
        case 'u': case 'x': case 'X': {
            uint64_t v = lng >= 2 ? va_arg(ap, unsigned long long) : lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
            n = fmt_u64(end, v, *fmt == 'u' ? 10 : 16, *fmt == 'X');
            out_field(&o, end - n, n, width, left, pad);
            break;
        }
        case 'c': tmp[0] = (char)va_arg(ap, int); out_field(&o, tmp, 1, width, left, ' '); break;
        case 's': { const char *s = va_arg(ap, const char *); out_field(&o, s, strlen(s), width, left, ' '); break; }
        case '%': out_c(&o, '%'); break;
        case '\0': fmt--; break;
        default: out_c(&o, '%'); out_c(&o, *fmt); break;
        }
    }
    va_end(ap);
    if (o.n) sys_write(1, o.buf, o.n);
    return o.total;
}

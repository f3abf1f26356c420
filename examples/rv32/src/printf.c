/* Integer printf of our own (rt.c): widths, flags, signs, 32- and 64-bit values. */
#include "rt.h"
#include <limits.h>
int main(void) {
    int n = 0;
    n += rt_printf("int: %d %d %d %d\n", 0, 42, -42, INT_MIN);
    n += rt_printf("max: %d %u %x %X\n", INT_MAX, UINT_MAX, 0xdeadbeefu, 0xcafebabeu);
    n += rt_printf("width: [%5d] [%-5d] [%05d] [%05d] [%8x] [%08x]\n", 42, 42, 42, -42, 0xbeefu, 0xbeefu);
    n += rt_printf("long long: %lld %lld %llu\n", (long long)LLONG_MIN, 1234567890123456789LL, (unsigned long long)ULLONG_MAX);
    n += rt_printf("chars: %c%c%c [%s] [%-6s] [%6s] 100%%\n", 'r', 'v', '3', "2im", "left", "right");
    rt_printf("characters printed: %d\n", n);
    return 0;
}

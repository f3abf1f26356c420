/* CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): bitwise and table-driven, cross-checked. */
#include "rt.h"
#include <string.h>

static uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & -(c & 1));
    }
    return ~c;
}

static uint32_t table[256];
static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
        table[i] = c;
    }
}
static uint32_t crc32_table(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    while (n--) c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static uint8_t buf[1024];

int main(void) {
    const char *check = "123456789";
    const char *fox = "The quick brown fox jumps over the lazy dog";
    make_table();
    uint32_t a = crc32_bitwise((const uint8_t *)check, 9);
    uint32_t b = crc32_table((const uint8_t *)check, 9);
    rt_printf("crc32(\"%s\") = %08x %08x\n", check, a, b);
    uint32_t c = crc32_table((const uint8_t *)fox, strlen(fox));
    rt_printf("crc32(fox) = %08x\n", c);
    for (int i = 0; i < 1024; i++) buf[i] = (uint8_t)(i * 7 + (i >> 3));
    uint32_t d = crc32_bitwise(buf, sizeof buf), e = crc32_table(buf, sizeof buf);
    rt_printf("crc32(1 KiB pattern) = %08x %08x\n", d, e);
    int ok = a == 0xcbf43926u && b == a && c == 0x414fa339u && d == e;
    rt_printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

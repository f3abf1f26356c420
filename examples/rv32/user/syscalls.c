/* The three host calls of the machine (Linux syscall ABI, as qemu-riscv32 user mode implements it) and
   picolibc's stdin/stdout/stderr on top of them. */
#include <stdio.h>
#include <unistd.h>

static long syscall3(long n, long a, long b, long c) {
    register long a0 asm("a0") = a;
    register long a1 asm("a1") = b;
    register long a2 asm("a2") = c;
    register long a7 asm("a7") = n;
    asm volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
    return a0;
}

ssize_t read(int fd, void *buf, size_t len) { return syscall3(63, fd, (long)buf, (long)len); }
ssize_t write(int fd, const void *buf, size_t len) { return syscall3(64, fd, (long)buf, (long)len); }
void _exit(int code) {
    for (;;)
        syscall3(93, code, 0, 0);
}

static int put_out(char c, FILE *f) {
    (void)f;
    return write(1, &c, 1) == 1 ? (unsigned char)c : EOF;
}
static int put_err(char c, FILE *f) {
    (void)f;
    return write(2, &c, 1) == 1 ? (unsigned char)c : EOF;
}
static int get_in(FILE *f) {
    (void)f;
    unsigned char c;
    return read(0, &c, 1) == 1 ? c : EOF;
}
static FILE in = FDEV_SETUP_STREAM(NULL, get_in, NULL, _FDEV_SETUP_READ);
static FILE out = FDEV_SETUP_STREAM(put_out, NULL, NULL, _FDEV_SETUP_WRITE);
static FILE err = FDEV_SETUP_STREAM(put_err, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &in;
FILE *const stdout = &out;
FILE *const stderr = &err;

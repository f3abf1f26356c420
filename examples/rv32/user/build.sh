#!/bin/sh
# Builds the user-style RV32 programs here as a user of Debian's cross toolchain would: the toolchain's
# default linker script (text at 0x10000 + headers, the entry point wherever _start lands), picolibc's libc,
# the Linux syscalls of syscalls.c, a _start (start.S) that leaves sp as the loader set it.
# Writes bin/*.elf and, from qemu-riscv32, expected/*.out and expected/*.status (factor reads factor.in).
#
# Needs: apt-get install -y gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-user
set -eu
cd "$(dirname "$0")"
CC=${CC:-riscv64-unknown-elf-gcc}
PICOLIBC=${PICOLIBC:-/usr/lib/picolibc/riscv64-unknown-elf}
CFLAGS="-march=rv32im_zba -mabi=ilp32 -Os -g0 -isystem $PICOLIBC/include -Wall -Wextra -Werror"
# Link for rv32im: Debian ships no rv32im_zba multilib of picolibc/libgcc.
LDFLAGS="-march=rv32im -mabi=ilp32 -nostdlib -L$PICOLIBC/lib/rv32im/ilp32 -Wl,--gc-sections -s"
mkdir -p bin expected
for p in hello factor; do
    $CC $CFLAGS $LDFLAGS start.S syscalls.c "$p.c" -lc -lgcc -o "bin/$p.elf"
    if command -v qemu-riscv32 >/dev/null; then
        input=/dev/null
        [ -f "$p.in" ] && input="$p.in"
        set +e
        qemu-riscv32 -cpu rv32,c=false,a=false,f=false,d=false,zba=true "bin/$p.elf" < "$input" > "expected/$p.out"
        echo $? > "expected/$p.status"
        set -e
    fi
    printf '%-8s %6d bytes, exit %s\n' "$p" "$(stat -c %s "bin/$p.elf")" "$(cat "expected/$p.status" 2>/dev/null || echo '?')"
done

#!/bin/sh
# Builds MicroPython for the RV32IM machine from MicroPython's source (its embed port, our mpconfigport.h and
# main.c, the syscalls and _start of examples/rv32/user), linked with the toolchain's default linker script:
# bin/micropython.elf. The script a run executes comes on standard input (`loom python`).
#
#   MICROPYTHON_SRC=../../../../shared/testdata/micropython/micropython-1c3c201.tar.gz ./build.sh
#
# Needs: apt-get install -y gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf python3 make. The MicroPython
# source (MIT, LICENSE.micropython here) is unpacked in a temporary folder and never enters the repository;
# the ELF built from it is committed, so users need no cross toolchain.
set -eu
cd "$(dirname "$0")"
HERE=$(pwd)
SRC=${MICROPYTHON_SRC:-../../../../shared/testdata/micropython/micropython-1c3c201.tar.gz}
CC=${CC:-riscv64-unknown-elf-gcc}
PICOLIBC=${PICOLIBC:-/usr/lib/picolibc/riscv64-unknown-elf}
[ -f "$SRC" ] || { echo "no MicroPython source at $SRC (set MICROPYTHON_SRC)" >&2; exit 1; }
SRC=$(cd "$(dirname "$SRC")" && pwd)/$(basename "$SRC")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar xzf "$SRC" -C "$WORK"
TOP="$WORK/micropython"
# 1. The embed package: MicroPython's core sources with the qstr and version headers generated for our config.
mkdir -p "$WORK/port"
cp mpconfigport.h "$WORK/port/"
printf 'MICROPYTHON_TOP = %s\ninclude $(MICROPYTHON_TOP)/ports/embed/embed.mk\n' "$TOP" > "$WORK/port/Makefile"
make -s -C "$WORK/port" >/dev/null
PKG="$WORK/port/micropython_embed"
# 2. Compile and link: RV32IM (+Zba in the core), picolibc, our start-up and syscalls. The embed port's
#    printf-based HAL is replaced by main.c's write(2) one.
rm -f "$PKG/port/mphalport.c"
CFLAGS="-march=rv32im_zba -mabi=ilp32 -Os -g0 -ffunction-sections -fdata-sections -isystem $PICOLIBC/include -I$WORK/port -I$PKG -I$PKG/port -Wall -Wno-unused"
LDFLAGS="-march=rv32im -mabi=ilp32 -nostdlib -Wl,--no-warn-rwx-segments -L$PICOLIBC/lib/rv32im/ilp32 -Wl,--gc-sections -s"
mkdir -p "$WORK/obj" bin
n=0
for c in "$PKG"/*/*.c "$PKG"/*/*/*.c main.c ../user/syscalls.c; do
    n=$((n + 1))
    $CC $CFLAGS -c "$c" -o "$WORK/obj/$n.o"
done
$CC $CFLAGS -c ../user/start.S -o "$WORK/obj/start.o"
$CC $LDFLAGS "$WORK/obj/start.o" "$WORK"/obj/[0-9]*.o -lc -lgcc -o bin/micropython.elf
riscv64-unknown-elf-size bin/micropython.elf 2>/dev/null || true
echo "bin/micropython.elf: $(stat -c %s bin/micropython.elf) bytes"

#!/bin/sh
# Builds the official riscv-tests ISA programs of rv32ui, rv32um and rv32uzba (all but fence_i, which needs
# Zifencei) as user-mode RV32 executables with our riscv_test.h, and records each one's exit status under
# qemu-riscv32 in expected.txt (0 = every test case passed; else the failing case's number).
#
#   RISCV_TESTS_SRC=../../../../shared/testdata/riscv/riscv-tests-src ./build.sh
#
# Needs: apt-get install -y gcc-riscv64-unknown-elf qemu-user. The sources stay outside the repository (BSD-3,
# LICENSE.riscv-tests here); the ELFs built from them are committed, so users need no cross toolchain.
set -eu
cd "$(dirname "$0")"
SRC=${RISCV_TESTS_SRC:-../../../../shared/testdata/riscv/riscv-tests-src}
CC=${CC:-riscv64-unknown-elf-gcc}
[ -d "$SRC/isa/rv32ui" ] || { echo "no riscv-tests sources at $SRC (set RISCV_TESTS_SRC)" >&2; exit 1; }
# gp is TESTNUM: no linker relaxation against it. The default linker script: text at 0x10000 + headers.
FLAGS="-march=rv32im_zba -mabi=ilp32 -nostdlib -nostartfiles -static -Wl,--no-relax -Wl,--no-warn-rwx-segments -I. -I$SRC/isa/macros/scalar"
mkdir -p bin
: > expected.txt
for suite in rv32ui rv32um rv32uzba; do
    for s in "$SRC/isa/$suite"/*.S; do
        t=$(basename "$s" .S)
        [ "$t" = fence_i ] && continue
        $CC $FLAGS -I"$SRC/isa/$suite" "$s" -o "bin/$suite-$t.elf"
        status=?
        if command -v qemu-riscv32 >/dev/null; then
            set +e
            qemu-riscv32 -cpu rv32,c=false,a=false,f=false,d=false,zba=true "bin/$suite-$t.elf" > /dev/null
            status=$?
            set -e
        fi
        echo "$suite-$t $status" >> expected.txt
    done
done
echo "$(wc -l < expected.txt) programs; exit status under qemu-riscv32 other than 0:"
grep -v ' 0$' expected.txt || echo "(none)"

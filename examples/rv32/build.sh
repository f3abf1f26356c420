#!/bin/sh
# Builds the RV32IM example programs into examples/rv32/bin/*.elf and records their expected console output and
# exit status, as produced by qemu-riscv32 (standard input: src/NAME.in where there is one), in examples/rv32/expected/.
#
# Needs Debian's cross toolchain:  apt-get install -y gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-user
# Compiles with -march=rv32im_zba (so gcc may emit sh1add/sh2add/sh3add) but LINKS with -march=rv32im, because
# Debian ships no rv32im_zba multilib of picolibc/libgcc. The ELFs are committed: users need no cross toolchain.
set -eu
cd "$(dirname "$0")"
CC=${CC:-riscv64-unknown-elf-gcc}
OBJDUMP=${OBJDUMP:-riscv64-unknown-elf-objdump}
SPECS="-specs=picolibc.specs"
CFLAGS="$SPECS -march=rv32im_zba -mabi=ilp32 -Os -g0 -ffreestanding -fno-builtin-printf -ffunction-sections -fdata-sections -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format"
LDFLAGS="$SPECS -march=rv32im -mabi=ilp32 -nostartfiles -T src/link.ld -Wl,--gc-sections -Wl,--no-relax -Wl,--no-warn-rwx-segments -s"
PROGRAMS="hello sort crc32 sha256 sieve bignum printf zba muldiv isa_selftest demo calc"
mkdir -p bin expected obj
$CC $CFLAGS -c src/crt0.S -o obj/crt0.o
$CC $CFLAGS -c src/rt.c -o obj/rt.o
for p in $PROGRAMS; do
    if [ -f "src/$p.S" ]; then
        # Assembly program with its own _start; C helpers in src/${p}_report.c.
        $CC $CFLAGS -c "src/$p.S" -o "obj/$p.o"
        $CC $CFLAGS -c "src/${p}_report.c" -o "obj/${p}_report.o"
        $CC $LDFLAGS "obj/$p.o" "obj/${p}_report.o" obj/rt.o -o "bin/$p.elf"
    else
        $CC $CFLAGS -c "src/$p.c" -o "obj/$p.o"
        $CC $LDFLAGS obj/crt0.o "obj/$p.o" obj/rt.o -o "bin/$p.elf"
    fi
    size=$(stat -c %s "bin/$p.elf")
    [ "$size" -lt 65536 ] || { echo "bin/$p.elf is $size bytes (limit 64 KiB)" >&2; exit 1; }
    # Compressed or non-RV32IM+Zba instructions would be illegal on the machine: reject them here.
    if $OBJDUMP -d -M no-aliases "bin/$p.elf" | awk -F'\t' 'NF>=3 && $2 ~ /^[0-9a-f]{4} *$/' | grep -q .; then
        echo "bin/$p.elf contains compressed instructions" >&2; exit 1
    fi
    if command -v qemu-riscv32 >/dev/null; then
        set +e
        input=/dev/null
        [ -f "src/$p.in" ] && input="src/$p.in"
        qemu-riscv32 -cpu rv32,c=false,a=false,f=false,d=false,zba=true "bin/$p.elf" < "$input" > "expected/$p.out"
        echo $? > "expected/$p.status"
        set -e
    fi
    printf '%-8s %6d bytes, exit %s\n' "$p" "$size" "$(cat expected/$p.status 2>/dev/null || echo '?')"
done
n=$($OBJDUMP -d bin/zba.elf | grep -cE '\ssh[123]add\s' || true)
echo "zba.elf: $n sh1add/sh2add/sh3add instructions"
[ "$n" -gt 0 ] || { echo "zba.elf has no Zba instructions" >&2; exit 1; }
rm -rf obj

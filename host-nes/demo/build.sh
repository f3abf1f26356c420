#!/usr/bin/env bash
# Build the host-nes demo ROM: assemble demo.s with ca65 and link it with ld65 (Debian's cc65 package) into
# demo.nes next to this script. Runs from any directory. Intermediate files go to a temporary directory.
#
#   host-nes/demo/build.sh            # writes host-nes/demo/demo.nes
#   LABELS=/tmp/demo.lbl host-nes/demo/build.sh   # also writes ld65's label file (VICE format) there
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ca65 --cpu 6502X -t none ${LABELS:+-g} -o "$tmp/demo.o" "$here/demo.s"
ld65 -C "$here/demo.cfg" -o "$tmp/demo.nes" ${LABELS:+-Ln "$LABELS"} "$tmp/demo.o"
mv "$tmp/demo.nes" "$here/demo.nes"
echo "built $here/demo.nes ($(wc -c < "$here/demo.nes") bytes)"

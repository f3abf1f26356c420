#!/usr/bin/env python3
"""A minimal CHIP-8 assembler for the mnemonics bounce.asm uses (Cowgod's syntax): two passes, labels, `;`
comments, `DB` bytes. Writes bounce.ch8 next to this file."""
import re, sys, pathlib

def reg(s):
    s = s.strip().upper()
    assert re.fullmatch(r"V[0-9A-F]", s), s
    return int(s[1], 16)

def num(s, labels):
    s = s.strip()
    return labels[s] if s in labels else int(s, 0)

def encode(op, args, labels):
    a = [x.strip() for x in args]
    U = [x.upper() for x in a]
    if op == "CLS": return [0x00E0]
    if op == "RET": return [0x00EE]
    if op == "JP": return [0x1000 | num(a[0], labels)]
    if op == "CALL": return [0x2000 | num(a[0], labels)]
    if op == "SE": return [0x3000 | reg(a[0]) << 8 | num(a[1], labels)] if not U[1].startswith("V") else [0x5000 | reg(a[0]) << 8 | reg(a[1]) << 4]
    if op == "SNE": return [0x4000 | reg(a[0]) << 8 | num(a[1], labels)] if not U[1].startswith("V") else [0x9000 | reg(a[0]) << 8 | reg(a[1]) << 4]
    if op == "ADD": return [0x7000 | reg(a[0]) << 8 | num(a[1], labels)] if not U[1].startswith("V") else [0x8004 | reg(a[0]) << 8 | reg(a[1]) << 4]
    if op == "SUB": return [0x8005 | reg(a[0]) << 8 | reg(a[1]) << 4]
    if op == "RND": return [0xC000 | reg(a[0]) << 8 | num(a[1], labels)]
    if op == "DRW": return [0xD000 | reg(a[0]) << 8 | reg(a[1]) << 4 | num(a[2], labels)]
    if op == "SKP": return [0xE09E | reg(a[0]) << 8]
    if op == "SKNP": return [0xE0A1 | reg(a[0]) << 8]
    if op == "LD":
        d, s = U[0], U[1]
        if d == "I": return [0xA000 | num(a[1], labels)]
        if d == "DT": return [0xF015 | reg(s) << 8]
        if d == "ST": return [0xF018 | reg(s) << 8]
        if d == "F": return [0xF029 | reg(s) << 8]
        if d == "B": return [0xF033 | reg(s) << 8]
        if d == "[I]": return [0xF055 | reg(s) << 8]
        if s == "[I]": return [0xF065 | reg(d) << 8]
        if s == "DT": return [0xF007 | reg(d) << 8]
        if s.startswith("V"): return [0x8000 | reg(d) << 8 | reg(s) << 4]
        return [0x6000 | reg(d) << 8 | num(a[1], labels)]
    raise SystemExit(f"unknown instruction {op} {args}")

def assemble(text):
    lines = []
    for line in text.splitlines():
        line = line.split(";")[0].rstrip()
        if not line.strip():
            continue
        label = None
        m = re.match(r"^(\w+):\s*(.*)$", line.strip())
        if m:
            label, line = m.group(1), m.group(2)
        parts = line.strip().split(None, 1)
        op = parts[0].upper() if parts else None
        args = parts[1].split(",") if len(parts) > 1 else []
        lines.append((label, op, args))
    labels, addr = {}, 0x200
    for label, op, args in lines:
        if label: labels[label] = addr
        if op == "DB": addr += len(args)
        elif op: addr += 2
    out = bytearray()
    for _, op, args in lines:
        if op == "DB":
            out += bytes(num(x, labels) for x in args)
        elif op:
            for w in encode(op, args, labels):
                out += bytes([w >> 8, w & 0xFF])
    return bytes(out)

here = pathlib.Path(__file__).parent
rom = assemble((here / "bounce.asm").read_text())
(here / "bounce.ch8").write_bytes(rom)
print(f"bounce.ch8: {len(rom)} bytes")

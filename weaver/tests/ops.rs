//! Every IR operation lowered to threshold gates and evaluated bit-exactly on the netlist, against the
//! reference evaluator: exhaustively at small widths, on edge values at 32 bits. (The weights of the same
//! gates are checked end to end in `random_circuits.rs` and `acc8.rs`.)

use isa_api::{eval::eval_nodes, CircuitBuilder, CmpKind, MachineDesc, MachineState, NodeId, Protocol, RegisterDesc, ShiftKind};
use weaver::lower::lower;
use weaver::net::{sig_bit, Source};

/// A machine with registers A (wa bits), B (wb bits) and R (result), `R.next = f(A, B)`.
fn machine(wa: u32, wb: u32, f: &dyn Fn(&mut CircuitBuilder, NodeId, NodeId) -> NodeId) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let a = b.reg(0, wa);
    let bb = b.reg(1, wb);
    let r = f(&mut b, a, bb);
    let wr = b.width(r);
    b.set_next(2, r);
    let regs = vec![
        RegisterDesc { name: "A".into(), width: wa },
        RegisterDesc { name: "B".into(), width: wb },
        RegisterDesc { name: "R".into(), width: wr },
    ];
    let d = MachineDesc::new("op", regs, vec![], vec![], b.finish());
    d.validate().unwrap();
    d
}

/// Checks the lowered netlist of `d` against the reference on each (a, b).
fn check(d: &MachineDesc, pairs: impl Iterator<Item = (u64, u64)>) -> usize {
    let proto = Protocol::of(d);
    check_net(d, &lower(d, &proto).unwrap(), pairs)
}

/// Checks netlist `net` (lowered from `d`) against the reference on each (a, b).
fn check_net(d: &MachineDesc, net: &weaver::net::Netlist, pairs: impl Iterator<Item = (u64, u64)>) -> usize {
    let proto = Protocol::of(d);
    let r_fields: Vec<usize> = proto.step_fields.iter().enumerate().filter(|(_, f)| matches!(proto.fields[**f as usize].role, isa_api::FieldRole::RegNext { reg: 2, .. })).map(|(k, _)| k).collect();
    let mut n = 0;
    for (a, b) in pairs {
        let st = MachineState { regs: vec![a, b, 0], mems: vec![], inputs: vec![] };
        let want = *eval_nodes(d, &st).last().unwrap();
        let v = net
            .eval(&|_, src| match src {
                Source::RegBit { reg, bit } => (st.regs[reg as usize] >> bit) & 1 == 1,
                _ => false,
            })
            .unwrap_or_else(|e| panic!("a={a:#x} b={b:#x}: {e}"));
        let mut got = 0u64;
        for k in &r_fields {
            let f = &proto.fields[proto.step_fields[*k] as usize];
            for (j, s) in net.outputs[*k].bits.iter().enumerate() {
                if sig_bit(&v, *s) {
                    got |= 1 << (f.lo + j as u32);
                }
            }
        }
        assert_eq!(got, want, "a={a:#x} b={b:#x} ({:?})", d.circuit.nodes.last().unwrap().op);
        n += 1;
    }
    n
}

type OpFn = fn(&mut CircuitBuilder, NodeId, NodeId) -> NodeId;

fn binary_ops() -> Vec<(&'static str, OpFn)> {
    vec![
        ("add", |b, x, y| b.add(x, y)),
        ("add_c", |b, x, y| {
            let c = b.bit(y, 0);
            b.add_c(x, y, c)
        }),
        ("sub", |b, x, y| b.sub(x, y)),
        ("and", |b, x, y| b.and(x, y)),
        ("or", |b, x, y| b.or(x, y)),
        ("xor", |b, x, y| b.xor(x, y)),
        ("not", |b, x, _| b.not(x)),
        ("eq", |b, x, y| b.cmp(CmpKind::Eq, x, y)),
        ("ne", |b, x, y| b.cmp(CmpKind::Ne, x, y)),
        ("ltu", |b, x, y| b.cmp(CmpKind::Ltu, x, y)),
        ("lts", |b, x, y| b.cmp(CmpKind::Lts, x, y)),
        ("leu", |b, x, y| b.cmp(CmpKind::Leu, x, y)),
        ("les", |b, x, y| b.cmp(CmpKind::Les, x, y)),
        ("mux", |b, x, y| {
            let s = b.bit(y, 0);
            let ny = b.not(y);
            b.select(s, ny, x)
        }),
        ("mul_lo", |b, x, y| b.mul_lo(x, y)),
        ("mulhu", |b, x, y| b.mul_hi(x, y, false, false)),
        ("mulhs", |b, x, y| b.mul_hi(x, y, true, true)),
        ("mulhsu", |b, x, y| b.mul_hi(x, y, true, false)),
        ("and_or", |b, x, y| {
            let s0 = b.bit(y, 0);
            let s1 = b.bit(x, 0);
            b.and_or(b.width(x), &[(s0, x), (s1, y)])
        }),
        // Exclusive selects (x0 AND NOT y0, y0 AND NOT x0), and none when x0 = y0: one layer in the weaver.
        ("one_hot", |b, x, y| {
            let (x0, y0) = (b.bit(x, 0), b.bit(y, 0));
            let (nx0, ny0) = (b.not(x0), b.not(y0));
            let s0 = b.and(x0, ny0);
            let s1 = b.and(y0, nx0);
            b.one_hot(b.width(x), &[(s0, x), (s1, y)])
        }),
        ("add_carry_out", |b, x, y| {
            let w = b.width(x);
            let (xe, ye) = (b.zext(x, w + 1), b.zext(y, w + 1));
            let s = b.add(xe, ye);
            b.slice(s, w, 1)
        }),
        // Multi-operand sums: x - 5y + 1 at the operands' width, x - 7y three bits wider (the division's
        // comparisons read its sign bit), and terms shifted past the width.
        ("sum", |b, x, y| {
            let t = |node, shift, neg| isa_api::SumTerm { node, shift, neg };
            b.sum(b.width(x), &[t(x, 0, false), t(y, 0, true), t(y, 2, true)], 1)
        }),
        ("sum_wide", |b, x, y| {
            let t = |node, shift, neg| isa_api::SumTerm { node, shift, neg };
            b.sum(b.width(x) + 3, &[t(x, 0, false), t(y, 0, true), t(y, 1, true), t(y, 2, true)], 0)
        }),
        ("sum_shifted", |b, x, y| {
            let w = b.width(x);
            let t = |node, shift, neg| isa_api::SumTerm { node, shift, neg };
            b.sum(w + 1, &[t(x, 1, true), t(y, w, false), t(x, w + 1, true)], 0)
        }),
        ("sext_concat", |b, x, y| {
            let w = b.width(x);
            let s = b.sext(x, w + 2);
            let lo = b.slice(y, 0, 1);
            b.concat(&[lo, s])
        }),
    ]
}

fn shift_ops() -> Vec<(&'static str, OpFn)> {
    let mut v: Vec<(&'static str, OpFn)> = vec![
        ("shl", |b, x, y| b.shift(ShiftKind::Shl, x, y)),
        ("shr", |b, x, y| b.shift(ShiftKind::Shr, x, y)),
        ("sar", |b, x, y| b.shift(ShiftKind::Sar, x, y)),
        ("rotl", |b, x, y| b.shift(ShiftKind::Rotl, x, y)),
        ("rotr", |b, x, y| b.shift(ShiftKind::Rotr, x, y)),
    ];
    v.push(("shl_const", |b, x, _| b.shift_const(ShiftKind::Shl, x, 2)));
    v.push(("sar_const", |b, x, _| b.shift_const(ShiftKind::Sar, x, 1)));
    v.push(("rotr_const", |b, x, _| b.shift_const(ShiftKind::Rotr, x, 3)));
    v
}

#[test]
fn every_binary_op_exhaustive_up_to_5_bits() {
    let mut total = 0;
    for w in 1..=5u32 {
        for (name, f) in binary_ops() {
            let d = machine(w, w, &f);
            let n = check(&d, (0..1u64 << w).flat_map(|a| (0..1u64 << w).map(move |b| (a, b))));
            assert_eq!(n, 1 << (2 * w), "{name}");
            total += n;
        }
    }
    eprintln!("{total} cases");
}

#[test]
fn shifts_exhaustive() {
    for w in 1..=6u32 {
        for wb in 1..=3u32 {
            for (_, f) in shift_ops() {
                let d = machine(w, wb, &f);
                check(&d, (0..1u64 << w).flat_map(|a| (0..1u64 << wb).map(move |b| (a, b))));
            }
        }
    }
}

#[test]
fn lookup_exhaustive() {
    let table: Vec<u64> = (0..64u64).map(|i| (i * 37 + 11) % 128).collect();
    let d = machine(6, 1, &|b, x, _| b.lookup(7, table.clone(), x));
    assert_eq!(check(&d, (0..64).map(|a| (a, 0))), 64);
}

/// 0, 1, -1, min, max, and carries across every 8-, 16- and 24-bit boundary.
fn edges32() -> Vec<u64> {
    let mut v = vec![0, 1, 2, 0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFE, 0x8000_0001];
    for k in [8, 16, 24] {
        v.push((1 << k) - 1);
        v.push(1 << k);
        v.push(((1u64 << k) - 1) | 0xFFFF_FFFF << (k + 1) & 0xFFFF_FFFF);
        v.push(0xFFFF_FFFF >> (32 - k));
    }
    v.push(0x1234_5678);
    v.push(0x9ABC_DEF0);
    v.sort();
    v.dedup();
    v
}

#[test]
fn every_binary_op_on_32_bit_edges() {
    let e = edges32();
    for (name, f) in binary_ops() {
        let d = machine(32, 32, &f);
        let n = check(&d, e.iter().flat_map(|a| e.iter().map(move |b| (*a, *b))));
        assert_eq!(n, e.len() * e.len(), "{name}");
    }
}

#[test]
fn shifts_on_32_bits() {
    let e = edges32();
    for (_, f) in shift_ops() {
        let d = machine(32, 5, &f);
        check(&d, e.iter().flat_map(|a| (0..32u64).map(move |b| (*a, b))));
    }
}

/// `x == k` and `x != k` against a constant (on either side): exact on every input up to 10 bits and on 32-bit
/// edges; up to 16 bits lowered to one step over literals whose form is 0 at the match and at most -1
/// elsewhere, so that its two units are silu-quiet (an exact zero) on every input but the match (wider ones
/// keep the positional form: only exactness is checked there).
#[test]
fn comparisons_with_a_constant_are_one_step_quiet_off_the_match() {
    for w in [1u32, 3, 6, 10, 32] {
        let k = 0x9ABC_DEF5u64 & ((1u64 << w) - 1);
        let inputs: Vec<u64> = if w <= 10 { (0..1u64 << w).collect() } else { edges32().into_iter().chain([k, k ^ 1, k ^ 0x8000_0000]).collect() };
        for (kind, konst_left) in [(CmpKind::Eq, false), (CmpKind::Ne, false), (CmpKind::Eq, true)] {
            let d = machine(w, 1, &|b, x, _| {
                let c = b.konst(w, k);
                if konst_left { b.cmp(kind, c, x) } else { b.cmp(kind, x, c) }
            });
            assert_eq!(check(&d, inputs.iter().map(|a| (*a, 0))), inputs.len(), "{kind:?} w={w}");
            if w > 16 {
                continue;
            }
            let proto = Protocol::of(&d);
            let net = lower(&d, &proto).unwrap();
            // R's next value: the comparison's gate (at 1 bit, x itself or its negation: no gate at all).
            let k_r = proto.step_fields.iter().position(|f| matches!(proto.fields[*f as usize].role, isa_api::FieldRole::RegNext { reg: 2, .. })).unwrap();
            let r = net.outputs[k_r].bits[0];
            let Source::Gate(g) = net.nodes[r.node as usize] else {
                assert_eq!(w, 1, "{kind:?} w={w}: R is {:?}", net.nodes[r.node as usize]);
                continue;
            };
            let g = &net.gates[g as usize];
            let t = &g.terms;
            assert_eq!((t.len(), g.offset), (1, 0), "{kind:?} w={w}: one step, no offset");
            for a in &inputs {
                let l = t[0].bias + t[0].lin.iter().map(|(n, c)| match net.nodes[*n as usize] { Source::RegBit { bit, .. } if (a >> bit) & 1 == 1 => *c, _ => 0 }).sum::<i64>();
                assert_eq!(l == 0, *a == k, "{kind:?} w={w} x={a:#x}");
                assert!(l <= 0, "{kind:?} w={w} x={a:#x}: form {l}");
            }
        }
    }
}

/// Adds, subtracts and sums wider than `NARROW_WINDOW` are listed as candidates, and lowered with narrow windows
/// (a carry out of every 8 bits, the forms of a window over its own bits and the carry in) they compute every
/// bit as the reference does: 16 bits exhaustively in the low byte against edges in the high one, 32 bits
/// (with a carry in, a subtract, a three-operand sum with shifts) on edges.
#[test]
fn narrowed_sums_compute_every_bit() {
    use isa_api::SumTerm;
    use weaver::lower::{lower_narrowing, NARROW_WINDOW};
    let sum3: OpFn = |b, x, y| {
        let t = |node, shift, neg| SumTerm { node, shift, neg };
        b.sum(32, &[t(x, 0, false), t(y, 3, false), t(y, 0, true)], 0x1234)
    };
    let ops: Vec<(&str, OpFn)> = vec![("add", |b, x, y| b.add(x, y)), ("add_c", |b, x, y| {
        let c = b.bit(y, 0);
        b.add_c(x, y, c)
    }), ("sub", |b, x, y| b.sub(x, y)), ("sum3", sum3)];
    let e = edges32();
    for (name, f) in ops {
        for width in [16u32, 32] {
            if name == "sum3" && width == 16 {
                continue;
            }
            let d = machine(width, width, &f);
            let proto = Protocol::of(&d);
            let (wide, sums) = lower_narrowing(&d, &proto, &Default::default()).unwrap();
            assert_eq!(sums.len(), 1, "{name} {width}: {sums:?}");
            let (narrow, again) = lower_narrowing(&d, &proto, &sums.iter().cloned().collect()).unwrap();
            assert_eq!(again, sums);
            // Narrow windows: a carry out of bit 8; the wide lowering has none below 17.
            let carries = |n: &weaver::net::Netlist, at: u32| n.names.iter().any(|x| x.ends_with(&format!(".carry{at}")));
            assert!(carries(&narrow, NARROW_WINDOW) && !carries(&wide, NARROW_WINDOW), "{name} {width}");
            let mask = (1u64 << width) - 1;
            let pairs: Vec<(u64, u64)> = if width == 16 {
                (0..256u64).flat_map(|lo| e.iter().map(move |hi| ((hi & 0xFF00) | lo, (hi >> 8) & mask))).chain(e.iter().map(|x| (x & mask, (x >> 3) & mask))).collect()
            } else {
                e.iter().flat_map(|a| e.iter().map(move |b| (*a, *b))).collect()
            };
            let n = check_net(&d, &narrow, pairs.iter().copied());
            assert_eq!(n, pairs.len(), "{name} {width}");
        }
    }
}

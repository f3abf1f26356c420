//! Small example machines defined through this API (test machines for the weaver).
//!
//! [`acc8`]: an 8-bit accumulator machine. Registers PC and ACC (8 bits), one memory M of 256 bytes holding
//! program and data, an output port OUT. Every instruction is two bytes, opcode at PC and argument at PC+1;
//! `m` is `M[arg]`. Unknown opcodes do nothing (PC += 2).
//!
//! | op | name | effect |
//! |----|------|--------|
//! | 00 | HLT  | halt |
//! | 01 | LDI  | ACC = arg |
//! | 02 | LD   | ACC = m |
//! | 03 | ST   | M[arg] = ACC |
//! | 04 | ADD  | ACC += m |
//! | 05 | SUB  | ACC -= m |
//! | 06 | ADDI | ACC += arg |
//! | 07 | AND  | ACC &= m |
//! | 08 | OR   | ACC \|= m |
//! | 09 | XOR  | ACC ^= m |
//! | 0A | JMP  | PC = arg |
//! | 0B | JZ   | PC = arg if ACC == 0 |
//! | 0C | JNZ  | PC = arg if ACC != 0 |
//! | 0D | JN   | PC = arg if ACC bit 7 |
//! | 0E | OUT  | OUT = ACC |
//! | 0F | SHL  | ACC <<= arg & 7 |
//! | 10 | SHR  | ACC >>= arg & 7 (logical) |
//! | 11 | LDX  | ACC = M[m] |
//! | 12 | MUL  | ACC = low byte of ACC * m |
//! | 13 | SLT  | ACC = (ACC <s m) |
//! | 14 | SAR  | ACC >>= arg & 7 (arithmetic) |
//! | 15 | ROL  | ACC = rotate left by arg & 7 |
//!
//! [`scatter10`]: a machine whose memory (1,024 bytes) is larger than one DeltaNet head holds, so the weaver
//! splits it into blocks of `d_k` rows; each step reads two far-apart addresses and writes a third.

use crate::circuit::{CircuitBuilder, CmpKind, ShiftKind};
use crate::machine::{DeviceDesc, MachineDesc, MemoryDesc, PortDesc, RegisterDesc};

/// Opcodes of [`acc8`].
#[allow(missing_docs)]
pub mod op {
    pub const HLT: u8 = 0x00;
    pub const LDI: u8 = 0x01;
    pub const LD: u8 = 0x02;
    pub const ST: u8 = 0x03;
    pub const ADD: u8 = 0x04;
    pub const SUB: u8 = 0x05;
    pub const ADDI: u8 = 0x06;
    pub const AND: u8 = 0x07;
    pub const OR: u8 = 0x08;
    pub const XOR: u8 = 0x09;
    pub const JMP: u8 = 0x0A;
    pub const JZ: u8 = 0x0B;
    pub const JNZ: u8 = 0x0C;
    pub const JN: u8 = 0x0D;
    pub const OUT: u8 = 0x0E;
    pub const SHL: u8 = 0x0F;
    pub const SHR: u8 = 0x10;
    pub const LDX: u8 = 0x11;
    pub const MUL: u8 = 0x12;
    pub const SLT: u8 = 0x13;
    pub const SAR: u8 = 0x14;
    pub const ROL: u8 = 0x15;
}

/// The 8-bit accumulator machine.
pub fn acc8() -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let (pc, acc) = (b.reg(0, 8), b.reg(1, 8));
    let one = b.konst(8, 1);
    let two = b.konst(8, 2);
    let pc1 = b.add(pc, one);
    let pc2 = b.add(pc, two);
    let opc = b.load(0, 8, pc);
    let arg = b.load(0, 8, pc1);
    let m = b.load(0, 8, arg);
    let mm = b.load(0, 8, m);
    let is = |b: &mut CircuitBuilder, code: u8| {
        let c = b.konst(8, code as u64);
        b.eq(opc, c)
    };
    let amt = b.slice(arg, 0, 3);
    let cases_val = [
        (op::LDI, arg),
        (op::LD, m),
        (op::ADD, b.add(acc, m)),
        (op::SUB, b.sub(acc, m)),
        (op::ADDI, b.add(acc, arg)),
        (op::AND, b.and(acc, m)),
        (op::OR, b.or(acc, m)),
        (op::XOR, b.xor(acc, m)),
        (op::SHL, b.shift(ShiftKind::Shl, acc, amt)),
        (op::SHR, b.shift(ShiftKind::Shr, acc, amt)),
        (op::LDX, mm),
        (op::MUL, b.mul_lo(acc, m)),
        (op::SLT, {
            let l = b.cmp(CmpKind::Lts, acc, m);
            b.zext(l, 8)
        }),
        (op::SAR, b.shift(ShiftKind::Sar, acc, amt)),
        (op::ROL, b.shift(ShiftKind::Rotl, acc, amt)),
    ];
    let mut table = vec![0u64; 256];
    for (c, _) in &cases_val {
        table[*c as usize] = 1;
    }
    let writes_acc = b.lookup(1, table, opc);
    let keeps = b.not(writes_acc);
    let mut cases: Vec<(u32, u32)> = cases_val.iter().map(|(c, v)| (is(&mut b, *c), *v)).collect();
    cases.push((keeps, acc));
    let acc_next = b.and_or(8, &cases);
    let zero8 = b.konst(8, 0);
    let z = b.eq(acc, zero8);
    let nz = b.not(z);
    let neg = b.bit(acc, 7);
    let tru = b.konst(1, 1);
    let jc = [(op::JMP, tru), (op::JZ, z), (op::JNZ, nz), (op::JN, neg)];
    let jcases: Vec<(u32, u32)> = jc.iter().map(|(c, v)| (is(&mut b, *c), *v)).collect();
    let take = b.and_or(1, &jcases);
    let pc_next = b.select(take, arg, pc2);
    b.set_next(0, pc_next);
    b.set_next(1, acc_next);
    let st = is(&mut b, op::ST);
    b.mem_write(0, arg, acc, st);
    let out = is(&mut b, op::OUT);
    b.output(0, acc, out);
    let h = is(&mut b, op::HLT);
    b.halt(h);
    MachineDesc::new(
        "acc8",
        vec![RegisterDesc { name: "PC".into(), width: 8 }, RegisterDesc { name: "ACC".into(), width: 8 }],
        vec![MemoryDesc { name: "M".into(), word_width: 8, addr_width: 8 }],
        vec![PortDesc::new("OUT", 8)],
        b.finish(),
    )
}

/// A program of [`acc8`] that runs `outer * 256`-ish loop iterations mixing every ALU operation, writes and
/// indirect loads, prints a running checksum, then halts. About 40 steps per inner iteration.
pub fn acc8_stress_program(outer: u8) -> Vec<u8> {
    use op::*;
    // Data: 0xF0 = x (PRNG state), 0xF1 = counter, 0xF2 = outer counter, 0xF3 = checksum, 0xF4 = tmp,
    // 0xF5 = 1, 0xF6 = 3, 0xF8.. = table pointer target.
    let p: Vec<(u8, u8)> = vec![
        (LDI, outer), (ST, 0xF2), // 00
        (LDI, 0x5A), (ST, 0xF0),  // 04
        (LDI, 1), (ST, 0xF5), (LDI, 3), (ST, 0xF6), // 08
        (LDI, 0xF0), (ST, 0xF7), // 10: 0xF7 holds a pointer to x
        // outer: 14
        (LDI, 0), (ST, 0xF1),
        // inner: 18  x = x ^ (x << 3); x = x ^ (x >> 5); x = x ^ (x << 1)  (xorshift)
        (LD, 0xF0), (SHL, 3), (XOR, 0xF0), (ST, 0xF0),
        (SHR, 5), (XOR, 0xF0), (ST, 0xF0),
        (ROL, 1), (XOR, 0xF0), (ST, 0xF0),
        // checksum = checksum * 3 + x - (x >> 2 sar) & ...
        (LD, 0xF3), (MUL, 0xF6), (ADD, 0xF0), (ST, 0xF4),
        (LDX, 0xF7), (SAR, 2), (AND, 0xF4), (OR, 0xF5), (SUB, 0xF4), (ST, 0xF3),
        (SLT, 0xF0), (ADD, 0xF3), (ST, 0xF3),
        (OUT, 0),
        // negative? take a detour that stores into the code (self-modifying: patch the SHR amount)
        (JN, 0x60),
        // counter++ ; loop while counter != 0
        (LD, 0xF1), (ADDI, 1), (ST, 0xF1), (JNZ, 0x18),
        // outer--
        (LD, 0xF2), (SUB, 0xF5), (ST, 0xF2), (JNZ, 0x14),
        (HLT, 0),
    ];
    let mut mem = vec![0u8; 256];
    for (i, (o, a)) in p.iter().enumerate() {
        mem[2 * i] = *o;
        mem[2 * i + 1] = *a;
    }
    assert!(2 * p.len() <= 0x60, "program overlaps the detour");
    // detour at 0x60: patch the SHR amount (byte 0x21 = arg of the instruction at 0x20) with ACC & 7 | 1,
    // then go back to the counter code.
    let back = 2 * (p.len() - 9) as u8; // the (LD, 0xF1) after JN
    let det: Vec<(u8, u8)> = vec![(AND, 0xF6), (OR, 0xF5), (ADDI, 2), (ST, 0x21), (JMP, back)];
    for (i, (o, a)) in det.iter().enumerate() {
        mem[0x60 + 2 * i] = *o;
        mem[0x60 + 2 * i + 1] = *a;
    }
    mem
}

/// A test machine for memories split over several DeltaNet heads: memory M of 1,024 bytes (four blocks of
/// 256 rows), registers P (10 bits) and A (8 bits), port OUT. One step:
/// `x = M[P]`, `y = M[P xor 0x2A5]`, `A' = A + x + y`, `M[5P + 3] = A' xor x` when `A'` bit 0 or `x` bit 1
/// is set, `P' = P + 0x95` (odd: every address in turn), `OUT = A'` when `A'` bit 7 is set. Never halts.
pub fn scatter10() -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let (p, a) = (b.reg(0, 10), b.reg(1, 8));
    let x = b.load(0, 8, p);
    let far = b.konst(10, 0x2A5);
    let pf = b.xor(p, far);
    let y = b.load(0, 8, pf);
    let ax = b.add(a, x);
    let a2 = b.add(ax, y);
    let three = b.konst(10, 3);
    let p4 = b.shift_const(ShiftKind::Shl, p, 2);
    let p5 = b.add(p4, p);
    let waddr = b.add(p5, three);
    let wdata = b.xor(a2, x);
    let (a0, x1) = (b.bit(a2, 0), b.bit(x, 1));
    let wen = b.or(a0, x1);
    b.mem_write(0, waddr, wdata, wen);
    let stride = b.konst(10, 0x95);
    let pn = b.add(p, stride);
    b.set_next(0, pn);
    b.set_next(1, a2);
    let a7 = b.bit(a2, 7);
    b.output(0, a2, a7);
    MachineDesc::new(
        "scatter10",
        vec![RegisterDesc { name: "P".into(), width: 10 }, RegisterDesc { name: "A".into(), width: 8 }],
        vec![MemoryDesc { name: "M".into(), word_width: 8, addr_width: 10 }],
        vec![PortDesc::new("OUT", 8)],
        b.finish(),
    )
}

/// A memory image for [`scatter10`]: `n` pseudo-random bytes (a fixed xorshift sequence) from address 0.
pub fn scatter10_image(n: usize) -> Vec<u64> {
    let mut s = 0x2545_F491u32;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s & 0xff) as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Reference;

    #[test]
    fn acc8_is_valid_and_runs_the_stress_program() {
        let d = acc8();
        d.validate().unwrap();
        let mut r = Reference::new(d);
        let prog: Vec<u64> = acc8_stress_program(2).iter().map(|b| *b as u64).collect();
        r.load(0, 0, &prog);
        let mut steps = 0;
        let mut outs = 0;
        let mut detours = 0;
        loop {
            detours += (r.state.regs[0] == 0x60) as usize;
            let o = r.step();
            if o.halted {
                break;
            }
            outs += o.outputs.len();
            steps += 1;
            assert!(steps < 100_000);
        }
        assert_eq!(outs, 512, "one OUT per inner iteration");
        assert!(steps > 10_000, "{steps} steps");
        // The self-modifying detour ran and patched the SHR amount to 3 or 5.
        assert!(detours > 50, "{detours} detours");
        assert!([3, 5].contains(&r.state.mems[0][0x21]));
    }

    #[test]
    fn scatter10_writes_every_block() {
        let d = scatter10();
        d.validate().unwrap();
        let mut r = Reference::new(d);
        r.load(0, 0, &scatter10_image(300));
        let mut blocks = [0usize; 4];
        let mut outs = 0;
        for _ in 0..400 {
            let before = r.state.mems[0].clone();
            let o = r.step();
            outs += o.outputs.len();
            for (i, (x, y)) in before.iter().zip(&r.state.mems[0]).enumerate() {
                if x != y {
                    blocks[i / 256] += 1;
                }
            }
        }
        assert!(blocks.iter().all(|n| *n > 10), "writes per block {blocks:?}");
        assert!(outs > 20 && outs < 380, "{outs} outputs");
    }
}

/// A test machine for the host interface (input ports, an interrupt line, injected tokens): registers ACC and
/// N (8 bits), input ports DATA (8 bits, a device the host answers) and IRQ (1 bit, an interrupt line), output
/// port OUT (8 bits). One step: when IRQ is high the machine takes the interrupt, `OUT = ACC` and `ACC = 0`;
/// otherwise `ACC = ACC + DATA`; `N = N + 1`; it halts when N reaches `limit`. Every value it sees comes from
/// the host, between steps.
pub fn io8(limit: u8) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let (acc, n) = (b.reg(0, 8), b.reg(1, 8));
    let (data, irq) = (b.input(0, 8), b.input(1, 1));
    let sum = b.add(acc, data);
    let zero = b.konst(8, 0);
    let acc2 = b.select(irq, zero, sum);
    b.set_next(0, acc2);
    let one = b.konst(8, 1);
    let n2 = b.add(n, one);
    b.set_next(1, n2);
    b.output(0, acc, irq);
    let lim = b.konst(8, limit as u64);
    let stop = b.eq(n, lim);
    b.halt(stop);
    MachineDesc::new(
        "io8",
        vec![RegisterDesc { name: "ACC".into(), width: 8 }, RegisterDesc { name: "N".into(), width: 8 }],
        vec![],
        vec![PortDesc::new("OUT", 8)],
        b.finish(),
    )
    .with_inputs(vec![PortDesc::new("DATA", 8), PortDesc::new("IRQ", 1)])
}

/// The host devices of [`io8`] used by the tests: at step boundary `s` (0 = after the prompt) DATA takes a new
/// value unless `s % 3 == 2` (the latch keeps the old one), IRQ is raised when `s % 7 == 3` and lowered when
/// `s % 7 == 4`. Returns `(port, value)` injections in order.
pub fn io8_devices(s: usize) -> Vec<(u32, u64)> {
    let mut v = Vec::new();
    if s % 3 != 2 {
        v.push((0, ((s * 37 + 11) & 0xff) as u64));
    }
    match s % 7 {
        3 => v.push((1, 1)),
        4 => v.push((1, 0)),
        _ => {}
    }
    v
}

/// A test machine for answers within a step ([`crate::PortDesc::answers`], a memory-mapped IO read's shape):
/// registers ACC and N (8 bits), output port ASK (12 bits) and input ANS (8 bits), which answers ASK. A step
/// with N odd asks, `ASK = N * 16 + ACC % 16`, and takes the host's answer in the same step: `ACC = ACC + ANS`;
/// other steps `ACC = ACC ^ N`. `N = N + 1`; it halts when N reaches `limit`. The request's fields lead the
/// step; every asking step also writes N, after them.
pub fn ask8(limit: u8) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let (acc, n) = (b.reg(0, 8), b.reg(1, 8));
    let ans = b.input(0, 8);
    let asks = b.bit(n, 0);
    let acc_lo = b.slice(acc, 0, 4);
    let request = b.concat(&[acc_lo, n]);
    b.output(0, request, asks);
    let sum = b.add(acc, ans);
    let mixed = b.xor(acc, n);
    let acc2 = b.select(asks, sum, mixed);
    b.set_next(0, acc2);
    let n2 = b.add_const(n, 1);
    b.set_next(1, n2);
    let stop = b.eq_const(n, u64::from(limit));
    b.halt(stop);
    MachineDesc::new(
        "ask8",
        vec![RegisterDesc { name: "ACC".into(), width: 8 }, RegisterDesc { name: "N".into(), width: 8 }],
        vec![],
        vec![PortDesc::new("ASK", 12)],
        b.finish(),
    )
    .with_inputs(vec![PortDesc::new("ANS", 8).answering(0)])
}

/// The host's answer to [`ask8`]'s request `request` (on port 0).
pub fn ask8_answer(_port: u32, request: u64) -> u64 {
    (request * 7 + 3) & 0xff
}

/// A test machine for the generic host devices ([`crate::DeviceDesc`]): a 16 x 8 display in memory `SCREEN`
/// (8 rows of 16 bits), a clock on input `TICK` (a tick every 4 instructions), a 4-key keypad on input `KEYS`,
/// a beeper on port `BEEP`. Registers X (4 bits), Y (3 bits), LAST (the last tick count seen). A step that sees
/// a new tick count (`TICK != LAST`) paints row Y up to column X (`SCREEN[Y] = (2 << X) - 1`), moves X on (and Y
/// at the end of a row), and sets the beeper to "any key pressed"; other steps change nothing. The step after
/// the one that painted the last pixel (X = 15, Y = 7) halts: 128 ticks fill the screen.
pub fn paint8() -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let (x, y, last) = (b.reg(0, 4), b.reg(1, 3), b.reg(2, 8));
    let (tick, keys) = (b.input(0, 8), b.input(1, 4));
    let same = b.eq(tick, last);
    let new = b.not(same);
    // Row Y up to column X: (2 << X) - 1 in 16 bits.
    let two = b.konst(16, 2);
    let sh = b.shift(ShiftKind::Shl, two, x);
    let one16 = b.konst(16, 1);
    let row = b.sub(sh, one16);
    b.mem_write(0, y, row, new);
    let one4 = b.konst(4, 1);
    let x1 = b.add(x, one4);
    let xn = b.select(new, x1, x);
    b.set_next(0, xn);
    let k15 = b.konst(4, 15);
    let end_row = b.eq(x, k15);
    let one3 = b.konst(3, 1);
    let y1 = b.add(y, one3);
    let y_adv = b.select(end_row, y1, y);
    let yn = b.select(new, y_adv, y);
    b.set_next(1, yn);
    let lastn = b.select(new, tick, last);
    b.set_next(2, lastn);
    let zero4 = b.konst(4, 0);
    let none = b.eq(keys, zero4);
    let any = b.not(none);
    b.output(0, any, new);
    // DONE is set by the step that paints the last pixel; the next step halts.
    let done = b.reg(3, 1);
    let k7 = b.konst(3, 7);
    let last_row = b.eq(y, k7);
    let fin = b.all(&[new, end_row, last_row]);
    let done_n = b.or(done, fin);
    b.set_next(3, done_n);
    b.halt(done);
    MachineDesc::new(
        "paint8",
        vec![
            RegisterDesc { name: "X".into(), width: 4 },
            RegisterDesc { name: "Y".into(), width: 3 },
            RegisterDesc { name: "LAST".into(), width: 8 },
            RegisterDesc { name: "DONE".into(), width: 1 },
        ],
        vec![MemoryDesc { name: "SCREEN".into(), word_width: 16, addr_width: 3 }],
        vec![PortDesc::new("BEEP", 1)],
        b.finish(),
    )
    .with_inputs(vec![PortDesc::new("TICK", 8), PortDesc::new("KEYS", 4)])
    .with_devices(vec![
        DeviceDesc::Display { memory: "SCREEN".into(), width: 16, height: 8 },
        DeviceDesc::Ticks { input: "TICK".into(), instructions: 4 },
        DeviceDesc::Keypad { input: "KEYS".into(), keys: 4 },
        DeviceDesc::Beeper { port: "BEEP".into() },
    ])
}

/// The fronts of the test machines: registered in the binary like any machine (configs/acc8.toml,
/// configs/io8.toml), through the generic front of [`crate::front::GenericMachine`].
pub mod fronts {
    use crate::front::{check_keys, FrontError, GenericMachine, Machine, MachineFront, Program};
    use crate::MachineFace;

    /// acc8: programs are raw 256-byte images of M; the demo, `stress`, is [`super::acc8_stress_program`]`(1)`
    /// (every opcode, indirect loads, self-modifying stores).
    pub struct Acc8Front;

    fn acc8_demo() -> Program {
        Program { name: "stress".into(), bytes: super::acc8_stress_program(1), expected_console: None }
    }

    impl MachineFront for Acc8Front {
        fn isa(&self) -> &'static str {
            "acc8"
        }
        fn summary(&self) -> &'static str {
            "8-bit accumulator test machine: 256 bytes of memory, 22 opcodes, an OUT port"
        }
        fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
            check_keys("acc8", section, &[])?;
            Ok(Box::new(GenericMachine::new(super::acc8(), Some(acc8_demo()))))
        }
        fn from_face(&self, face: &MachineFace, _program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
            Ok(Box::new(GenericMachine::of_face(face.clone(), Some(acc8_demo()))))
        }
    }

    /// paint8: no program (its demo, `paint`, is empty): the generic host serves its display, clock, keypad
    /// and beeper ([`super::paint8`]).
    pub struct Paint8Front;

    fn paint8_demo() -> Program {
        Program { name: "paint".into(), bytes: Vec::new(), expected_console: None }
    }

    impl MachineFront for Paint8Front {
        fn isa(&self) -> &'static str {
            "paint8"
        }
        fn summary(&self) -> &'static str {
            "generic-devices test machine: a 16 x 8 display, a clock, a 4-key keypad, a beeper"
        }
        fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
            check_keys("paint8", section, &[])?;
            Ok(Box::new(GenericMachine::new(super::paint8(), Some(paint8_demo()))))
        }
        fn from_face(&self, face: &MachineFace, _program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
            Ok(Box::new(GenericMachine::of_face(face.clone(), Some(paint8_demo()))))
        }
    }

    /// io8: no program (it has no memory; the demo, `devices`, is empty): its devices inject DATA and raise
    /// IRQ on the schedule of [`super::io8_devices`]; `[machine] limit = N` (default 200) sets the step it
    /// halts at.
    pub struct Io8Front;

    fn io8_demo() -> Program {
        Program { name: "devices".into(), bytes: Vec::new(), expected_console: None }
    }

    impl MachineFront for Io8Front {
        fn isa(&self) -> &'static str {
            "io8"
        }
        fn summary(&self) -> &'static str {
            "host-interface test machine: DATA input port, IRQ line, OUT port"
        }
        fn configure(&self, section: &toml::Table) -> Result<Box<dyn Machine>, FrontError> {
            check_keys("io8", section, &["limit"])?;
            let limit = match section.get("limit") {
                None => 200,
                Some(v) => v.as_integer().and_then(|n| u8::try_from(n).ok()).ok_or_else(|| FrontError::new(format!("[machine] limit = {v}: an integer from 0 to 255")))?,
            };
            let mut m = GenericMachine::new(super::io8(limit), Some(io8_demo()));
            m.schedule = Some(super::io8_devices);
            Ok(Box::new(m))
        }
        fn from_face(&self, face: &MachineFace, _program: Option<&Program>) -> Result<Box<dyn Machine>, FrontError> {
            let mut m = GenericMachine::of_face(face.clone(), Some(io8_demo()));
            m.schedule = Some(super::io8_devices);
            Ok(Box::new(m))
        }
    }
}

//! The reference interpreter, written from the specification in [`crate::isa`] (never from the circuit). It
//! checks the circuit and the woven network step by step; it never drives them.

use crate::error::LoadError;
use crate::isa::{COUNTER_REG, DIV_ITERATIONS, DIV_STEPS, Fault, FaultKind, Instr, Opcode, PROGRAM_WORDS, REGS, Simt4Config};

/// How a step ended the run, if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Halt,
    Fault(Fault),
}

/// One lane's division registers (see [`crate::isa`]): `DQ` (the dividend shifting out, the quotient shifting
/// in) and `DR` (the partial remainder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DivRegs {
    /// `DQ` (32 bits).
    pub q: u32,
    /// `DR` (32 bits).
    pub r: u32,
}

/// The whole machine state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Simt {
    pub cfg: Simt4Config,
    /// Program words (decoded lazily: an illegal word faults when executed).
    pub program: Vec<u64>,
    pub pc: u32,
    pub warp: u32,
    pub busy: u32,
    /// Registers: `regs[lane][warp * 32 + r]`.
    pub regs: Vec<Vec<u32>>,
    pub shared: Vec<u32>,
    pub global: Vec<u32>,
    /// Saved PCs of the warps (`BAR`).
    pub wpc: Vec<u32>,
    /// The division registers of each lane ([`DivRegs`]), changed only by division micro-steps.
    pub div: Vec<DivRegs>,
    /// Steps taken, instructions retired (a micro-coded instruction retires at its last step).
    pub steps: u64,
    pub instructions: u64,
    pub stopped: Option<Stop>,
}

impl Simt {
    /// A machine of shape `cfg` with `program` at row 0 and `global` words from address 0; the rest zero.
    /// Errors: the program or the data does not fit.
    pub fn new(cfg: Simt4Config, program: &[u64], global: &[u32]) -> Result<Simt, LoadError> {
        cfg.validate()?;
        if program.len() > PROGRAM_WORDS as usize {
            return Err(LoadError::ProgramTooLong { len: program.len(), max: PROGRAM_WORDS });
        }
        if global.len() > cfg.global_words as usize {
            return Err(LoadError::GlobalTooSmall { need: global.len(), have: cfg.global_words });
        }
        let mut p = program.to_vec();
        p.resize(PROGRAM_WORDS as usize, 0);
        let mut g = global.to_vec();
        g.resize(cfg.global_words as usize, 0);
        Ok(Simt {
            cfg,
            program: p,
            pc: 0,
            warp: 0,
            busy: 0,
            regs: vec![vec![0; (cfg.warps * REGS) as usize]; cfg.lanes as usize],
            shared: vec![0; cfg.shared_words as usize],
            global: g,
            wpc: vec![0; cfg.warps as usize],
            div: vec![DivRegs::default(); cfg.lanes as usize],
            steps: 0,
            instructions: 0,
            stopped: None,
        })
    }

    fn r(&self, lane: u32, reg: u8) -> u32 {
        self.regs[lane as usize][(self.warp * REGS + u32::from(reg)) as usize]
    }
    /// A multi-step instruction finished its sub-step `k` of `n` (a division's step, a serial access's lane):
    /// `busy` moves to the next sub-step, and `true` says the instruction stays (same PC, not retired); after
    /// the last, `busy` returns to 0 and the instruction retires.
    fn next_substep(&mut self, k: u32, n: u32) -> bool {
        self.busy = if k + 1 < n { k + 1 } else { 0 };
        self.busy != 0
    }

    fn set(&mut self, lane: u32, reg: u8, v: u32) {
        let w = self.warp;
        self.regs[lane as usize][(w * REGS + u32::from(reg)) as usize] = v;
    }
    /// The activity counter of `lane` in the running warp.
    pub fn counter(&self, lane: u32) -> u32 {
        self.r(lane, COUNTER_REG as u8) & 0xFF
    }
    /// Whether `lane` of the running warp is active.
    pub fn active(&self, lane: u32) -> bool {
        self.counter(lane) == 0
    }

    /// One machine step. Returns the stop, if this step ended the run (a `HALT`, or a fault: the fault's
    /// step changes nothing else).
    pub fn step(&mut self) -> Option<Stop> {
        if let Some(s) = self.stopped {
            return Some(s);
        }
        self.steps += 1;
        let word = self.program[self.pc as usize];
        let Some(i) = Instr::decode(word) else {
            let f = Fault { kind: FaultKind::Illegal, pc: self.pc, lane: 0, warp: self.warp, index: (word & 63) as u32 };
            self.stopped = Some(Stop::Fault(f));
            return self.stopped;
        };
        let lanes = self.cfg.lanes;
        let b_of = |s: &Simt, l: u32| if i.imm_b { i.imm } else { s.r(l, i.rs2) };
        let mut next_pc = (self.pc + 1) % PROGRAM_WORDS;
        let mut retire = true;
        match i.op {
            o if o.is_alu() => {
                for l in 0..lanes {
                    if !self.active(l) {
                        continue;
                    }
                    let (a, b) = (self.r(l, i.rs1), b_of(self, l));
                    let v = match o {
                        Opcode::Add => a.wrapping_add(b),
                        Opcode::Sub => a.wrapping_sub(b),
                        Opcode::Mul => a.wrapping_mul(b),
                        Opcode::Mulhi => ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32,
                        Opcode::Mulhu => ((u64::from(a) * u64::from(b)) >> 32) as u32,
                        Opcode::And => a & b,
                        Opcode::Or => a | b,
                        Opcode::Xor => a ^ b,
                        Opcode::Shl => if b >= 32 { 0 } else { a << b },
                        Opcode::Shr => if b >= 32 { 0 } else { a >> b },
                        Opcode::Sra => ((a as i32) >> b.min(31)) as u32,
                        Opcode::Slt => u32::from((a as i32) < (b as i32)),
                        Opcode::Sltu => u32::from(a < b),
                        Opcode::Seq => u32::from(a == b),
                        Opcode::Sne => u32::from(a != b),
                        Opcode::Min => (a as i32).min(b as i32) as u32,
                        Opcode::Max => (a as i32).max(b as i32) as u32,
                        Opcode::Minu => a.min(b),
                        Opcode::Maxu => a.max(b),
                        Opcode::Cmov => if a != 0 { b } else { self.r(l, i.rd) },
                        Opcode::Tid => self.warp * lanes + l,
                        _ => unreachable!("is_alu"),
                    };
                    self.set(l, i.rd, v);
                }
            }
            o if o.is_div() => {
                let k = self.busy;
                let signed = o.is_signed_div();
                let mag = |x: u32| if signed && (x as i32) < 0 { x.wrapping_neg() } else { x };
                for l in 0..lanes {
                    if !self.active(l) {
                        continue;
                    }
                    let (a, b) = (self.r(l, i.rs1), b_of(self, l));
                    let dr = &mut self.div[l as usize];
                    if k == 0 {
                        *dr = DivRegs { q: mag(a), r: 0 };
                    } else if k <= DIV_ITERATIONS {
                        let t = u64::from(dr.r) << 2 | u64::from(dr.q >> 30);
                        let d = u64::from(mag(b));
                        let q = if t >= 3 * d { 3 } else if t >= 2 * d { 2 } else if t >= d { 1 } else { 0 };
                        dr.r = (t - q * d) as u32;
                        dr.q = dr.q << 2 | q as u32;
                    } else {
                        let (dq, rr) = (dr.q, dr.r);
                        let v = match o {
                            Opcode::Divu => dq,
                            Opcode::Remu => rr,
                            Opcode::Div => {
                                if ((a ^ b) as i32) < 0 && b != 0 { dq.wrapping_neg() } else { dq }
                            }
                            _ => if (a as i32) < 0 { rr.wrapping_neg() } else { rr },
                        };
                        self.set(l, i.rd, v);
                    }
                }
                if self.next_substep(k, DIV_STEPS) {
                    (next_pc, retire) = (self.pc, false);
                }
            }
            o if o.is_memory() => {
                let base = i.imm & 0xFFFF;
                let len = i.imm >> 16;
                let check = |s: &Simt, l: u32| -> Result<u32, Fault> {
                    let idx = s.r(l, i.rs1);
                    if idx < len {
                        Ok(base + idx)
                    } else {
                        Err(Fault { kind: FaultKind::Bounds, pc: s.pc, lane: l, warp: s.warp, index: idx })
                    }
                };
                let size = if o.is_shared() { self.cfg.shared_words } else { self.cfg.global_words };
                if o.is_serial() {
                    let l = self.busy;
                    if self.active(l) {
                        match check(self, l) {
                            Err(f) => {
                                self.stopped = Some(Stop::Fault(f));
                                return self.stopped;
                            }
                            Ok(addr) => {
                                let addr = (addr % size) as usize;
                                let data = self.r(l, i.rs2);
                                let mem = if o.is_shared() { &mut self.shared } else { &mut self.global };
                                let old = mem[addr];
                                mem[addr] = if matches!(o, Opcode::Atoms | Opcode::Atomg) { old.wrapping_add(data) } else { data };
                                if matches!(o, Opcode::Atoms | Opcode::Atomg) {
                                    self.set(l, i.rd, old);
                                }
                            }
                        }
                    }
                    if self.next_substep(l, lanes) {
                        (next_pc, retire) = (self.pc, false);
                    }
                } else {
                    let mut vals = Vec::new();
                    for l in 0..lanes {
                        if !self.active(l) {
                            continue;
                        }
                        match check(self, l) {
                            Err(f) => {
                                self.stopped = Some(Stop::Fault(f));
                                return self.stopped;
                            }
                            Ok(addr) => {
                                let addr = (addr % size) as usize;
                                vals.push((l, if o.is_shared() { self.shared[addr] } else { self.global[addr] }));
                            }
                        }
                    }
                    for (l, v) in vals {
                        self.set(l, i.rd, v);
                    }
                }
            }
            Opcode::If | Opcode::Else | Opcode::Endif | Opcode::Brk | Opcode::Creset => {
                for l in 0..lanes {
                    let c = self.counter(l);
                    let a = self.r(l, i.rs1);
                    let c2 = match i.op {
                        Opcode::If => {
                            if c == 0 {
                                u32::from(!(a != 0 || i.imm & 1 == 1))
                            } else {
                                c + 1
                            }
                        }
                        Opcode::Else => match c {
                            0 => 1,
                            1 => 0,
                            c => c,
                        },
                        Opcode::Endif => c.saturating_sub(1),
                        Opcode::Brk => if c == 0 && a == 0 { i.imm & 0xFF } else { c },
                        _ => u32::from(self.warp * lanes + l >= i.imm),
                    };
                    self.set(l, COUNTER_REG as u8, c2 & 0xFF);
                }
            }
            Opcode::Jmp => next_pc = i.imm % PROGRAM_WORDS,
            Opcode::Jnone | Opcode::Jany => {
                let any = (0..lanes).any(|l| self.active(l));
                if any == (i.op == Opcode::Jany) {
                    next_pc = i.imm % PROGRAM_WORDS;
                }
            }
            Opcode::Bar => {
                let n = i.imm;
                if n > 1 {
                    self.wpc[self.warp as usize] = next_pc;
                    self.warp = (self.warp + 1) % n.min(self.cfg.warps);
                    next_pc = self.wpc[self.warp as usize];
                }
            }
            Opcode::Halt => {
                self.instructions += 1;
                self.stopped = Some(Stop::Halt);
                return self.stopped;
            }
            _ => unreachable!("every opcode is handled"),
        }
        if retire {
            self.instructions += 1;
        }
        self.pc = next_pc;
        None
    }

    /// Run until the machine stops or `max_steps` steps have run (`None`: the bound came first).
    pub fn run(&mut self, max_steps: u64) -> Option<Stop> {
        while self.steps < max_steps {
            if let Some(s) = self.step() {
                return Some(s);
            }
        }
        self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Opcode::*;

    fn run(prog: &[Instr], global: &[u32]) -> Simt {
        let words: Vec<u64> = prog.iter().map(|i| i.encode()).collect();
        let mut m = Simt::new(Simt4Config::default(), &words, global).unwrap();
        assert_eq!(m.run(10_000), Some(Stop::Halt));
        m
    }

    /// A program of the corpus ([`crate::corpus`]), which the circuit lockstep runs too.
    fn corpus(name: &str) -> Vec<Instr> {
        crate::corpus::program(name).unwrap_or_else(|| panic!("no corpus program {name}"))
    }

    #[test]
    fn lanes_add_and_store_in_lane_order() {
        // out[tid] = tid * 3 + 1; then every lane adds 1 to out[40] atomically, old values to out[44 + tid].
        let m = run(&corpus("lanes_add_and_store_in_lane_order"), &[]);
        assert_eq!(&m.global[..4], &[1, 4, 7, 10]);
        assert_eq!(&m.global[40..48], &[4, 0, 0, 0, 0, 1, 2, 3]);
        assert_eq!(m.instructions, 10);
        assert_eq!(m.steps, 10 + 3 * 3);
    }

    #[test]
    fn divergence_with_counters() {
        // if (tid & 1) x = 10; else { if (tid == 2) x = 20; else x = 30; }  out[tid] = x
        let m = run(&corpus("divergence_with_counters"), &[]);
        assert_eq!(&m.global[..4], &[30, 10, 20, 10]);
        assert!((0..4).all(|l| m.counter(l) == 0));
    }

    #[test]
    fn loop_with_per_lane_trip_counts() {
        // s = 0; for (i = 0; i < tid + 1; i++) s += i;  out[tid] = s
        let m = run(&corpus("loop_with_per_lane_trip_counts"), &[]);
        assert_eq!(&m.global[..4], &[0, 1, 3, 6]);
    }

    #[test]
    fn barrier_rotates_warps_and_bounds_fault() {
        // 8 threads, 2 warps: shared[tid] = tid; BAR; out[tid] = shared[7 - tid]
        let m = run(&corpus("barrier_rotates_warps"), &[]);
        assert_eq!(&m.global[..8], &[7, 6, 5, 4, 3, 2, 1, 0]);

        let words: Vec<u64> = corpus("bounds_fault_lane_3").iter().map(|i| i.encode()).collect();
        let mut m = Simt::new(Simt4Config::default(), &words, &[]).unwrap();
        assert_eq!(m.run(100), Some(Stop::Fault(Fault { kind: FaultKind::Bounds, pc: 1, lane: 3, warp: 0, index: 3 })));
        assert!(corpus("illegal_empty_program").is_empty());
        let mut m = Simt::new(Simt4Config::default(), &[], &[]).unwrap();
        assert_eq!(m.run(100), Some(Stop::Fault(Fault { kind: FaultKind::Illegal, pc: 0, lane: 0, warp: 0, index: 0 })));
    }

    #[test]
    fn alu_edge_cases() {
        // r2..r9: INT_MIN >> 40 (arithmetic), << 32, mulhi(INT_MIN, -1) = high word of 2^31 = 0,
        // mulhu(2^31, 4) = 2, min, minu, cmov with a = 0 (keeps 0) and a != 0; lane 0's at out[32 k].
        let m = run(&corpus("alu_edge_cases"), &[]);
        let g: Vec<u32> = (0..8).map(|k| m.global[k * 32]).collect();
        assert_eq!(g, vec![0xFFFF_FFFF, 0, 0, 2, 0x8000_0000, 1, 0, 5]);
    }
    /// The architectural result of a division op (the rules of [`crate::isa`]), from Rust's arithmetic.
    fn want(op: Opcode, a: u32, b: u32) -> u32 {
        let (sa, sb) = (a as i32, b as i32);
        match op {
            Div if b == 0 => u32::MAX,
            Div => sa.wrapping_div(sb) as u32,
            Rem if b == 0 => a,
            Rem => sa.wrapping_rem(sb) as u32,
            Divu => a.checked_div(b).unwrap_or(u32::MAX),
            _ => a.checked_rem(b).unwrap_or(a),
        }
    }

    const EDGE: [u32; 16] = [
        0, 1, 2, 3, 7, 100, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFF_FFFF, 0xFFFF_FFFE, 0xFFFF_FFF9,
        0xFFFF_FF9C, 0x1234_5678, 0xDEAD_BEEF, 0x0001_0000,
    ];

    #[test]
    fn division_edge_cases_register_and_immediate() {
        // Lane l divides EDGE[4 * j + l] by every edge value b, as register and as immediate.
        for op in [Div, Divu, Rem, Remu] {
            for j in 0..4 {
                for b in EDGE {
                    let p = [
                        Instr::rrr(Tid, 1, 0, 0),
                        Instr::mem(Ldg, 2, 1, 0, 0, 4),
                        Instr::rri(Add, 3, 0, b),
                        Instr::rrr(op, 4, 2, 3),
                        Instr::rri(op, 5, 2, b),
                        Instr::rrr(op, 2, 2, 2), // rd = rs1 = rs2
                        Instr::mem(Stg, 0, 1, 4, 4, 4),
                        Instr::mem(Stg, 0, 1, 5, 8, 4),
                        Instr::mem(Stg, 0, 1, 2, 12, 4),
                        Instr::new(Halt),
                    ];
                    let g: Vec<u32> = EDGE[4 * j..4 * j + 4].to_vec();
                    let m = run(&p, &g);
                    for l in 0..4 {
                        let a = g[l];
                        assert_eq!(m.global[4 + l], want(op, a, b), "{op:?} {a:#x} / {b:#x} (register)");
                        assert_eq!(m.global[8 + l], want(op, a, b), "{op:?} {a:#x} / {b:#x} (immediate)");
                        assert_eq!(m.global[12 + l], want(op, a, a), "{op:?} {a:#x} / itself");
                    }
                    // 3 one-step instructions, 3 divisions, 3 stores, HALT
                    assert_eq!(m.instructions, 10);
                    assert_eq!(m.steps, 4 + 3 * u64::from(DIV_STEPS) + 3 * 4);
                }
            }
        }
        // the named rules
        assert_eq!(want(Div, 0x8000_0000, u32::MAX), 0x8000_0000);
        assert_eq!(want(Rem, 0x8000_0000, u32::MAX), 0);
        assert_eq!(want(Div, (-7i32) as u32, 2), (-3i32) as u32);
        assert_eq!(want(Rem, (-7i32) as u32, 2), (-1i32) as u32);
        assert_eq!(want(Rem, 7, (-2i32) as u32), 1);
        assert_eq!(want(Div, (-5i32) as u32, 0), u32::MAX);
        assert_eq!(want(Rem, (-5i32) as u32, 0), (-5i32) as u32);
    }

    #[test]
    fn division_random_operands() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x as u32;
            // small, or shifted down to any magnitude
            if x >> 60 < 4 { v % 16 } else { v >> (x >> 32) % 32 }
        };
        for _ in 0..200 {
            let (a, b): ([u32; 4], [u32; 4]) = ([next(), next(), next(), next()], [next(), next(), next(), next()]);
            let mut g = a.to_vec();
            g.extend(b);
            for op in [Div, Divu, Rem, Remu] {
                let p = [
                    Instr::rrr(Tid, 1, 0, 0),
                    Instr::mem(Ldg, 2, 1, 0, 0, 4),
                    Instr::mem(Ldg, 3, 1, 0, 4, 4),
                    Instr::rri(Sub, 6, 0, 0),
                    Instr::rrr(op, 6, 2, 3),
                    Instr::mem(Stg, 0, 1, 6, 8, 4),
                    Instr::new(Halt),
                ];
                let m = run(&p, &g);
                for l in 0..4 {
                    assert_eq!(m.global[8 + l], want(op, a[l], b[l]), "{op:?} {:#x} / {:#x}", a[l], b[l]);
                }
            }
        }
    }

    #[test]
    fn division_micro_steps_and_inactive_lanes() {
        // Lanes 1 and 3 inactive: they keep rd and their division registers; BUSY counts 0..=17 with PC held.
        let p = [
            Instr::rrr(Tid, 1, 0, 0),
            Instr::rri(Add, 4, 0, 77),
            Instr::rri(And, 2, 1, 1),
            Instr::rri(Seq, 2, 2, 0),
            Instr::rrr(If, 0, 2, 0),
            Instr::rri(Add, 3, 1, 100),
            Instr::rri(Div, 4, 3, 7),
            Instr::new(Endif),
            Instr::new(Halt),
        ];
        let words: Vec<u64> = p.iter().map(|i| i.encode()).collect();
        let mut m = Simt::new(Simt4Config::default(), &words, &[]).unwrap();
        for _ in 0..6 {
            assert_eq!(m.step(), None);
        }
        for k in 0..DIV_STEPS {
            assert_eq!((m.pc, m.busy), (6, k));
            let before = m.instructions;
            assert_eq!(m.step(), None);
            assert_eq!(m.instructions, before + u64::from(k + 1 == DIV_STEPS));
            if k == 0 {
                assert_eq!(m.div[0], DivRegs { q: 100, r: 0 });
                assert_eq!(m.div[2], DivRegs { q: 102, r: 0 });
            }
        }
        assert_eq!((m.pc, m.busy), (7, 0));
        assert_eq!(m.div[0].q, 14);
        assert_eq!(m.div[0].r, 2);
        assert_eq!(m.div[1], DivRegs::default());
        assert_eq!(m.div[3], DivRegs::default());
        let rd: Vec<u32> = (0..4).map(|l| m.regs[l][4]).collect();
        assert_eq!(rd, vec![14, 77, 14, 77]);
        assert_eq!(m.run(100), Some(Stop::Halt));
        assert_eq!(m.steps, 9 + u64::from(DIV_STEPS) - 1);
    }

    #[test]
    fn division_of_large_unsigned_and_by_large_divisors() {
        let p = [
            Instr::rri(Add, 1, 0, 0xFFFF_FFFF),
            Instr::rri(Divu, 2, 1, 0xFFFF_FFFE), // 1
            Instr::rri(Remu, 3, 1, 0xFFFF_FFFE), // 1
            Instr::rri(Divu, 4, 1, 0x8000_0000), // 1
            Instr::rri(Remu, 5, 1, 0x8000_0000), // 0x7FFF_FFFF
            Instr::rri(Divu, 6, 1, 3),           // 0x5555_5555
            Instr::rri(Remu, 7, 1, 0),           // x % 0 = x
            Instr::rri(Divu, 8, 1, 0),           // all ones
            Instr::rri(Div, 9, 1, 0x8000_0000),  // -1 / INT_MIN = 0
            Instr::rri(Rem, 10, 1, 0x8000_0000), // -1
            Instr::new(Halt),
        ];
        let m = run(&p, &[]);
        let r: Vec<u32> = (2..=10).map(|k| m.regs[2][k]).collect();
        assert_eq!(r, vec![1, 1, 1, 0x7FFF_FFFF, 0x5555_5555, u32::MAX, u32::MAX, 0, u32::MAX]);
    }
}


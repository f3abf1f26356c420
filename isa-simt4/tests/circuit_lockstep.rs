//! The SIMT4 circuit against the reference interpreter, step for step: every program runs on both
//! `isa_api::Reference` (the circuit evaluated word by word) and [`isa_simt4::Simt`]; after EVERY step the
//! whole state (PC, WARP, BUSY, STOP, every lane's division registers DQ/DR and register file, SHARED, GLOBAL,
//! WPC) and the step's halt and fault are compared. Programs: those of the interpreter's tests, hand-written
//! edge cases and faults, the division ops on edge operands, and seeded random programs (every ALU and
//! division op, nested IF/ELSE/ENDIF/BRK, loops with per-lane trip counts, loads,
//! stores and atomics, BAR over 2-4 warps). Also the weaver's plan of the machine (layers, hidden, parameters).

use isa_api::Reference;
use isa_simt4::circuit::{mem, reg, simt4_machine};
use isa_simt4::isa::Opcode::*;
use isa_simt4::{Fault, FaultKind, Instr, Opcode, Simt, Simt4Config, Stop};

/// The outcome of one lockstep run.
#[derive(Debug, Default)]
struct Run {
    steps: u64,
    positions: u64,
    mismatches: Vec<String>,
    stop: Option<Stop>,
    /// Steps per opcode executed (index: opcode number), and steps where some lanes were active and some not.
    ops: Vec<u64>,
    mixed: u64,
}

fn cfg(lanes: u32, warps: u32) -> Simt4Config {
    Simt4Config { lanes, warps, shared_words: 128, global_words: 4096 }
}

/// Run `words` with `global` on both machines for at most `max_steps` steps, comparing after every step.
fn lockstep(c: &Simt4Config, words: &[u64], global: &[u32], max_steps: u64) -> Run {
    let desc = simt4_machine(c).expect("machine");
    let mut r = Reference::new(desc);
    r.load(mem::PROG, 0, words);
    r.load(mem::GLOBAL, 0, &global.iter().map(|v| u64::from(*v)).collect::<Vec<_>>());
    let mut sim = Simt::new(*c, words, global).expect("fits");
    let mut run = Run { ops: vec![0; 64], ..Default::default() };
    let mut bad = |run: &mut Run, what: String| {
        if run.mismatches.len() < 20 {
            run.mismatches.push(what);
        } else if run.mismatches.len() == 20 {
            run.mismatches.push("...".into());
        }
    };
    // The reset states agree.
    compare(&r, &sim, &mut run, &mut bad);
    for _ in 0..max_steps {
        run.ops[(sim.program[sim.pc as usize] & 63) as usize] += 1;
        let active = (0..c.lanes).filter(|l| sim.active(*l)).count() as u32;
        run.mixed += u64::from(active > 0 && active < c.lanes);
        let stop = sim.step();
        let o = r.step();
        run.steps += 1;
        let step = run.steps;
        run.positions += 1;
        match stop {
            Some(Stop::Halt) => {
                if !o.halted {
                    bad(&mut run, format!("step {step}: the interpreter halts, the circuit does not"));
                }
                run.stop = stop;
                break;
            }
            Some(Stop::Fault(f)) => {
                run.positions += 1;
                if o.halted || o.outputs != vec![(0, f.word())] {
                    bad(&mut run, format!("step {step}: fault {f:?} ({:#x}); circuit halted {} outputs {:x?}", f.word(), o.halted, o.outputs));
                }
                compare(&r, &sim, &mut run, &mut bad);
                // the next step halts
                let o2 = r.step();
                run.positions += 1;
                if !o2.halted {
                    bad(&mut run, format!("step {}: the circuit does not halt after its fault", step + 1));
                }
                run.stop = stop;
                break;
            }
            None => {
                run.positions += 1;
                if o.halted || !o.outputs.is_empty() {
                    bad(&mut run, format!("step {step}: circuit halted {} outputs {:x?}, the interpreter runs on", o.halted, o.outputs));
                }
                compare(&r, &sim, &mut run, &mut bad);
            }
        }
        if run.mismatches.len() > 20 {
            break;
        }
    }
    run
}

/// Compare the whole state; every compared value counts as one position.
fn compare(r: &Reference, sim: &Simt, run: &mut Run, bad: &mut impl FnMut(&mut Run, String)) {
    let st = &r.state;
    let step = run.steps;
    let regs = [(reg::PC, u64::from(sim.pc), "PC"), (reg::WARP, u64::from(sim.warp), "WARP"), (reg::BUSY, u64::from(sim.busy), "BUSY"), (reg::STOP, u64::from(matches!(sim.stopped, Some(Stop::Fault(_)))), "STOP")];
    let mut regs: Vec<(u32, u64, String)> = regs.iter().map(|(i, v, n)| (*i, *v, n.to_string())).collect();
    for (l, d) in sim.div.iter().enumerate() {
        let l = l as u32;
        regs.push((reg::div_q(l), u64::from(d.q), format!("DQ{l}")));
        regs.push((reg::div_r(l), u64::from(d.r), format!("DR{l}")));
    }
    for (i, v, name) in regs {
        run.positions += 1;
        if st.regs[i as usize] != v {
            bad(run, format!("step {step}: {name} circuit {:#x} interpreter {v:#x}", st.regs[i as usize]));
        }
    }
    let mut cmp_mem = |run: &mut Run, name: String, got: &[u64], want: &[u32]| {
        run.positions += got.len() as u64;
        if got.len() < want.len() {
            bad(run, format!("step {step}: memory {name} has {} rows, the interpreter {}", got.len(), want.len()));
            return;
        }
        for (k, g) in got.iter().enumerate() {
            let w = want.get(k).copied().map_or(0, u64::from);
            if *g != w {
                bad(run, format!("step {step}: {name}[{k}] circuit {g:#x} interpreter {w:#x}"));
            }
        }
    };
    for l in 0..sim.cfg.lanes {
        cmp_mem(run, format!("R{l}"), &st.mems[mem::lane(l) as usize], &sim.regs[l as usize]);
    }
    cmp_mem(run, "SHARED".into(), &st.mems[mem::SHARED as usize], &sim.shared);
    cmp_mem(run, "GLOBAL".into(), &st.mems[mem::GLOBAL as usize], &sim.global);
    cmp_mem(run, "WPC".into(), &st.mems[mem::WPC as usize], &sim.wpc);
}

fn enc(p: &[Instr]) -> Vec<u64> {
    p.iter().map(|i| i.encode()).collect()
}

/// Totals over many runs.
#[derive(Default)]
struct Totals {
    runs: u64,
    steps: u64,
    positions: u64,
    halts: u64,
    faults: u64,
    mismatches: Vec<String>,
    ops: Vec<u64>,
    mixed: u64,
}

impl Totals {
    fn add(&mut self, what: &str, run: Run) {
        self.runs += 1;
        self.ops.resize(64, 0);
        for (k, n) in run.ops.iter().enumerate() {
            self.ops[k] += n;
        }
        self.mixed += run.mixed;
        self.steps += run.steps;
        self.positions += run.positions;
        match run.stop {
            Some(Stop::Halt) => self.halts += 1,
            Some(Stop::Fault(_)) => self.faults += 1,
            None => {}
        }
        for m in run.mismatches {
            if self.mismatches.len() < 40 {
                self.mismatches.push(format!("{what}: {m}"));
            }
        }
    }
    fn check(&self, name: &str) {
        eprintln!(
            "{name}: {} runs, {} steps, {} halts, {} faults, {} positions compared, {} mismatches",
            self.runs,
            self.steps,
            self.halts,
            self.faults,
            self.positions,
            self.mismatches.len()
        );
        assert!(self.mismatches.is_empty(), "{name}: mismatches:\n{}", self.mismatches.join("\n"));
        assert!(self.positions > 0);
    }
    /// Every opcode ran (`except` aside), and divergence happened.
    fn check_coverage(&self, name: &str, except: &[Opcode]) {
        let missing: Vec<Opcode> = Opcode::ALL.iter().copied().filter(|o| self.ops[*o as usize] == 0 && !except.contains(o)).collect();
        let counts: Vec<String> = Opcode::ALL.iter().map(|o| format!("{}:{}", o.mnemonic(), self.ops[*o as usize])).collect();
        eprintln!("  {name}: steps per opcode {}; {} steps with diverged lanes", counts.join(" "), self.mixed);
        assert!(missing.is_empty(), "{name}: opcodes never executed: {missing:?}");
        assert!(self.mixed * 10 > self.steps, "{name}: only {} of {} steps diverged", self.mixed, self.steps);
    }
}

/// Hand-written edge cases: faults in every kind of memory op, micro-steps, counter words with high bits,
/// odd BAR counts, wrapping addresses.
fn edge_programs() -> Vec<(&'static str, Vec<Instr>, Vec<u32>)> {
    let g: Vec<u32> = (0..64).map(|k| k * 7 + 3).collect();
    vec![
        // out-of-bounds at lane 2 in each memory op
        ("lds_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Lds, 2, 1, 0, 5, 2), Instr::new(Halt)], vec![]),
        ("ldg_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Ldg, 2, 1, 0, 5, 2), Instr::new(Halt)], g.clone()),
        ("sts_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Sts, 0, 1, 1, 5, 2), Instr::new(Halt)], vec![]),
        ("stg_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Stg, 0, 1, 1, 5, 2), Instr::new(Halt)], vec![]),
        ("atoms_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Atoms, 3, 1, 1, 5, 2), Instr::new(Halt)], vec![]),
        ("atomg_oob_lane2", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Atomg, 3, 1, 1, 5, 2), Instr::new(Halt)], g.clone()),
        // a negative index is out of bounds; an inactive out-of-bounds lane does not fault
        (
            "inactive_lane_oob_ok_then_negative_faults",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(Sltu, 2, 1, 2),
                Instr::rrr(If, 0, 2, 0),
                Instr::mem(Ldg, 3, 1, 0, 0, 2),
                Instr::mem(Stg, 0, 1, 3, 10, 2),
                Instr::mem(Atomg, 4, 1, 3, 10, 2),
                Instr::new(Endif),
                Instr::rri(Sub, 5, 1, 1),
                Instr::mem(Ldg, 6, 5, 0, 0, 100),
                Instr::new(Halt),
            ],
            g.clone(),
        ),
        // counter word with high bits set (a program wrote r31): IF/ELSE/ENDIF rewrite it
        (
            "counter_high_bits",
            vec![
                Instr::rri(Add, 31, 0, 0x1234_5600),
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(Add, 2, 0, 7),
                Instr::rrr(If, 0, 0, 0),
                Instr::rri(Add, 2, 0, 9),
                Instr::new(Endif),
                Instr::rri(Add, 31, 0, 0x0000_0100),
                Instr::new(Endif), // c = 0 stays 0, the high bits clear
                Instr::rri(Add, 31, 0, 0x0000_0100),
                Instr::rri(Brk, 0, 0, 3),
                Instr::new(Endif),
                Instr::new(Else),
                Instr::new(Endif),
                Instr::new(Endif),
                Instr::mem(Stg, 0, 1, 2, 0, 32),
                Instr::new(Halt),
            ],
            vec![],
        ),
        // counter wrap: 255 + 1 = 0
        (
            "counter_wrap",
            vec![Instr::rri(Add, 31, 0, 255), Instr::rri(If, 0, 0, 1), Instr::rri(Add, 2, 0, 1), Instr::new(Halt)],
            vec![],
        ),
        // addresses that wrap around the memory (base + index beyond the size)
        (
            "wrapping_addresses",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(Add, 2, 1, 100),
                Instr::mem(Sts, 0, 1, 2, 126, 64),
                Instr::mem(Lds, 3, 1, 0, 0xFFFE, 64),
                Instr::mem(Stg, 0, 1, 3, 4094, 64),
                Instr::mem(Atomg, 4, 1, 2, 4094, 64),
                Instr::mem(Ldg, 5, 1, 0, 0xFFFF, 64),
                Instr::mem(Stg, 0, 1, 5, 200, 64),
                Instr::new(Halt),
            ],
            vec![],
        ),
        // BAR with n = 3 (not a power of two), n beyond the warps, n = 1 (no-op) and n = 0
        (
            "bar_odd_counts",
            vec![
                Instr::imm(Creset, 12),
                Instr::rrr(Tid, 1, 0, 0),
                Instr::mem(Atoms, 2, 0, 1, 0, 1),
                Instr::imm(Bar, 1),
                Instr::imm(Bar, 0),
                Instr::imm(Bar, 3),
                Instr::mem(Atoms, 3, 0, 1, 1, 1),
                Instr::imm(Bar, 3),
                Instr::mem(Lds, 4, 0, 0, 1, 1),
                Instr::mem(Stg, 0, 1, 4, 0, 64),
                Instr::imm(Bar, 1000),
                Instr::imm(Bar, 0xFFFF_FFFF),
                Instr::mem(Stg, 0, 1, 2, 64, 64),
                Instr::new(Halt),
            ],
            vec![],
        ),
        // JNONE/JANY/JMP: a body no lane runs is skipped; JMP wraps its target to 12 bits
        (
            "jumps",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(If, 0, 0, 0), // nobody
                Instr::imm(Jnone, 5),
                Instr::rri(Add, 2, 0, 1),
                Instr::imm(Jany, 0),
                Instr::new(Endif),
                Instr::imm(Jnone, 0),
                Instr::imm(Jany, 9),
                Instr::new(Halt),
                Instr::imm(Jmp, 0x0001_000B),
                Instr::new(Halt),
                Instr::mem(Stg, 0, 1, 1, 0, 32),
                Instr::new(Halt),
            ],
            vec![],
        ),
    ]
}

/// Edge operands of the division ops: 0, +-1, INT_MIN, INT_MAX, all ones, small and large values.
const DIV_EDGES: [u32; 16] = [
    0, 1, 2, 3, 7, 100, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFF_FFFF, 0xFFFF_FFFE, 0xFFFF_FFF9, 0xFFFF_FF9C,
    0x1234_5678, 0xDEAD_BEEF, 0x0001_0000,
];

/// The four division ops on edge operands: lane pairs of [`DIV_EDGES`] as registers, edge immediates, `rd` equal
/// to `rs1`/`rs2`, a division in a divergent branch (inactive lanes), back to back divisions, and stores of every
/// result.
fn division_programs() -> Vec<(String, Vec<Instr>, Vec<u32>)> {
    let mut out = Vec::new();
    for (k, op) in [Div, Divu, Rem, Remu].into_iter().enumerate() {
        let mut p = vec![
            Instr::rrr(Tid, 1, 0, 0),
            Instr::rri(Add, 10, 1, k as u32),
            Instr::rri(And, 10, 10, 15),
            Instr::mem(Ldg, 2, 10, 0, 0, 16),
            Instr::rri(Mul, 11, 1, 5),
            Instr::rri(Add, 11, 11, 3 + k as u32),
            Instr::rri(And, 11, 11, 15),
            Instr::mem(Ldg, 3, 11, 0, 0, 16),
            Instr::rri(Xor, 12, 1, 9),
            Instr::rri(And, 12, 12, 15),
            Instr::mem(Ldg, 4, 12, 0, 0, 16),
        ];
        let mut results = Vec::new();
        let mut r = 13u8;
        let mut res = |p: &mut Vec<Instr>, i: Instr| {
            p.push(i);
            results.push(i.rd);
        };
        res(&mut p, Instr::rrr(op, r, 2, 3));
        r += 1;
        res(&mut p, Instr::rrr(op, r, 3, 2));
        r += 1;
        res(&mut p, Instr::rrr(op, r, 4, 3));
        r += 1;
        for imm in [0u32, 1, 0xFFFF_FFFF, 0x8000_0000, 7, 0xFFFF_FFF9, 0x7FFF_FFFF] {
            res(&mut p, Instr::rri(op, r, 2, imm));
            r += 1;
        }
        // rd = rs1, rd = rs2, rd = rs1 = rs2
        p.push(Instr::rri(Add, 5, 2, 0));
        p.push(Instr::rri(Add, 6, 3, 0));
        res(&mut p, Instr::rrr(op, 5, 5, 3));
        res(&mut p, Instr::rrr(op, 6, 2, 6));
        p.push(Instr::rri(Add, 7, 4, 0));
        res(&mut p, Instr::rrr(op, 7, 7, 7));
        // divergent: lanes with tid & 2 divide, the others take the other op; r8 starts as a marker
        p.push(Instr::rri(Add, 8, 0, 0x5A5A));
        p.push(Instr::rri(And, 9, 1, 2));
        p.push(Instr::rrr(If, 0, 9, 0));
        p.push(Instr::rrr(op, 8, 3, 4));
        p.push(Instr::new(Else));
        p.push(Instr::rri(If, 0, 0, 0)); // nobody: the division runs with every lane inactive
        p.push(Instr::rrr(op, 8, 4, 2));
        p.push(Instr::new(Endif));
        p.push(Instr::new(Endif));
        results.push(8);
        for (j, rr) in results.iter().enumerate() {
            p.push(Instr::mem(Stg, 0, 1, *rr, 64 + 64 * j as u16, 64));
        }
        // a division right before a barrier and the halt
        p.push(Instr::rrr(op, 9, 2, 3));
        p.push(Instr::imm(Bar, 1));
        p.push(Instr::rrr(op, 9, 9, 3));
        p.push(Instr::new(Halt));
        out.push((format!("division_edges_{}", op.mnemonic()), p, DIV_EDGES.to_vec()));
    }
    out
}

#[test]
fn division_programs_in_lockstep() {
    let mut t = Totals::default();
    for (lanes, warps) in [(4, 8), (8, 8), (4, 1), (8, 2)] {
        let c = cfg(lanes, warps);
        for (name, p, g) in division_programs() {
            let run = lockstep(&c, &enc(&p), &g, 10_000);
            assert_eq!(run.stop, Some(Stop::Halt), "{name}");
            t.add(&format!("{name} ({lanes} lanes, {warps} warps)"), run);
        }
    }
    t.check("division programs");
    for op in [Div, Divu, Rem, Remu] {
        assert!(t.ops[op as usize] > 0, "{op:?}");
    }
}

#[test]
fn interpreter_test_programs_in_lockstep() {
    let mut t = Totals::default();
    for (lanes, warps) in [(4, 8), (8, 8), (4, 1), (8, 2)] {
        let c = cfg(lanes, warps);
        for (name, p) in isa_simt4::corpus::programs() {
            let run = lockstep(&c, &enc(&p), &[], 10_000);
            assert!(run.stop.is_some(), "{name}: no stop");
            t.add(&format!("{name} ({lanes} lanes, {warps} warps)"), run);
        }
        for (name, p, g) in edge_programs() {
            let run = lockstep(&c, &enc(&p), &g, 10_000);
            t.add(&format!("{name} ({lanes} lanes, {warps} warps)"), run);
        }
    }
    t.check("interpreter and edge programs");
}

#[test]
fn faults_are_reported_exactly() {
    // Lane 2 out of bounds in a load (4 and 8 lanes): the lowest out-of-bounds active lane faults.
    for lanes in [4, 8] {
        let c = cfg(lanes, 8);
        let p = enc(&[Instr::rrr(Tid, 1, 0, 0), Instr::mem(Ldg, 2, 1, 0, 0, 2), Instr::new(Halt)]);
        let run = lockstep(&c, &p, &[], 100);
        assert!(run.mismatches.is_empty(), "{:?}", run.mismatches);
        assert_eq!(run.stop, Some(Stop::Fault(Fault { kind: FaultKind::Bounds, pc: 1, lane: 2, warp: 0, index: 2 })));
        // at micro-step 2 of a store
        let p = enc(&[Instr::rrr(Tid, 1, 0, 0), Instr::mem(Stg, 0, 1, 1, 0, 2), Instr::new(Halt)]);
        let run = lockstep(&c, &p, &[], 100);
        assert!(run.mismatches.is_empty(), "{:?}", run.mismatches);
        assert_eq!(run.stop, Some(Stop::Fault(Fault { kind: FaultKind::Bounds, pc: 1, lane: 2, warp: 0, index: 2 })));
        // every illegal opcode
        for op in (0u64..64).filter(|v| Opcode::from_u8(*v as u8).is_none()) {
            // after a micro-coded store
            let p = [Instr::rrr(Tid, 1, 0, 0).encode(), Instr::mem(Stg, 0, 1, 1, 0, 32).encode(), op | 0xABCD_0000_0000_0000 | 5 << 6];
            let run = lockstep(&c, &p, &[], 100);
            assert!(run.mismatches.is_empty(), "{:?}", run.mismatches);
            assert_eq!(run.stop, Some(Stop::Fault(Fault { kind: FaultKind::Illegal, pc: 2, lane: 0, warp: 0, index: op as u32 })));
        }
    }
}

// ---- random programs ----

/// xorshift64*: a small seeded generator (no dependency).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// An operand value: edge values, small numbers, shift amounts 0..40, or anything.
    fn value(&mut self) -> u32 {
        match self.below(4) {
            0 => self.pick(&[0, 1, 2, 3, 0x8000_0000, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0001, 0xFFFF_FFFE, 0x0001_0000, 0xFFFF]),
            1 => self.below(41) as u32,
            2 => (self.below(200) as u32).wrapping_sub(100),
            _ => self.next() as u32,
        }
    }
}

const ALU: [Opcode; 21] = [Add, Sub, Mul, Mulhi, Mulhu, And, Or, Xor, Shl, Shr, Sra, Slt, Sltu, Seq, Sne, Min, Max, Minu, Maxu, Cmov, Tid];
const DIVS: [Opcode; 4] = [Div, Divu, Rem, Remu];

/// Registers: r1 = tid, r2..=r20 data, r21..=r29 loop counters and bounds (two per nesting level), r30 an
/// index scratch.
struct Gen {
    rng: Rng,
    p: Vec<Instr>,
    /// Levels of IF/loop nesting open now.
    depth: u32,
    loops: u32,
    lanes: u32,
    threads: u32,
}

impl Gen {
    fn data(&mut self) -> u8 {
        2 + self.rng.below(19) as u8
    }
    fn src(&mut self) -> u8 {
        if self.rng.chance(10) { self.rng.pick(&[0, 1, 30]) } else { self.data() }
    }
    fn alu(&mut self) {
        let op = if self.rng.chance(15) { self.rng.pick(&DIVS) } else { self.rng.pick(&ALU) };
        let (rd, rs1) = (self.data(), self.src());
        let i = if self.rng.chance(50) { Instr::rri(op, rd, rs1, self.rng.value()) } else { Instr::rrr(op, rd, rs1, self.src()) };
        self.p.push(i);
    }
    /// An in-bounds index into r30: `r30 = src & (len - 1)` (len a power of two), or the thread id.
    fn index(&mut self, len: u32) {
        if self.rng.chance(30) && len >= self.threads {
            self.p.push(Instr::rri(Add, 30, 1, 0));
        } else {
            let s = self.src();
            self.p.push(Instr::rri(And, 30, s, len - 1));
        }
    }
    fn memop(&mut self) {
        let op = self.rng.pick(&[Lds, Ldg, Sts, Stg, Atoms, Atomg, Lds, Ldg]);
        let size: u32 = if op.is_shared() { 128 } else { 4096 };
        let len = self.rng.pick(&[1u32, 2, 4, 8, 16, 32, 64, 128]).min(size);
        self.index(len);
        let base = if self.rng.chance(10) { self.rng.below(0x1_0000) as u16 } else { self.rng.below(u64::from(size - len + 1)) as u16 };
        let (rd, rs2) = (self.data(), self.src());
        self.p.push(Instr::mem(op, rd, 30, rs2, base, len as u16));
    }
    /// A random condition register.
    fn cond(&mut self) -> u8 {
        let r = self.data();
        match self.rng.below(4) {
            0 => {
                let s = self.src();
                self.p.push(Instr::rri(And, r, s, 1));
            }
            1 => {
                self.p.push(Instr::rri(Sltu, r, 1, self.rng.below(u64::from(self.lanes) + 2) as u32));
            }
            2 => {
                let (a, b) = (self.src(), self.src());
                self.p.push(Instr::rrr(Slt, r, a, b));
            }
            _ => {}
        }
        r
    }
    fn block(&mut self, budget: u32) {
        for _ in 0..budget {
            let k = self.rng.below(100);
            if k < 45 {
                self.alu();
            } else if k < 62 {
                self.memop();
            } else if k < 74 && self.depth < 4 {
                self.if_block();
            } else if k < 80 && self.loops < 2 && self.depth < 3 {
                self.loop_block();
            } else if k < 84 && self.depth > 0 {
                // BRK at most as many levels as are open
                let c = if self.rng.chance(30) { 0 } else { self.cond() };
                let levels = 1 + self.rng.below(u64::from(self.depth)) as u32;
                self.p.push(Instr::rri(Brk, 0, c, levels));
            } else {
                self.alu();
            }
        }
    }
    fn if_block(&mut self) {
        let c = self.cond();
        let forced = self.rng.chance(10);
        self.p.push(Instr { op: If, rd: 0, rs1: c, rs2: 0, imm_b: false, imm: forced as u32 });
        let jnone = if self.rng.chance(40) {
            self.p.push(Instr::imm(Jnone, 0));
            Some(self.p.len() - 1)
        } else {
            None
        };
        self.depth += 1;
        let n = 1 + self.rng.below(5) as u32;
        self.block(n);
        if let Some(j) = jnone {
            self.p[j].imm = self.p.len() as u32;
        }
        if self.rng.chance(60) {
            self.p.push(Instr::new(Else));
            let n = 1 + self.rng.below(5) as u32;
            self.block(n);
        }
        self.depth -= 1;
        self.p.push(Instr::new(Endif));
    }
    /// `for (i = 0; i < n; i++)` with a per-lane `n` of 0..8: the counter-based loop of the front end.
    fn loop_block(&mut self) {
        let (ri, rn) = (21 + 2 * self.loops as u8, 22 + 2 * self.loops as u8);
        self.loops += 1;
        self.p.push(Instr::rri(Add, ri, 0, 0));
        let s = self.src();
        self.p.push(Instr::rri(And, rn, s, 7));
        if self.rng.chance(40) {
            self.p.push(Instr::rri(Add, rn, 1, self.rng.below(3) as u32));
        }
        self.p.push(Instr::rri(If, 0, 0, 1));
        let top = self.p.len() as u32;
        self.p.push(Instr::rri(If, 0, 0, 1));
        let t = 29 - 2 * (self.loops as u8 - 1); // scratch for the test (r29, r27)
        self.p.push(Instr::rrr(Slt, t, ri, rn));
        self.p.push(Instr::rri(Brk, 0, t, 2));
        self.depth += 2;
        let n = 1 + self.rng.below(6) as u32;
        self.block(n);
        self.depth -= 2;
        self.p.push(Instr::new(Endif));
        self.p.push(Instr::rri(Add, ri, ri, 1));
        self.p.push(Instr::imm(Jany, top));
        self.p.push(Instr::new(Endif));
        self.loops -= 1;
    }
    /// The prologue: thread ids and lane-varying data in r2..=r20.
    fn prologue(&mut self, creset: Option<u32>) {
        if let Some(n) = creset {
            self.p.push(Instr::imm(Creset, n));
        }
        self.p.push(Instr::rrr(Tid, 1, 0, 0));
        for r in 2..=20u8 {
            let k = self.rng.value();
            self.p.push(Instr::rri(Mul, r, 1, k));
            let op = self.rng.pick(&[Add, Xor, Sub]);
            let v = self.rng.value();
            self.p.push(Instr::rri(op, r, r, v));
        }
    }
}

/// A random program: straight segments separated by `BAR warps_in_block` (when more than one warp), ending
/// with a store of some registers and HALT.
fn random_program(seed: u64, lanes: u32, block_warps: u32) -> (Vec<Instr>, Vec<u32>) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let global: Vec<u32> = (0..256).map(|_| rng.value()).collect();
    let threads = lanes * block_warps;
    let mut g = Gen { rng, p: Vec::new(), depth: 0, loops: 0, lanes, threads };
    let creset = if block_warps > 1 || g.rng.chance(30) { Some(threads - g.rng.below(u64::from(lanes)) as u32) } else { None };
    g.prologue(creset);
    let segments = if block_warps > 1 { 2 + g.rng.below(2) as u32 } else { 1 };
    for s in 0..segments {
        let n = 6 + g.rng.below(14) as u32;
        g.block(n);
        if block_warps > 1 && s + 1 < segments {
            g.p.push(Instr::imm(Bar, block_warps));
        }
    }
    // results: r2..r9 to global[256 + 8*tid + k]
    for k in 0..8u8 {
        g.p.push(Instr::rri(Add, 30, 1, 0));
        g.p.push(Instr::mem(Stg, 0, 30, 2 + k, 256 + u16::from(k) * 256, 256));
    }
    if block_warps > 1 {
        g.p.push(Instr::imm(Bar, block_warps));
    }
    g.p.push(Instr::new(Halt));
    assert!(g.p.len() < 4096);
    (g.p, global)
}

fn random_runs(lanes: u32, warps: u32, seeds: std::ops::Range<u64>) -> Totals {
    let c = cfg(lanes, warps);
    let mut t = Totals::default();
    let mut max_len = 0;
    for seed in seeds {
        let block_warps = if seed % 3 == 0 { 1 } else { 2 + seed % 3 } as u32;
        let block_warps = block_warps.min(warps);
        let (p, global) = random_program(seed, lanes, block_warps);
        max_len = max_len.max(p.len());
        let run = lockstep(&c, &enc(&p), &global, 50_000);
        t.add(&format!("seed {seed} ({lanes} lanes, {block_warps} warps)"), run);
    }
    eprintln!("  longest program: {max_len} instructions");
    t
}

#[test]
fn random_programs_4_lanes() {
    let t = random_runs(4, 8, 0..120);
    t.check("random programs, 4 lanes, 8 warps");
    t.check_coverage("random programs, 4 lanes", &[Jmp]);
    assert!(t.halts >= 100, "most random programs halt: {}", t.halts);
}

#[test]
fn random_programs_8_lanes() {
    let t = random_runs(8, 8, 1000..1080);
    t.check("random programs, 8 lanes, 8 warps");
    t.check_coverage("random programs, 8 lanes", &[Jmp]);
    assert!(t.halts >= 60, "most random programs halt: {}", t.halts);
}

/// Random programs with a fault planted: an out-of-bounds index at lane 2, or an illegal word.
#[test]
fn random_programs_with_faults() {
    let mut t = Totals::default();
    for (lanes, seeds) in [(4u32, 0..40u64), (8, 100..140)] {
        let c = cfg(lanes, 8);
        for seed in seeds {
            let (p, global) = random_program(seed, lanes, 1);
            let at = p.len() / 2;
            let planted: Vec<Instr> = if seed % 2 == 0 {
                let op = [Lds, Ldg, Sts, Stg, Atoms, Atomg][(seed / 2 % 6) as usize];
                vec![Instr::imm(Creset, 64), Instr::rrr(Tid, 30, 0, 0), Instr::mem(op, 3, 30, 4, 7, 2)]
            } else {
                vec![]
            };
            let mut words = enc(&p[..at]);
            words.extend(enc(&planted));
            if seed % 2 == 1 {
                words.push(0xFFFF_0000_0000_0000 | [0u64, 42, 43, 50, 57, 62, 63][(seed / 2 % 7) as usize]);
            }
            let run = lockstep(&c, &words, &global, 50_000);
            t.add(&format!("seed {seed} with a fault ({lanes} lanes)"), run);
        }
    }
    t.check("random programs with faults");
    assert!(t.faults >= 60, "{} faults", t.faults);
}

// ---- the weaver's plan ----

fn plan_report(lanes: u32) -> usize {
    let c = cfg(lanes, 8);
    let desc = simt4_machine(&c).unwrap();
    let t0 = std::time::Instant::now();
    let (proto, net, sched, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
    let g = alloc.geometry;
    let (nodes, secs) = (desc.circuit.nodes.len(), t0.elapsed().as_secs_f64());
    eprintln!("simt4 {lanes} lanes, 8 warps: {nodes} circuit nodes; {} ({secs:.1} s)", weaver::plan_summary(&proto, &net, &alloc));
    if std::env::var_os("SIMT_PLAN_DETAIL").is_some() {
        eprintln!("{}", weaver::plan_layers(&desc, &net, &sched, &alloc));
        let path: Vec<String> = sched.critical_path(&net).iter().map(|(n, t)| format!("{n}@{t}")).collect();
        eprintln!("  critical path (node@ready time): {}", path.join(" <- "));
    }
    assert!(g.layers < 45, "{} layers", g.layers);
    g.layers
}

#[test]
fn weaver_plan_4_lanes() {
    plan_report(4);
}

#[test]
fn weaver_plan_8_lanes() {
    plan_report(8);
}

#[test]
fn description_names_and_widths() {
    for (lanes, warps) in [(4, 8), (8, 8), (4, 1), (32, 32)] {
        let c = Simt4Config { lanes, warps, shared_words: 256, global_words: 65536 };
        let d = simt4_machine(&c).unwrap();
        d.validate().unwrap();
        let wb = warps.trailing_zeros().max(1);
        assert_eq!(d.register("PC"), Some(reg::PC));
        assert_eq!(d.register("WARP"), Some(reg::WARP));
        assert_eq!(d.register("BUSY"), Some(reg::BUSY));
        assert_eq!(d.register("STOP"), Some(reg::STOP));
        assert_eq!(d.registers[reg::WARP as usize].width, wb);
        assert_eq!(d.micro_step, Some(reg::BUSY));
        assert_eq!(d.memory("PROG"), Some(mem::PROG));
        assert_eq!(d.memory("SHARED"), Some(mem::SHARED));
        assert_eq!(d.memory("GLOBAL"), Some(mem::GLOBAL));
        assert_eq!(d.memory("WPC"), Some(mem::WPC));
        assert_eq!(d.memories[mem::SHARED as usize].addr_width, 8);
        assert_eq!(d.memories[mem::GLOBAL as usize].addr_width, 16);
        assert_eq!(d.memories[mem::WPC as usize].addr_width, wb);
        for l in 0..lanes {
            assert_eq!(d.memory(&format!("R{l}")), Some(mem::lane(l)));
            assert_eq!(d.memories[mem::lane(l) as usize].addr_width, c.reg_addr_bits());
        }
        assert_eq!(d.port_with_role(isa_api::PortRole::Fault), d.port("FAULT"));
    }
    assert!(simt4_machine(&Simt4Config { lanes: 6, ..Default::default() }).unwrap_err().to_string().contains("lanes"));
}

/// The division datapath ([`isa_simt4::circuit::div_datapath`], the nodes every lane of the machine uses)
/// lowered to the weaver's threshold gates and evaluated bit-exactly on the netlist, against the reference
/// evaluator and against the interpreter's arithmetic: step 0's `|a|` and one radix-4 iteration, on edge
/// operands and reachable partial remainders (`DR < |b|`, or anything when `b = 0`), signed and unsigned.
#[test]
fn division_datapath_lowered_to_gates() {
    use isa_api::{CircuitBuilder, FieldRole, MachineDesc, MachineState, Protocol, RegisterDesc, eval::eval_nodes};
    use weaver::net::{Source, sig_bit};
    let mut b = CircuitBuilder::new();
    let (a, bv, sg, dq, dr) = (b.reg(0, 32), b.reg(1, 32), b.reg(2, 1), b.reg(3, 32), b.reg(4, 32));
    let p = isa_simt4::circuit::div_datapath(&mut b, a, bv, sg, dq, dr);
    let outs = [p.a_abs, p.q_iter, p.r_iter];
    for (k, n) in outs.iter().enumerate() {
        b.set_next(5 + k as u32, *n);
    }
    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let regs = vec![r("A", 32), r("B", 32), r("S", 1), r("DQ", 32), r("DR", 32), r("X", 32), r("Q", 32), r("R", 32)];
    let d = MachineDesc::new("div", regs, vec![], vec![], b.finish());
    d.validate().unwrap();
    let proto = Protocol::of(&d);
    let net = weaver::lower::lower(&d, &proto).unwrap();
    let mut rng = Rng(77);
    let mut n = 0;
    for &av in DIV_EDGES.iter() {
        for &bvv in DIV_EDGES.iter() {
            for signed in [false, true] {
                let mag = |x: u32| if signed && (x as i32) < 0 { x.wrapping_neg() } else { x };
                let d_abs = mag(bvv);
                for _ in 0..6 {
                    let dqv = rng.next() as u32;
                    let drv = if d_abs == 0 { rng.next() as u32 } else { (rng.next() as u32) % d_abs };
                    let st = MachineState { regs: vec![u64::from(av), u64::from(bvv), u64::from(signed), u64::from(dqv), u64::from(drv), 0, 0, 0], mems: vec![], inputs: vec![] };
                    let vals = eval_nodes(&d, &st);
                    let want_ref: Vec<u64> = outs.iter().map(|o| vals[*o as usize]).collect();
                    // the interpreter's arithmetic
                    let t = u64::from(drv) << 2 | u64::from(dqv >> 30);
                    let dd = u64::from(d_abs);
                    let q = if t >= 3 * dd { 3 } else if t >= 2 * dd { 2 } else if t >= dd { 1 } else { 0 };
                    let want = vec![u64::from(mag(av)), u64::from(dqv << 2 | q as u32), (t - q * dd) & 0xFFFF_FFFF];
                    assert_eq!(want_ref, want, "reference: a={av:#x} b={bvv:#x} signed={signed} DQ={dqv:#x} DR={drv:#x}");
                    let v = net
                        .eval(&|_, src| match src {
                            Source::RegBit { reg, bit } => (st.regs[reg as usize] >> bit) & 1 == 1,
                            _ => false,
                        })
                        .unwrap();
                    let mut got = vec![0u64; 3];
                    for (k, f) in proto.step_fields.iter().enumerate() {
                        let f = &proto.fields[*f as usize];
                        if let FieldRole::RegNext { reg, .. } = f.role
                            && reg >= 5
                        {
                            for (j, s) in net.outputs[k].bits.iter().enumerate() {
                                if sig_bit(&v, *s) {
                                    got[reg as usize - 5] |= 1 << (f.lo + j as u32);
                                }
                            }
                        }
                    }
                    assert_eq!(got, want, "netlist: a={av:#x} b={bvv:#x} signed={signed} DQ={dqv:#x} DR={drv:#x}");
                    n += 1;
                }
            }
        }
    }
    eprintln!("division datapath on the netlist: {n} cases, {} gates", net.gates.len());
}

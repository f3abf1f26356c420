//! Property test: random circuits over every IR operation (random widths up to 32 bits, random register
//! state carried across steps, random memory contents, computed load addresses, memory writes and clears, an
//! output port)
//! are woven and run on the sparse executor against the reference evaluator, token for token.

use backends::sparse::SparseModel;
use isa_api::{CircuitBuilder, CmpKind, MachineDesc, MemoryDesc, NodeId, PortDesc, Reference, RegisterDesc, ShiftKind};
use proptest::prelude::*;
use isa_api::host;
use weaver::{weave, WeaveOptions};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

const WIDTHS: [u32; 9] = [1, 2, 3, 5, 8, 12, 16, 24, 32];

fn fit(b: &mut CircuitBuilder, n: NodeId, w: u32) -> NodeId {
    let nw = b.width(n);
    if nw == w {
        n
    } else if nw > w {
        b.slice(n, 0, w)
    } else {
        b.zext(n, w)
    }
}

/// Returns the machine and the memory image.
fn random_machine(seed: u64) -> (MachineDesc, Vec<u64>) {
    let mut r = Rng(seed);
    let nregs = 2 + r.below(3) as usize;
    let regs: Vec<RegisterDesc> = (0..nregs).map(|i| RegisterDesc { name: format!("R{i}"), width: r.pick(&WIDTHS) }).collect();
    let mem = MemoryDesc { name: "M".into(), word_width: 16, addr_width: 4 };
    let mut b = CircuitBuilder::new();
    let mut pool: Vec<NodeId> = regs.iter().enumerate().map(|(i, rd)| b.reg(i as u32, rd.width)).collect();
    for k in 0..2 {
        let a = b.konst(4, r.below(16));
        pool.push(b.load(0, 16, a));
        let _ = k;
    }
    let nops = 6 + r.below(10) as usize;
    for _ in 0..nops {
        let x = r.pick(&pool);
        let y = r.pick(&pool);
        let w = b.width(x);
        let yw = fit(&mut b, y, w);
        let kind = r.below(22);
        let n = match kind {
            0 => b.add(x, yw),
            1 => {
                let c = b.bit(y, 0);
                b.add_c(x, yw, c)
            }
            2 => b.sub(x, yw),
            3 => b.and(x, yw),
            4 => b.or(x, yw),
            5 => b.xor(x, yw),
            6 => b.not(x),
            7 => {
                let k = r.pick(&[ShiftKind::Shl, ShiftKind::Shr, ShiftKind::Sar, ShiftKind::Rotl, ShiftKind::Rotr]);
                b.shift_const(k, x, r.below(w as u64 + 2) as u32)
            }
            8 => {
                let k = r.pick(&[ShiftKind::Shl, ShiftKind::Shr, ShiftKind::Sar, ShiftKind::Rotl, ShiftKind::Rotr]);
                let bw = (b.width(y)).min(1 + r.below(5) as u32);
                let by = b.slice(y, 0, bw);
                b.shift(k, x, by)
            }
            9 => {
                let k = r.pick(&[CmpKind::Eq, CmpKind::Ne, CmpKind::Ltu, CmpKind::Lts, CmpKind::Leu, CmpKind::Les]);
                b.cmp(k, x, yw)
            }
            10 => {
                let s = b.bit(r.pick(&pool), 0);
                b.select(s, yw, x)
            }
            11 => b.zext(x, (w + r.below(8) as u32).min(32).max(w)),
            12 => b.sext(x, (w + r.below(8) as u32).min(32).max(w)),
            13 => {
                let lo = r.below(w as u64) as u32;
                let sw = 1 + r.below((w - lo) as u64) as u32;
                b.slice(x, lo, sw)
            }
            14 => {
                let yw2 = (32 - w.min(31)).min(b.width(y)).max(1);
                let yy = fit(&mut b, y, yw2);
                b.concat(&[x, yy])
            }
            15 | 16 => {
                let w2 = w.min(16);
                let (x2, y2) = (fit(&mut b, x, w2), fit(&mut b, y, w2));
                if kind == 15 { b.mul_lo(x2, y2) } else { b.mul_hi(x2, y2, r.below(2) == 1, r.below(2) == 1) }
            }
            17 => {
                let iw = w.min(5);
                let idx = fit(&mut b, x, iw);
                let ow = 1 + r.below(12) as u32;
                let table: Vec<u64> = (0..(1u64 << iw) - r.below(2)).map(|_| r.below(1 << ow)).collect();
                b.lookup(ow, table, idx)
            }
            18 => {
                let s0 = b.bit(r.pick(&pool), 0);
                let s1 = b.bit(r.pick(&pool), 0);
                b.and_or(w, &[(s0, x), (s1, yw)])
            }
            19 => {
                let a = fit(&mut b, x, 4);
                b.load(0, 16, a)
            }
            20 => {
                // A multi-operand sum of 2-4 pool words, shifted and signed at random, at a width up to 36.
                let ow = (w + r.below(5) as u32).min(36);
                let terms: Vec<isa_api::SumTerm> = (0..2 + r.below(3)).map(|_| isa_api::SumTerm { node: r.pick(&pool), shift: r.below(4) as u32, neg: r.below(2) == 1 }).collect();
                let s = b.sum(ow, &terms, r.next() & ((1u64 << ow) - 1));
                fit(&mut b, s, w)
            }
            _ => {
                let c = b.konst(w, r.next() & if w == 64 { u64::MAX } else { (1 << w) - 1 });
                b.add(x, c)
            }
        };
        pool.push(n);
    }
    for (i, rd) in regs.iter().enumerate() {
        let v = r.pick(&pool[nregs..]);
        let v = fit(&mut b, v, rd.width);
        b.set_next(i as u32, v);
    }
    let (a, d, e) = (r.pick(&pool), r.pick(&pool), r.pick(&pool));
    let (a, d) = (fit(&mut b, a, 4), fit(&mut b, d, 16));
    let e = b.bit(e, 0);
    b.mem_write(0, a, d, e);
    // Half the machines also clear the memory, in about a quarter of their steps.
    if r.below(2) == 0 {
        let (c1, c2) = (r.pick(&pool), r.pick(&pool));
        let (c1, c2) = (b.bit(c1, 0), b.bit(c2, 0));
        let ce = b.and(c1, c2);
        b.mem_clear(0, ce);
    }
    let ow = r.pick(&[4u32, 8, 12]);
    let (o, oe) = (r.pick(&pool), r.pick(&pool));
    let o = fit(&mut b, o, ow);
    let oe = b.bit(oe, 0);
    b.output(0, o, oe);
    let desc = MachineDesc::new("random", regs, vec![mem], vec![PortDesc::new("OUT", ow)], b.finish());
    desc.validate().unwrap();
    let image: Vec<u64> = (0..16).map(|_| r.below(1 << 16)).collect();
    (desc, image)
}

fn run_case(seed: u64, steps: usize) -> usize {
    let (desc, image) = random_machine(seed);
    let w = weave(&desc, &WeaveOptions::default()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let model = SparseModel::new(&w.config, &w.weights).unwrap();
    let prompt = host::program_prompt(&w.protocol, 0, 0, &image);
    let mut st = model.new_state();
    let got = host::run(&w.protocol, &prompt, steps, |t| model.step_argmax(&mut st, t)).unwrap();
    let mut r = Reference::new(desc.clone());
    r.load(0, 0, &image);
    let want = r.run(steps);
    let p = &w.protocol;
    let show = |v: &[u32]| v.iter().map(|t| p.describe(*t)).collect::<Vec<_>>().join(" ");
    assert_eq!(got.trace.generated, want, "seed {seed}\nmodel: {}\n want: {}\ncircuit: {:#?}", show(&got.trace.generated), show(&want), desc.circuit.nodes);
    want.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_circuits_match_the_reference(seed in any::<u64>()) {
        run_case(seed, 5);
    }
}

/// Seeds checked by `fixed_seeds` (`LOOM_RANDOM_SEEDS` overrides, for long soaks).
const FIXED_SEEDS: u64 = 32;

#[test]
fn fixed_seeds() {
    let n_seeds: u64 = std::env::var("LOOM_RANDOM_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(FIXED_SEEDS);
    let mut n = 0;
    for seed in 0..n_seeds {
        n += run_case(seed, 8);
    }
    eprintln!("{n_seeds} circuits, {n} positions compared, 0 mismatches");
}


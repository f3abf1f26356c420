//! The CHIP-8 machine as an `isa-api` circuit: one machine step per forward pass of the woven network,
//! semantics exactly those of [`crate::interp`] (the quirks are listed there).
//!
//! | state | kind | meaning |
//! |---|---|---|
//! | `PC`, `I` | registers, 12 bits | program counter, index register |
//! | `SP` | register, 4 bits | stack pointer |
//! | `DT`, `ST` | registers, 8 bits | delay and sound timers |
//! | `LAST` | register, 8 bits | the last tick count the machine saw |
//! | `BUSY` | register, 6 bits | micro-step: the row of a `DXYN` (N steps), the byte of `FX33`, `FX55`, `FX65` |
//! | `LFSR` | register, 16 bits | the random generator of `CXNN` |
//! | `VF` | register, 8 bits | the flag register (V0..VE live in memory `V`) |
//! | `STOP` | register, 1 bit | a fault was reported: the next step halts |
//! | `RAM` | memory, 4096 x 8 | font at 0, program at 0x200 |
//! | `V` | memory, 16 x 8 | V0..VE (row 15 unused) |
//! | `STACK` | memory, 16 x 12 | return addresses |
//! | `SCREEN` | memory, 32 x 64 | the display: row y, bit x = pixel (x, y) |
//! | `TICK`, `KEYS` | inputs, 8 and 16 bits | the host's tick count; the keys held |
//! | `FAULT` | port, 16 bits | the opcode of an illegal instruction |
//! | `BEEP` | port, 1 bit | the sound timer turned nonzero (1) or zero (0) |
//!
//! One write per memory per step: `8XY4` and the like write VX to `V` and the flag to the `VF` register in the
//! same step; the instructions that write several bytes or rows are micro-coded over `BUSY`. `CLS` is one step
//! that clears `SCREEN` (`mem_clear`): in the woven network, one token whose Gated DeltaNet decay is 0 on the
//! display's heads.

use isa_api::{CircuitBuilder, CmpKind, DeviceDesc, MachineDesc, MemoryDesc, NodeId, PortDesc, PortRole, ProgramLayout, RegisterDesc, ShiftKind};

/// Register indices.
pub mod reg {
    pub const PC: u32 = 0;
    pub const I: u32 = 1;
    pub const SP: u32 = 2;
    pub const DT: u32 = 3;
    pub const ST: u32 = 4;
    pub const LAST: u32 = 5;
    pub const BUSY: u32 = 6;
    pub const LFSR: u32 = 7;
    pub const VF: u32 = 8;
    pub const STOP: u32 = 9;
}

/// Memory indices.
pub mod mem {
    pub const RAM: u32 = 0;
    pub const V: u32 = 1;
    pub const STACK: u32 = 2;
    pub const SCREEN: u32 = 3;
}

/// Instructions between two host ticks (60 Hz ticks at 600 instructions per second).
pub const INSTRUCTIONS_PER_TICK: u64 = 10;

/// The machine description.
pub fn chip8_machine() -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let s = &mut b;
    let pc = s.reg(reg::PC, 12);
    let i = s.reg(reg::I, 12);
    let sp = s.reg(reg::SP, 4);
    let dt = s.reg(reg::DT, 8);
    let st = s.reg(reg::ST, 8);
    let last = s.reg(reg::LAST, 8);
    let busy = s.reg(reg::BUSY, 6);
    let lfsr = s.reg(reg::LFSR, 16);
    let vf = s.reg(reg::VF, 8);
    let stop = s.reg(reg::STOP, 1);
    let tick = s.input(0, 8);
    let keys = s.input(1, 16);

    // ---- fetch and operands ----
    let one12 = s.konst(12, 1);
    let pc1 = s.add(pc, one12);
    let hi = s.load(mem::RAM, 8, pc);
    let lo = s.load(mem::RAM, 8, pc1);
    let x = s.slice(hi, 0, 4);
    let top = s.slice(hi, 4, 4);
    let y = s.slice(lo, 4, 4);
    let n = s.slice(lo, 0, 4);
    let nnn = s.concat(&[lo, x]);
    let op = s.concat(&[lo, hi]);
    let v_of = |s: &mut CircuitBuilder, r: NodeId| {
        let m = s.load(mem::V, 8, r);
        let is15 = s.eq_const(r, 15);
        s.select(is15, vf, m)
    };
    let vx = v_of(s, x);
    let vy = v_of(s, y);
    let zero4 = s.konst(4, 0);
    let v0 = s.load(mem::V, 8, zero4);
    let busy4 = s.slice(busy, 0, 4);
    let vb = v_of(s, busy4); // FX55: V[BUSY]
    let i_b = {
        let bz = s.zext(busy, 12);
        s.add(i, bz)
    };
    let mb = s.load(mem::RAM, 8, i_b); // DXYN sprite row, FX65 byte
    let busy0 = s.eq_const(busy, 0);

    // ---- decode ----
    let t = |s: &mut CircuitBuilder, v: u64| s.eq_const(top, v);
    let cls = s.eq_const(op, 0x00E0);
    let ret = s.eq_const(op, 0x00EE);
    let jp = t(s, 1);
    let call = t(s, 2);
    let se = t(s, 3);
    let sne = t(s, 4);
    let n0 = s.eq_const(n, 0);
    let t5 = t(s, 5);
    let sexy = s.and(t5, n0);
    let ld = t(s, 6);
    let addk = t(s, 7);
    let t8 = t(s, 8);
    let alu: Vec<NodeId> = [0u64, 1, 2, 3, 4, 5, 6, 7, 0xE]
        .iter()
        .map(|k| {
            let e = s.eq_const(n, *k);
            s.and(t8, e)
        })
        .collect();
    let t9 = t(s, 9);
    let snexy = s.and(t9, n0);
    let ldi = t(s, 0xA);
    let jpv0 = t(s, 0xB);
    let rnd = t(s, 0xC);
    let drw = t(s, 0xD);
    let te = t(s, 0xE);
    let tf = t(s, 0xF);
    let f = |s: &mut CircuitBuilder, top_is: NodeId, v: u64| {
        let e = s.eq_const(lo, v);
        s.and(top_is, e)
    };
    let skp = f(s, te, 0x9E);
    let sknp = f(s, te, 0xA1);
    let f07 = f(s, tf, 0x07);
    let f0a = f(s, tf, 0x0A);
    let f15 = f(s, tf, 0x15);
    let f18 = f(s, tf, 0x18);
    let f1e = f(s, tf, 0x1E);
    let f29 = f(s, tf, 0x29);
    let f33 = f(s, tf, 0x33);
    let f55 = f(s, tf, 0x55);
    let f65 = f(s, tf, 0x65);
    let mut legal_sigs = vec![cls, ret, jp, call, se, sne, sexy, ld, addk, snexy, ldi, jpv0, rnd, drw, skp, sknp, f07, f0a, f15, f18, f1e, f29, f33, f55, f65];
    legal_sigs.extend(&alu);
    let legal = s.any(&legal_sigs);
    let nstop = s.not(stop);
    let illegal = {
        let nl = s.not(legal);
        s.and(nl, nstop)
    };
    // Effects happen only in a legal, running step.
    let g = |s: &mut CircuitBuilder, c: NodeId| s.all(&[c, nstop]);

    // ---- micro-steps ----
    let busy_is = |s: &mut CircuitBuilder, v: u64| s.eq_const(busy, v);
    let drw_last = {
        let nm1 = {
            let one4 = s.konst(4, 1);
            s.sub(n, one4)
        };
        let nm1z = s.zext(nm1, 6);
        let at = s.eq(busy, nm1z);
        s.or(at, n0)
    };
    let f33_last = busy_is(s, 2);
    let x6 = s.zext(x, 6);
    let fx_last = s.eq(busy, x6);
    // A host tick came before this step (the input moved since the last step's).
    let new_tick = {
        let e = s.eq(tick, last);
        s.not(e)
    };
    // DXYN waits for the display: its first micro-step runs only in a step a tick came before.
    let draw_wait = {
        let nt = s.not(new_tick);
        s.all(&[drw, busy0, nt])
    };
    let draw_runs = {
        let nw = s.not(draw_wait);
        s.and(drw, nw)
    };
    let more = {
        let c2 = s.not(drw_last);
        let c3 = s.not(f33_last);
        let c4 = s.not(fx_last);
        let f5565 = s.or(f55, f65);
        let b2 = s.and(draw_runs, c2);
        let c = s.and(f33, c3);
        let d = s.and(f5565, c4);
        s.any(&[b2, c, d])
    };
    let hold = g(s, more);
    let no_key = s.eq_const(keys, 0);
    let wait = {
        let keyless = s.and(f0a, no_key);
        s.or(keyless, draw_wait)
    };

    // ---- ALU (8XYN) ----
    let (or_, and_, xor_) = (s.or(vx, vy), s.and(vx, vy), s.xor(vx, vy));
    let sum9 = {
        let a = s.zext(vx, 9);
        let c = s.zext(vy, 9);
        s.add(a, c)
    };
    let sum = s.slice(sum9, 0, 8);
    let carry = s.bit(sum9, 8);
    let sub_xy = s.sub(vx, vy);
    let sub_yx = s.sub(vy, vx);
    let x_lt_y = s.cmp(CmpKind::Ltu, vx, vy);
    let y_lt_x = s.cmp(CmpKind::Ltu, vy, vx);
    let x_ge_y = s.not(x_lt_y);
    let y_ge_x = s.not(y_lt_x);
    let shr = s.shift_const(ShiftKind::Shr, vy, 1);
    let shl = s.shift_const(ShiftKind::Shl, vy, 1);
    let y0 = s.bit(vy, 0);
    let y7 = s.bit(vy, 7);
    let alu_val = s.and_or(8, &[(alu[0], vy), (alu[1], or_), (alu[2], and_), (alu[3], xor_), (alu[4], sum), (alu[5], sub_xy), (alu[6], shr), (alu[7], sub_yx), (alu[8], shl)]);
    let z1 = s.konst(1, 0);
    let alu_flag1 = s.and_or(1, &[(alu[1], z1), (alu[2], z1), (alu[3], z1), (alu[4], carry), (alu[5], x_ge_y), (alu[6], y0), (alu[7], y_ge_x), (alu[8], y7)]);
    let alu_flag = s.zext(alu_flag1, 8);
    let flag_op = s.any(&alu[1..]);

    // ---- keys ----
    let vx4 = s.slice(vx, 0, 4);
    let key_bit = {
        let k = s.shift(ShiftKind::Shr, keys, vx4);
        s.bit(k, 0)
    };
    let first_key = {
        let cases: Vec<(NodeId, NodeId)> = (0..16u32)
            .map(|k| {
                let bk = s.bit(keys, k);
                let sel = if k == 0 {
                    bk
                } else {
                    let low = s.slice(keys, 0, k);
                    let none = s.eq_const(low, 0);
                    s.and(bk, none)
                };
                (sel, s.konst(8, k as u64))
            })
            .collect();
        s.and_or(8, &cases)
    };

    // ---- V writes: VX (or V[BUSY] for FX65); row 15 is the VF register ----
    let added = s.add(vx, lo);
    let lfsr_lo = s.slice(lfsr, 0, 8);
    let rnd_v = s.and(lfsr_lo, lo);
    let key_ok = s.not(no_key);
    let f0a_set = s.and(f0a, key_ok);
    let any_alu = s.any(&alu);
    let vx_val = s.and_or(8, &[(ld, lo), (addk, added), (any_alu, alu_val), (rnd, rnd_v), (f07, dt), (f0a_set, first_key)]);
    let writes_vx = s.any(&[ld, addk, any_alu, rnd, f07, f0a_set]);
    let v_addr = s.select(f65, busy4, x);
    let v_data = s.select(f65, mb, vx_val);
    let v_any = s.or(writes_vx, f65);
    let v_to15 = s.eq_const(v_addr, 15);
    let v_mem = {
        let n15 = s.not(v_to15);
        let a = s.and(v_any, n15);
        g(s, a)
    };
    s.mem_write(mem::V, v_addr, v_data, v_mem);

    // ---- the screen: DXYN row (VY mod 32) + BUSY, clipped ----
    let row_sum = {
        let vy5 = s.slice(vy, 0, 5);
        let a = s.zext(vy5, 6);
        s.add(a, busy)
    };
    let row_ok = {
        let b5 = s.bit(row_sum, 5);
        s.not(b5)
    };
    let row = s.slice(row_sum, 0, 5);
    let cur = s.load(mem::SCREEN, 64, row);
    let mask = {
        let rev: Vec<NodeId> = (0..8).rev().map(|k| s.bit(mb, k)).collect();
        let r8 = s.concat(&rev);
        let r64 = s.zext(r8, 64);
        let x0 = s.slice(vx, 0, 6);
        s.shift(ShiftKind::Shl, r64, x0)
    };
    let drawn = s.xor(cur, mask);
    let nn0 = s.not(n0);
    let draws = s.all(&[draw_runs, row_ok, nn0]);
    let hit = {
        let a = s.and(cur, mask);
        let z = s.eq_const(a, 0);
        let nz = s.not(z);
        s.and(draws, nz)
    };
    let scr_en = g(s, draws);
    s.mem_write(mem::SCREEN, row, drawn, scr_en);
    // CLS: one step, whose clear token zeroes the display's Gated DeltaNet state (decay 0).
    let cls_g = g(s, cls);
    s.mem_clear(mem::SCREEN, cls_g);

    // ---- RAM writes: FX33 digit BUSY, FX55 V[BUSY], at I + BUSY ----
    let digit = {
        let h = s.lookup(8, (0..256u64).map(|v| v / 100).collect(), vx);
        let te_ = s.lookup(8, (0..256u64).map(|v| v / 10 % 10).collect(), vx);
        let o = s.lookup(8, (0..256u64).map(|v| v % 10).collect(), vx);
        let b0 = busy_is(s, 0);
        let b1 = busy_is(s, 1);
        let b2 = busy_is(s, 2);
        s.and_or(8, &[(b0, h), (b1, te_), (b2, o)])
    };
    let ram_data = s.select(f33, digit, vb);
    let ram_en = {
        let a = s.or(f33, f55);
        g(s, a)
    };
    s.mem_write(mem::RAM, i_b, ram_data, ram_en);

    // ---- stack ----
    let two12 = s.konst(12, 2);
    let pc2 = s.add(pc, two12);
    let call_en = g(s, call);
    s.mem_write(mem::STACK, sp, pc2, call_en);
    let one4 = s.konst(4, 1);
    let sp_m1 = s.sub(sp, one4);
    let ret_to = s.load(mem::STACK, 12, sp_m1);

    // ---- next PC ----
    let four12 = s.konst(12, 4);
    let pc4 = s.add(pc, four12);
    let skip = {
        let eqk = s.eq(vx, lo);
        let neqk = s.not(eqk);
        let eqv = s.eq(vx, vy);
        let neqv = s.not(eqv);
        let nkey = s.not(key_bit);
        let c = [s.and(se, eqk), s.and(sne, neqk), s.and(sexy, eqv), s.and(snexy, neqv), s.and(skp, key_bit), s.and(sknp, nkey)];
        s.any(&c)
    };
    let v0_12 = s.zext(v0, 12);
    let jv = s.add(nnn, v0_12);
    let stay = s.any(&[hold, wait, illegal, stop]);
    let nstay = s.not(stay);
    let jumps = s.or(jp, call);
    let skip_g = s.and(skip, nstay);
    let jump_g = s.and(jumps, nstay);
    let ret_g = s.and(ret, nstay);
    let jpv_g = s.and(jpv0, nstay);
    let plain = {
        let other = s.any(&[skip, jumps, ret, jpv0]);
        let no = s.not(other);
        s.and(no, nstay)
    };
    let pc_next = s.and_or(12, &[(stay, pc), (skip_g, pc4), (jump_g, nnn), (ret_g, ret_to), (jpv_g, jv), (plain, pc2)]);
    s.set_next(reg::PC, pc_next);

    // ---- other registers ----
    let sp_p1 = s.add(sp, one4);
    let call_g = g(s, call);
    let ret_s = g(s, ret);
    let sp_keep = {
        let c = s.or(call_g, ret_s);
        s.not(c)
    };
    let sp_next = s.and_or(4, &[(call_g, sp_p1), (ret_s, sp_m1), (sp_keep, sp)]);
    s.set_next(reg::SP, sp_next);

    let vx12 = s.zext(vx, 12);
    let i_add = s.add(i, vx12);
    let font = s.lookup(12, (0..16u64).map(|k| k * 5).collect(), vx4);
    let x12 = s.zext(x, 12);
    let i_x1 = {
        let a = s.add(i, x12);
        s.add(a, one12)
    };
    let fx_done = {
        let f5565 = s.or(f55, f65);
        s.and(f5565, fx_last)
    };
    let ldi_g = g(s, ldi);
    let f1e_g = g(s, f1e);
    let f29_g = g(s, f29);
    let fx_g = g(s, fx_done);
    let i_keep = {
        let c = s.any(&[ldi_g, f1e_g, f29_g, fx_g]);
        s.not(c)
    };
    let i_next = s.and_or(12, &[(ldi_g, nnn), (f1e_g, i_add), (f29_g, font), (fx_g, i_x1), (i_keep, i)]);
    s.set_next(reg::I, i_next);

    s.set_next(reg::LAST, tick);
    let timer = |s: &mut CircuitBuilder, t: NodeId, set: NodeId| {
        let z = s.eq_const(t, 0);
        let one8 = s.konst(8, 1);
        let dec = s.sub(t, one8);
        let nz = s.not(z);
        let dec_ok = s.and(new_tick, nz);
        let set_g = g(s, set);
        let nset = s.not(set_g);
        let d = s.and(dec_ok, nset);
        let keep = {
            let c = s.or(d, set_g);
            s.not(c)
        };
        s.and_or(8, &[(set_g, vx), (d, dec), (keep, t)])
    };
    let dt_next = timer(s, dt, f15);
    let st_next = timer(s, st, f18);
    s.set_next(reg::DT, dt_next);
    s.set_next(reg::ST, st_next);
    let beep_on = s.ne_const(st_next, 0);
    let was_on = s.ne_const(st, 0);
    let beep_changes = s.xor(beep_on, was_on);
    s.output(1, beep_on, beep_changes);

    let one6 = s.konst(6, 1);
    let busy_p1 = s.add(busy, one6);
    let zero6 = s.konst(6, 0);
    let busy_next = s.select(hold, busy_p1, zero6);
    s.set_next(reg::BUSY, busy_next);

    // The LFSR steps once per instruction (each step that is not inside a micro-coded one, or a fault).
    let lfsr_step = {
        let a = s.shift_const(ShiftKind::Shr, lfsr, 1);
        let b0 = s.bit(lfsr, 0);
        let taps = s.konst(16, 0xB400);
        let z16 = s.konst(16, 0);
        let t16 = s.select(b0, taps, z16);
        s.xor(a, t16)
    };
    let lfsr_moves = {
        let c = s.any(&[hold, illegal, stop]);
        s.not(c)
    };
    let lfsr_next = s.select(lfsr_moves, lfsr_step, lfsr);
    s.set_next(reg::LFSR, lfsr_next);

    // VF: a flag op's flag; DXYN's collision (OR over its rows); a VX write to V15; FX65's byte for V15.
    let to15 = s.and(v_any, v_to15);
    let to15_plain = {
        let nf = s.not(flag_op);
        s.and(to15, nf)
    };
    let flag_g = g(s, flag_op);
    let to15_g = g(s, to15_plain);
    let drw_g = g(s, draw_runs);
    let ndrw0 = s.not(busy0);
    let drw_first = s.and(drw_g, busy0);
    let drw_more = s.and(drw_g, ndrw0);
    let hit8 = s.zext(hit, 8);
    let vf_or = s.or(vf, hit8);
    let vf_keep = {
        let c = s.any(&[flag_g, to15_g, drw_g]);
        s.not(c)
    };
    let vf_next = s.and_or(8, &[(flag_g, alu_flag), (to15_g, v_data), (drw_first, hit8), (drw_more, vf_or), (vf_keep, vf)]);
    s.set_next(reg::VF, vf_next);

    // A fault: the opcode on FAULT, and the next step halts.
    s.output(0, op, illegal);
    let stop_next = s.or(stop, illegal);
    s.set_next(reg::STOP, stop_next);
    s.halt(stop);

    let r = |name: &str, width: u32| RegisterDesc { name: name.into(), width };
    let m = |name: &str, word_width: u32, addr_width: u32| MemoryDesc { name: name.into(), word_width, addr_width };
    let mut desc = MachineDesc::new(
        "chip8",
        vec![r("PC", 12), r("I", 12), r("SP", 4), r("DT", 8), r("ST", 8), r("LAST", 8), r("BUSY", 6), r("LFSR", 16), r("VF", 8), r("STOP", 1)],
        vec![m("RAM", 8, 12), m("V", 8, 4), m("STACK", 12, 4), m("SCREEN", 64, 5)],
        vec![PortDesc::new("FAULT", 16).with_role(PortRole::Fault), PortDesc::new("BEEP", 1)],
        b.finish(),
    )
    .with_inputs(vec![PortDesc::new("TICK", 8), PortDesc::new("KEYS", 16)])
    .with_devices(vec![
        DeviceDesc::Display { memory: "SCREEN".into(), width: 64, height: 32 },
        DeviceDesc::Keypad { input: "KEYS".into(), keys: 16 },
        DeviceDesc::Ticks { input: "TICK".into(), instructions: INSTRUCTIONS_PER_TICK },
        DeviceDesc::Beeper { port: "BEEP".into() },
    ])
    .with_program_layout(ProgramLayout {
        memory: "RAM".into(),
        base: u64::from(crate::interp::PROGRAM_BASE),
        preload: vec![(0, crate::interp::FONT.iter().map(|b| u64::from(*b)).collect())],
        registers: vec![("PC".into(), u64::from(crate::interp::PROGRAM_BASE)), ("LFSR".into(), u64::from(crate::interp::LFSR_SEED))],
    });
    desc.micro_step = Some(reg::BUSY);
    desc
}

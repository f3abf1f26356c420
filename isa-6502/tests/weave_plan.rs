//! The weaver's plan of the 2A03 (cheap: no weights): layers, width, the layers of its memory reads, and the
//! critical path (`MOS6502_CRITICAL_PATH=1` prints it).

use isa_6502::circuit::{Mos6502Options, mos6502_machine};

#[test]
fn the_plan_of_the_2a03() {
    let desc = mos6502_machine(&Mos6502Options::default());
    let (proto, net, sched, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
    let cfg = weaver::emit::config(&alloc);
    let g = alloc.geometry;
    eprintln!(
        "2A03: {} layers, hidden {}, intermediate {}, {} key / {} value heads per layer (d_k {}, d_v {}), vocab {}, {} parameters, {} gates, {} reads, {} step fields",
        g.layers, g.hidden, g.intermediate, g.key_heads, g.value_heads, g.dk, g.dv, g.vocab, cfg.parameter_count(), net.gates.len(), net.reads.len(), proto.step_fields.len()
    );
    for (i, r) in net.reads.iter().enumerate() {
        eprintln!("  read #{i} of {} in layer {}", desc.memories[r.mem as usize].name, sched.read_sublayer[i] / 2);
    }
    if std::env::var_os("MOS6502_CRITICAL_PATH").is_some() {
        let path: Vec<String> = sched.critical_path(&net).iter().map(|(n, t)| format!("{n}@{t}")).collect();
        eprintln!("  critical path (node@ready sublayer): {}", path.join(" <- "));
    }
    assert!(g.layers <= 19, "{} layers (one-layer selects, per-candidate pointer rows and per-bit flag selects keep the 2A03 at 19)", g.layers);
}

#[test]
fn the_console_adds_no_depth_and_the_nes_map_two_layers() {
    // The NES map translates the data address and waits for the IO decision (a stall) in every case's select.
    for (name, opts, most) in [
        ("flat with console and exit", Mos6502Options { console: Some(0xF001), exit: Some(0xF002), nes: false }, 19),
        ("NES map", Mos6502Options { nes: true, ..Default::default() }, 21),
    ] {
        let desc = mos6502_machine(&opts);
        let (_, _, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
        let cfg = weaver::emit::config(&alloc);
        eprintln!("2A03 {name}: {} layers, hidden {}, {} parameters", alloc.geometry.layers, alloc.geometry.hidden, cfg.parameter_count());
        assert!(alloc.geometry.layers <= most, "{name}: {} layers", alloc.geometry.layers);
    }
}

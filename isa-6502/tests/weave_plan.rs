//! The weaver's plan of the 2A03 (cheap: no weights): layers, width, the layers of its memory reads, and the
//! critical path (`MOS6502_CRITICAL_PATH=1` prints it).

use isa_6502::circuit::{Mos6502Options, PrgBanking, PrgRom, mos6502_machine};

#[test]
fn the_plan_of_the_2a03() {
    let desc = mos6502_machine(&Mos6502Options::default());
    let (proto, net, sched, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
    let g = alloc.geometry;
    eprintln!("2A03: {}\n{}", weaver::plan_summary(&proto, &net, &alloc), weaver::plan_layers(&desc, &net, &sched, &alloc));
    if std::env::var_os("MOS6502_CRITICAL_PATH").is_some() {
        let path: Vec<String> = sched.critical_path(&net).iter().map(|(n, t)| format!("{n}@{t}")).collect();
        eprintln!("  critical path (node@ready sublayer): {}", path.join(" <- "));
    }
    assert!(g.layers <= 19, "{} layers (one-layer selects, per-candidate pointer rows and per-bit flag selects keep the 2A03 at 19)", g.layers);
}

#[test]
fn the_console_adds_no_depth_and_the_nes_map_one_layer() {
    // The NES map translates the data address and decides IO against memory in every case's select.
    for (name, opts, most, heads) in [
        ("flat with console and exit", Mos6502Options { console: Some(0xF001), exit: Some(0xF002), ..Default::default() }, 19, 264),
        ("NES map", Mos6502Options { nes: true, ..Default::default() }, 20, 104),
    ] {
        let desc = mos6502_machine(&opts);
        let (_, _, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
        let cfg = weaver::emit::config(&alloc);
        let g = alloc.geometry;
        eprintln!("2A03 {name}: {} layers, hidden {}, {} value heads, {} parameters", g.layers, g.hidden, g.value_heads, cfg.parameter_count());
        assert!(g.layers <= most, "{name}: {} layers", g.layers);
        assert_eq!(g.value_heads, heads, "{name}: value heads");
    }
}

/// PRG banking in the circuit (UxROM, MMC1, MMC3) adds no layer, and the memories hold the whole PRG ROM four
/// bytes a row: a layer that reads both holds the RAM's 64 value heads and the ROM's KiB (two halves of KiB x 128
/// rows, 256 rows a head), and at most 16 others (staging, `INIT`, `PRG_FIRST`).
#[test]
fn prg_banking_adds_no_layer() {
    for (banking, kib) in [(PrgBanking::Uxrom, 64u32), (PrgBanking::Uxrom, 256), (PrgBanking::Uxrom, 512), (PrgBanking::Mmc1, 128), (PrgBanking::Mmc1, 256), (PrgBanking::Mmc1, 512), (PrgBanking::Mmc3, 32), (PrgBanking::Mmc3, 512)] {
        let opts = Mos6502Options { nes: true, prg: PrgRom { kib, banking }, ..Default::default() };
        let desc = mos6502_machine(&opts);
        let (_, _, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
        let cfg = weaver::emit::config(&alloc);
        let g = alloc.geometry;
        eprintln!("2A03 NES map, {banking:?} {kib} KiB: {} layers, hidden {}, {} value heads, {} parameters", g.layers, g.hidden, g.value_heads, cfg.parameter_count());
        assert!(g.layers <= 20, "{banking:?} {kib} KiB: {} layers", g.layers);
        let heads = g.value_heads as u32;
        assert!((64 + kib..=64 + kib + 16).contains(&heads), "{banking:?} {kib} KiB: {heads} value heads");
    }
}

/// The NES map's wide sums whose results have room in the schedule take narrow windows (a carry out of every
/// byte: a program counter's low bits then change the forms of its low byte alone, not all sixteen); the ones on
/// the critical path keep the wide window, and the map keeps its 20 layers.
#[test]
fn the_nes_map_narrows_the_sums_off_its_critical_path() {
    let desc = mos6502_machine(&Mos6502Options { nes: true, ..Default::default() });
    let (proto, net, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
    let (wide, sums) = weaver::lower::lower_narrowing(&desc, &proto, &Default::default()).expect("lowers");
    let byte_carries = |names: &[String]| names.iter().filter(|n| n.ends_with(&format!(".carry{}", weaver::lower::NARROW_WINDOW))).count();
    let narrowed = sums.iter().filter(|s| net.names.iter().any(|n| *n == format!("{s}.carry{}", weaver::lower::NARROW_WINDOW))).count();
    eprintln!("2A03 NES map: {narrowed} of {} wide sums narrowed, {} layers", sums.len(), alloc.geometry.layers);
    assert!(narrowed >= 4 && narrowed < sums.len(), "{narrowed} of {} sums narrowed", sums.len());
    assert!(byte_carries(&net.names) > byte_carries(&wide.names));
    assert_eq!(alloc.geometry.layers, 20);
}

/// Each of the NES map's memories that the CPU writes (its four RAM banks) applies its latest write again at a
/// commit only when the step wrote the memory's write fields, or wrote no field before them: a layer-0 head per
/// memory keeps that mark, and the memory's commit enable reads it. `PC.0` (written by nearly every step) comes
/// before every memory's writes; a memory's first address chunk marks it. A fitted geometry (a graft) keeps the
/// commits without marks.
#[test]
fn the_nes_map_commits_a_memory_only_after_its_step_wrote_it() {
    use isa_api::FieldRole;
    use weaver::lower::{before_writes, writes_memory, Classes};
    use weaver::net::Source;
    let desc = mos6502_machine(&Mos6502Options { nes: true, ..Default::default() });
    let (proto, net, _, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: None, attention_layer: false }).expect("plans");
    let field = |name: &str| proto.fields.iter().position(|f| f.name == name).unwrap_or_else(|| panic!("field {name}")) as u32;
    let stored: Vec<u32> = proto.fields.iter().filter_map(|f| if let FieldRole::MemAddr { mem, chunk: 0 } = f.role { Some(mem) } else { None }).collect();
    assert_eq!(stored.len(), 4, "the RAM's four byte banks");
    for &m in &stored {
        let name = &desc.memories[m as usize].name;
        assert_eq!(alloc.layers[0].heads.iter().filter(|h| h.name == format!("wrote {name}")).count(), 1, "{name}'s mark head");
        let wrote = net.nodes.iter().position(|s| *s == Source::Wrote(m)).expect("a mark node") as u32;
        let commit = net.commits.iter().find(|c| c.mem == m).expect("a commit");
        let Source::Gate(g) = net.nodes[commit.enable.node as usize] else { panic!("{name}'s commit enable is a gate") };
        assert!(net.gates[g as usize].terms.iter().any(|t| t.lin.iter().any(|(n, _)| *n == wrote)), "{name}'s commit reads its mark");
        let a0 = proto.fields.iter().position(|f| f.role == FieldRole::MemAddr { mem: m, chunk: 0 }).unwrap() as u32;
        assert!(writes_memory(&proto, Classes::field(a0), m) && !before_writes(&proto, Classes::field(a0), m));
        let pc0 = Classes::field(field("PC.0"));
        assert!(before_writes(&proto, pc0, m) && !writes_memory(&proto, pc0, m), "PC.0 before {name}'s writes");
        for k in [Classes::STEP, Classes::HALT] {
            assert!(!before_writes(&proto, k, m) && !writes_memory(&proto, k, m));
        }
    }
    // The four banks' writes follow one another in step order: bank 0's data comes before bank 1's address.
    let (d0, a1) = (Classes::field(field("M0_DATA")), Classes::field(field("M1_ADDR.0")));
    assert!(before_writes(&proto, d0, stored[1]) && writes_memory(&proto, d0, stored[0]) && !before_writes(&proto, a1, stored[1]));
    let fit = weaver::geometry::GeometryConfig::default();
    let (_, fitted, _, _) = weaver::plan(&desc, &weaver::WeaveOptions { fit: Some(fit), attention_layer: false }).expect("plans a fitted geometry");
    assert!(!fitted.nodes.iter().any(|s| matches!(s, Source::Wrote(_))), "no marks when fitting a geometry");
}

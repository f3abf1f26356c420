//! The weaver's view of the RV32IM+Zba machine: geometry, layers, parameters and the critical path.
//!
//! The geometry comes from the weaver's passes up to allocation (cheap). The full `weaver::weave` (dense f32
//! tensors) runs only when the parameter count fits `RV32_WEAVE_MAX_PARAMS` (default 500 million = 2 GB), so
//! that this test never exhausts a shared machine; otherwise it prints what a full weave would need.

use isa_rv32im::circuit::{Rv32MachineOptions, rv32im_machine};
use weaver::net::Source;

fn max_params() -> usize {
    std::env::var("RV32_WEAVE_MAX_PARAMS").ok().and_then(|v| v.parse().ok()).unwrap_or(500_000_000)
}

/// Qwen3.5-9B's layer shape (transformers' `Qwen3_5TextConfig` defaults): hidden 4096, intermediate 12288,
/// 16 key / 32 value DeltaNet heads of 128 dims, every 4th layer full attention, 32 layers.
fn qwen35_9b() -> weaver::Geometry {
    weaver::Geometry { layers: 32, hidden: 4096, intermediate: 12288, key_heads: 16, value_heads: 32, dk: 128, dv: 128, vocab: 0, attention_interval: 4 }
}

fn report(opts: &Rv32MachineOptions) -> (usize, usize) {
    report_fit(opts, None).0
}

fn report_fit(opts: &Rv32MachineOptions, fit: Option<weaver::Geometry>) -> ((usize, usize), weaver::allocate::Allocation) {
    let desc = rv32im_machine(opts).unwrap();
    let t0 = std::time::Instant::now();
    let fit = fit.map(|g| weaver::Geometry { vocab: isa_api::Protocol::of(&desc).vocab_size as usize, ..g });
    let (proto, net, sched, alloc) = weaver::plan(&desc, &weaver::WeaveOptions { fit: fit.map(Into::into), attention_layer: false }).expect("plans");
    let cfg = weaver::emit::config(&alloc);
    let g = alloc.geometry;
    let params = cfg.parameter_count();
    let (kib, secs) = (opts.ram_size / 1024, t0.elapsed().as_secs_f64());
    eprintln!("rv32im {kib} KiB {:?}: {} ({secs:.1} s to allocate)", opts.layout, weaver::plan_summary(&proto, &net, &alloc));
    // Where the memory reads sit, and the deepest gates (the critical path's tail).
    eprintln!("{}", weaver::plan_layers(&desc, &net, &sched, &alloc));
    let mut gate_node = vec![0usize; net.gates.len()];
    for (i, src) in net.nodes.iter().enumerate() {
        if let Source::Gate(gi) = src {
            gate_node[*gi as usize] = i;
        }
    }
    let last = sched.gate_sublayer.iter().max().copied().unwrap_or(0);
    let deep: Vec<&str> = (0..net.gates.len()).filter(|gi| sched.gate_sublayer[*gi] == last).take(8).map(|gi| net.names[gate_node[gi]].as_str()).collect();
    eprintln!("  deepest gates (sublayer {last}): {deep:?}");
    // The critical path, walked back from the deepest gate through its latest input.
    if std::env::var_os("RV32_CRITICAL_PATH").is_some() {
        let path: Vec<String> = sched.critical_path(&net).iter().map(|(n, t)| format!("{n}@{t}")).collect();
        eprintln!("  critical path (node@ready time): {}", path.join(" <- "));
    }
    if std::env::var_os("RV32_CRITICAL_PATH").is_some() {
        // Ready time (sublayer) of every emitted field: which outputs set the depth.
        let fr: Vec<String> = proto.step_fields.iter().zip(&net.outputs).map(|(f, o)| {
            let t = o.bits.iter().chain([&o.emit]).map(|x| sched.ready[x.node as usize]).max().unwrap_or(0);
            format!("{}:{t}", proto.fields[*f as usize].name)
        }).collect();
        eprintln!("  field ready times: {}", fr.join(" "));
    }
    if params <= max_params() && fit.is_none() {
        let w = weaver::weave(&desc, &Default::default()).expect("weaves");
        eprintln!("  woven: {}", w.report.render());
        assert_eq!(w.report.tokens_per_step, proto.step_fields.len());
    } else {
        eprintln!("  full weave skipped: {params} parameters exceed RV32_WEAVE_MAX_PARAMS = {}", max_params());
    }
    ((g.layers, proto.step_fields.len()), alloc)
}

#[test]
fn weaves_into_qwen35_9b_geometry() {
    // 128 KiB of RAM: 32,768 word rows = 256 heads of 128 rows per read copy, 8 layers of 32 value heads
    let ram = Rv32MachineOptions { ram_size: 128 * 1024, ..Default::default() };
    let ((layers, tokens), a) = report_fit(&ram, Some(qwen35_9b()));
    assert_eq!(tokens, 26);
    let g = a.geometry;
    assert_eq!((g.layers, g.hidden, g.intermediate, g.key_heads, g.value_heads, g.dk, g.dv, g.attention_interval), (32, 4096, 12288, 16, 32, 128, 128, 4));
    assert_eq!(layers, 32);
    assert_eq!(a.attention_layers, (0..32).filter(|l| l % 4 == 3).collect::<Vec<_>>());
    for (l, la) in a.layers.iter().enumerate() {
        assert!(la.heads.len() <= 32 && la.groups.len() <= 16, "layer {l}");
        if l % 4 == 3 {
            assert!(la.heads.is_empty(), "attention layer {l} holds heads");
        }
    }
    let ram_heads = a.layers.iter().flat_map(|l| l.heads.iter()).filter(|h| h.name.starts_with("memory RAM")).count();
    assert_eq!(ram_heads, 2 * 256, "two RAM reads (fetch, load) of 256 blocks each");
    let used = a.layers.iter().rposition(|l| !l.heads.is_empty() || !l.units.is_empty()).unwrap() + 1;
    eprintln!("Qwen3.5-9B geometry: {used} of 32 layers used, {} of 4096 hidden slots hold nodes", a.slots.iter().filter(|s| s.kind != weaver::allocate::SlotKind::Pad).count());
    // 256 KiB does not fit 32 layers: the error names the layers it needs.
    let desc = rv32im_machine(&Rv32MachineOptions::ram_256k()).unwrap();
    let fit = weaver::Geometry { vocab: isa_api::Protocol::of(&desc).vocab_size as usize, ..qwen35_9b() };
    let e = weaver::plan(&desc, &weaver::WeaveOptions { fit: Some(fit.into()), attention_layer: false }).unwrap_err().to_string();
    assert!(e.contains("num_hidden_layers needs 51 but the target has 32"), "{e}");
}

#[test]
fn weaver_report_64k() {
    let (layers, tokens) = report(&Rv32MachineOptions::default());
    assert_eq!(tokens, 26, "at most, when every field changes: PC 2, BUSY 1, DIV_Q 4, X 1 + 4, RAM 2 + 4, OUT, EXIT, FAULT 5, IN_REQ");
    assert!(layers >= 4, "{layers}");
}

#[test]
fn weaver_report_64k_byte_lanes() {
    let o = Rv32MachineOptions { layout: isa_rv32im::circuit::MemoryLayout::ByteLanes, ..Default::default() };
    let (layers, tokens) = report(&o);
    assert_eq!(tokens, 32, "PC 2, BUSY 1, DIV_Q 4, X 1 + 4, four lanes of 2 + 1, OUT, EXIT, FAULT 5, IN_REQ");
    assert!(layers >= 4, "{layers}");
}

#[test]
#[ignore = "large: run with --ignored to see the 256 KiB geometry"]
fn weaver_report_256k() {
    report(&Rv32MachineOptions::ram_256k());
    report(&Rv32MachineOptions { layout: isa_rv32im::circuit::MemoryLayout::ByteLanes, ..Rv32MachineOptions::ram_256k() });
}

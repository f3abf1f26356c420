//! The weaver: compiles a machine's circuit into the weights of standard Qwen3.5 decoder layers.
//! Nothing is trained; every weight is computed.
//!
//! Passes, one module each: [`lower`] (word circuit -> bit-level threshold gates), [`prune`] (dead-gate
//! elimination), [`schedule`] (gates and
//! reads -> sublayers), [`allocate`] (typed residual slots, MLP units, DeltaNet heads, geometry), [`emit`]
//! (tensors), [`report`] (figures and the allocation dump). [`geometry`] holds the model's shape (minimal or
//! fitted to a base model's), [`numerics`] the f32 facts the weights rely on, [`config`] the one machine config
//! schema, [`manifest`] what is published with a woven model, [`export`] checkpoint directories.
//!
//! The residual stream holds only ±1 entries, so every RMSNorm is the identity (with the compensating gain of
//! [`numerics::norm_gain_weight`]) and every linear form is an exact f32 integer.
pub mod allocate;
pub mod config;
pub mod emit;
pub mod error;
pub mod export;
pub mod geometry;
pub mod graft;
pub mod lower;
pub mod manifest;
pub mod net;
pub mod numerics;
pub mod prune;
pub mod report;
pub mod schedule;

pub use geometry::{Geometry, GeometryConfig};
pub use error::WeaveError;
pub use manifest::Manifest;
pub use report::Report;

use backends::{Qwen35Config, WeightMap};
use isa_api::{MachineDesc, Protocol};

/// Options of [`weave`].
#[derive(Clone, Debug, Default)]
pub struct WeaveOptions {
    /// Fit a given geometry instead of the minimal one (error naming what overflows): its head counts and
    /// d_k bound each layer's token mixer (a memory read that does not fit one layer spreads over several),
    /// its `attention_interval` makes every such layer full attention; missing fields take the minimal need.
    pub fit: Option<GeometryConfig>,
    /// Make one layer an inert full-attention layer (the last, if its mixer is idle; else one more layer),
    /// which transformers' cache needs to count positions. Exported checkpoints set it.
    pub attention_layer: bool,
}

/// A woven machine: the model and everything published with it.
#[derive(Clone, Debug)]
pub struct Woven {
    pub config: Qwen35Config,
    pub weights: WeightMap,
    pub protocol: Protocol,
    pub manifest: Manifest,
    pub report: Report,
    pub netlist: net::Netlist,
    pub allocation: allocate::Allocation,
    pub schedule: schedule::Schedule,
}

/// One line for a plan (see [`plan`]): the geometry, the dense parameters (and their GB as f32), the gates, the
/// memory reads and the trace fields per step; what the machine crates' plan reports print.
pub fn plan_summary(proto: &Protocol, net: &net::Netlist, alloc: &allocate::Allocation) -> String {
    let params = emit::config(alloc).parameter_count();
    let (gates, reads, fields) = (net.gates.len(), net.reads.len(), proto.step_fields.len());
    format!("{}, {params} parameters ({:.2} GB dense f32), {gates} gates, {reads} memory reads, {fields} step fields", alloc.geometry, params as f64 * 4e-9)
}

/// A plan layer by layer, a line each: MLP units and DeltaNet heads per layer, then each memory read and the
/// layer it sits in.
pub fn plan_layers(desc: &MachineDesc, net: &net::Netlist, sched: &schedule::Schedule, alloc: &allocate::Allocation) -> String {
    let units: Vec<usize> = alloc.layers.iter().map(|l| l.units.len()).collect();
    let heads: Vec<usize> = alloc.layers.iter().map(|l| l.heads.len()).collect();
    let mut out = format!("  MLP units per layer {units:?}\n  DeltaNet heads per layer {heads:?}");
    for (i, r) in net.reads.iter().enumerate() {
        out += &format!("\n  read #{i} of {} in layer {}", desc.memories[r.mem as usize].name, sched.read_sublayer[i] / 2);
    }
    out
}

/// The passes before emission (cheap: no tensors): protocol, pruned netlist, schedule and allocation; without a
/// fitted geometry, write marks on the memory commits where they cost no layer and no head
/// ([`lower::lower_planned`]) and the wide sums off the critical path lowered with narrow windows (see [`lower`]).
pub fn plan(desc: &MachineDesc, opts: &WeaveOptions) -> Result<(Protocol, net::Netlist, schedule::Schedule, allocate::Allocation), WeaveError> {
    desc.validate()?;
    let protocol = Protocol::of(desc);
    let (wide, sums) = lower::lower_narrowing(desc, &protocol, &Default::default())?;
    let (mut netlist, mut schedule, mut allocation) = place(desc, opts, &protocol, wide)?;
    if opts.fit.is_some() {
        return Ok((protocol, netlist, schedule, allocation));
    }
    // Write marks on the memory commits (see `lower::lower_planned`) where they cost no layer and no head.
    let heads = |a: &allocate::Allocation| (a.geometry.layers, a.geometry.key_heads, a.geometry.value_heads);
    let (marked, _) = lower::lower_planned(desc, &protocol, &Default::default(), true)?;
    let marks = match place(desc, opts, &protocol, marked) {
        Ok((n, s, a)) if heads(&a) == heads(&allocation) => {
            (netlist, schedule, allocation) = (n, s, a);
            true
        }
        _ => false,
    };
    if sums.is_empty() {
        return Ok((protocol, netlist, schedule, allocation));
    }
    // Narrow windows for the wide sums wherever the machine keeps its layer count (see `lower`): all of them
    // first, then, while that is deeper, without the narrowed sums on the deeper schedule's critical path.
    let layers = allocation.geometry.layers;
    let mut narrow: std::collections::HashSet<String> = sums.into_iter().collect();
    for _ in 0..NARROWING_ROUNDS {
        let (net, _) = lower::lower_planned(desc, &protocol, &narrow, marks)?;
        let Ok((n, s, a)) = place(desc, opts, &protocol, net) else { break };
        if a.geometry.layers <= layers {
            return Ok((protocol, n, s, a));
        }
        let before = narrow.len();
        for (name, _) in s.critical_path(&n) {
            narrow.remove(name.split('.').next().unwrap_or_default());
        }
        if narrow.len() == before || narrow.is_empty() {
            break;
        }
    }
    Ok((protocol, netlist, schedule, allocation))
}

/// Tries of [`plan`]'s narrowing before it keeps the wide windows.
const NARROWING_ROUNDS: usize = 4;

/// Prune, schedule (sunk where the fit asks) and allocate a lowered netlist.
fn place(desc: &MachineDesc, opts: &WeaveOptions, protocol: &Protocol, lowered: net::Netlist) -> Result<(net::Netlist, schedule::Schedule, allocate::Allocation), WeaveError> {
    let netlist = prune::prune(&lowered);
    let mixers = geometry::mixers(desc, opts.fit.as_ref());
    let mut schedule = schedule::schedule(&netlist, &geometry::memory_rows(desc), &allocate::const_heads(&netlist), &mixers)?;
    if opts.fit.as_ref().and_then(|f| f.sink).unwrap_or(false) {
        schedule::sink(&netlist, &mut schedule);
    }
    let allocation = allocate::allocate(&netlist, &schedule, desc, protocol, opts.fit.as_ref(), opts.attention_layer)?;
    Ok((netlist, schedule, allocation))
}

/// A 64-bit FNV-1a hash of what a weave's weights follow from besides the weaver's code: the machine description
/// (its JSON), the options and this crate's version. A cache of woven machines keys its entries by it (`loom`'s
/// weave cache adds the identity of the binary, so that a rebuilt weaver never reads an older one's weights).
pub fn weave_hash(desc: &MachineDesc, opts: &WeaveOptions) -> u64 {
    let fnv1a = |bytes: &[u8], mut h: u64| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h
    };
    let mut h = 0xcbf2_9ce4_8422_2325;
    h = fnv1a(serde_json::to_string(desc).expect("a machine description serializes").as_bytes(), h);
    h = fnv1a(format!("{opts:?}").as_bytes(), h);
    fnv1a(env!("CARGO_PKG_VERSION").as_bytes(), h)
}

/// Weave a machine.
pub fn weave(desc: &MachineDesc, opts: &WeaveOptions) -> Result<Woven, WeaveError> {
    let t0 = std::time::Instant::now();
    let (protocol, netlist, schedule, allocation) = plan(desc, opts)?;
    let config = emit::config(&allocation);
    config.validate().map_err(|e| WeaveError::Other(format!("woven config is invalid (weaver bug): {e}")))?;
    let mut weights = emit::emit(&netlist, &allocation, &protocol, &config);
    // One scan records where the nonzeros are, so that the executors and the weave cache never read the
    // untouched zero pages of the dense tensors again.
    for t in weights.values_mut() {
        t.index_blocks();
    }
    let nonzero_weights = weights.values().map(|t| t.nonzeros()).sum();
    let g = &allocation.geometry;
    let report = Report {
        machine: desc.name.clone(),
        layers: g.layers,
        hidden_size: g.hidden,
        intermediate_size: g.intermediate,
        deltanet_key_heads: g.key_heads,
        deltanet_value_heads: g.value_heads,
        key_head_dim: g.dk,
        value_head_dim: g.dv,
        vocab_size: g.vocab,
        parameters: config.parameter_count(),
        nonzero_weights,
        tokens_per_step: protocol.step_fields.len().max(1),
        gates: netlist.gates.len(),
        memory_reads: netlist.reads.len(),
        units_per_layer: allocation.layers.iter().map(|l| l.units.len()).collect(),
        heads_per_layer: allocation.layers.iter().map(|l| l.heads.len()).collect(),
        // Whole microseconds: a short decimal, which JSON (the manifest, the weave cache) reads back exactly.
        weave_ms: t0.elapsed().as_micros() as f64 / 1e3,
    };
    let manifest = Manifest::new(desc, &protocol, &report);
    Ok(Woven { config, weights, protocol, manifest, report, netlist, allocation, schedule })
}

//! Where a run's decode time goes: by the kind of token fed ([`TokenTimes`], always), by the trace field of the
//! token fed ([`FieldTimes`], `LOOM_PROFILE=fields`) and by layer and stage (the incremental executor's
//! `StageTimes`, `LOOM_PROFILE=stages`).

/// The profiles `LOOM_PROFILE` asks for, a comma-separated list: `stages` (decode time by layer and stage, the
/// incremental executor) and `fields` (decode time by the trace field of the token fed, any executor).
pub(crate) fn profile_wanted(name: &str) -> bool {
    std::env::var("LOOM_PROFILE").is_ok_and(|v| v.split(',').any(|p| p.trim() == name))
}

/// Decode time by the trace field of the token fed, its commit (end) variant apart from the others: a commit's
/// time is the whole machine step's, so the commits of a field tell which steps end with it (e.g. an `IO_READ`
/// request's) and what they cost. Tokens outside the step fields (loads, `STEP`, `HALT`) are not counted.
#[derive(Clone, Debug)]
pub(crate) struct FieldTimes {
    /// Per token id: `2 * field + end`, or `u32::MAX` when not a counted field token.
    slot: Vec<u32>,
    names: Vec<String>,
    /// Per slot: tokens fed and seconds spent.
    times: Vec<(u64, f64)>,
}

impl FieldTimes {
    pub fn new(proto: &isa_api::Protocol) -> Self {
        use isa_api::protocol::Token;
        let slot = (0..proto.vocab_size)
            .map(|t| match proto.decode(t) {
                Some(Token::Value { field, end, .. }) if !matches!(proto.fields[field as usize].role, isa_api::FieldRole::LoadAddr { .. } | isa_api::FieldRole::LoadData { .. }) => 2 * field + end as u32,
                _ => u32::MAX,
            })
            .collect();
        let names = proto.fields.iter().map(|f| f.name.clone()).collect();
        Self { slot, names, times: vec![(0, 0.0); 2 * proto.fields.len()] }
    }

    /// Count `token`, fed in `secs`.
    pub fn add(&mut self, token: u32, secs: f64) {
        if let Some(&s) = self.slot.get(token as usize).filter(|s| **s != u32::MAX) {
            let e = &mut self.times[s as usize];
            e.0 += 1;
            e.1 += secs;
        }
    }

    /// (field name, commit, tokens, seconds) of every field fed, the most time first.
    pub fn rows(&self) -> Vec<(&str, bool, u64, f64)> {
        let mut rows: Vec<_> = self.times.iter().enumerate().filter(|(_, t)| t.0 > 0).map(|(s, t)| (self.names[s / 2].as_str(), s % 2 == 1, t.0, t.1)).collect();
        rows.sort_by(|a, b| b.3.total_cmp(&a.3));
        rows
    }

    /// The rows as JSON: field, commit, tokens, milliseconds and microseconds per token.
    pub fn json(&self) -> serde_json::Value {
        self.rows().iter().map(|(f, c, n, s)| serde_json::json!({ "field": f, "commit": c, "tokens": n, "ms": s * 1e3, "us_per_token": s / *n as f64 * 1e6 })).collect()
    }

    /// The rows as a table on stderr.
    pub fn print(&self) {
        eprintln!("decode time by the field of the token fed (LOOM_PROFILE=fields):");
        eprintln!("{:>16} {:>7} {:>10} {:>10} {:>8}", "field", "commit", "tokens", "ms", "us/token");
        for (f, c, n, s) in self.rows() {
            eprintln!("{f:>16} {:>7} {n:>10} {:>10.1} {:>8.2}", if c { "yes" } else { "" }, s * 1e3, s / n as f64 * 1e6);
        }
    }
}

/// The stage profile of every token after the prompt ([`stage_times_json`]), with the commit tokens' part of
/// it under `commits` (where a machine step's time goes: its other tokens only read out what it computed).
pub(crate) fn stage_profile_json(all: &backends::incremental::StageTimes, commits: Option<&backends::incremental::StageTimes>) -> serde_json::Value {
    let mut j = stage_times_json(all);
    if let Some(c) = commits {
        j["commits"] = stage_times_json(c);
    }
    j
}

/// The stage profile as JSON: milliseconds per layer and stage, per stage over all layers, and for the final
/// norm with the lm_head (`head_ms`), over `tokens` tokens.
pub(crate) fn stage_times_json(t: &backends::incremental::StageTimes) -> serde_json::Value {
    let ms = |ns: u64| ns as f64 / 1e6;
    serde_json::json!({
        "tokens": t.tokens,
        "stages": backends::incremental::STAGES,
        "ms_per_stage": t.per_stage().map(ms),
        "ms_per_layer": t.layers.iter().map(|l| l.map(ms)).collect::<Vec<_>>(),
        "head_ms": ms(t.head),
    })
}

/// The stage profile as a table on stderr (milliseconds).
pub(crate) fn print_stage_times(t: &backends::incremental::StageTimes, what: &str) {
    let stages = backends::incremental::STAGES;
    eprintln!("decode time by layer and stage over {} {what} (LOOM_PROFILE=stages), ms:", t.tokens);
    eprintln!("{:>6} {}", "layer", stages.iter().map(|s| format!("{s:>15}")).collect::<String>());
    for (l, row) in t.layers.iter().enumerate() {
        eprintln!("{l:>6} {}", row.iter().map(|ns| format!("{:>15.1}", *ns as f64 / 1e6)).collect::<String>());
    }
    eprintln!("{:>6} {}", "all", t.per_stage().iter().map(|ns| format!("{:>15.1}", *ns as f64 / 1e6)).collect::<String>());
    eprintln!("final norm, lm_head and argmax: {:.1} ms", t.head as f64 / 1e6);
}

/// Tokens fed and seconds spent in the executor, by kind: a *commit* (`STEP` or an end token: the forward pass
/// that computes the next machine step), a *field* token (a step's other fields: emitting what the step
/// computed), an *input* (a host injection) and a *prompt* token (program loads). A commit costs several
/// field tokens, so this is where a machine's time goes. One clock read per token.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TokenTimes {
    pub commit: (u64, f64),
    pub field: (u64, f64),
    pub input: (u64, f64),
    pub prompt: (u64, f64),
}

impl TokenTimes {
    /// Per kind: tokens, seconds and microseconds per token.
    pub fn json(&self) -> serde_json::Value {
        let k = |(n, s): (u64, f64)| serde_json::json!({ "tokens": n, "seconds": s, "us_per_token": if n > 0 { s / n as f64 * 1e6 } else { 0.0 } });
        serde_json::json!({ "commit": k(self.commit), "field": k(self.field), "input": k(self.input), "prompt": k(self.prompt) })
    }
}

/// Per token id: 0 commit, 1 field, 2 input, 3 prompt (a load) or outside the protocol.
pub(crate) fn token_kinds(proto: &isa_api::Protocol) -> Vec<u8> {
    use isa_api::protocol::Token;
    (0..proto.vocab_size)
        .map(|t| match proto.decode(t) {
            Some(Token::Step) => 0,
            Some(Token::Value { end: true, .. }) => 0,
            Some(Token::Value { field, .. }) => match proto.fields[field as usize].role {
                isa_api::FieldRole::In { .. } => 2,
                isa_api::FieldRole::LoadAddr { .. } | isa_api::FieldRole::LoadData { .. } => 3,
                _ => 1,
            },
            _ => 3,
        })
        .collect()
}

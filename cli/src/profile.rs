//! Where a run's decode time goes: by the kind of token fed ([`TokenTimes`], always), by the trace field of the
//! token fed ([`FieldTimes`], `LOOM_PROFILE=fields`), by the kind of machine step ([`StepTimes`],
//! `LOOM_PROFILE=steps`) and by layer and stage (the incremental executor's `StageTimes`,
//! `LOOM_PROFILE=stages`).

use std::collections::HashMap;

/// The profiles `LOOM_PROFILE` asks for, a comma-separated list: `stages` (decode time by layer and stage, the
/// incremental executor), `fields` (decode time by the trace field of the token fed, any executor) and `steps`
/// (decode time by the kind of machine step, any executor).
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

/// Decode time by the kind of machine step: the set of trace fields a step writes (its field tokens, the host's
/// answers and injections fed within it, and the field of its commit token), with the time of the commit that
/// computed the step (the forward pass fed the previous step's commit token) apart from that of its other
/// tokens (which emit what it computed). On a NES game the kinds tell, e.g., interrupt sequences and `RTI`s
/// (`PC.0 PC.1 S P CYC.0`) from plain steps (`PC.0 CYC.0`) and IO reads (`IO_READ.0 ... IN_IO_DATA`), and what
/// each costs. The steps before the first commit and the last, unfinished one are not counted.
#[derive(Clone, Debug)]
pub(crate) struct StepTimes {
    /// Per token id: its field, or `u32::MAX` (`STEP`, `HALT`, outside the protocol).
    field: Vec<u32>,
    names: Vec<String>,
    /// Per kind (its fields, ascending): steps, seconds of their commits, seconds of their other tokens.
    kinds: HashMap<Vec<u32>, (u64, f64, f64)>,
    /// The step being emitted: the seconds of the commit that computed it (`None` before the first commit),
    /// its fields so far, the seconds of its other tokens so far.
    pending: Option<f64>,
    fields: Vec<u32>,
    field_secs: f64,
}

/// One kind of step ([`StepTimes::rows`]): its fields' names, steps, seconds of their commits and of their
/// other tokens.
pub(crate) type StepRow = (Vec<String>, u64, f64, f64);

impl StepTimes {
    pub fn new(proto: &isa_api::Protocol) -> Self {
        use isa_api::protocol::Token;
        let field = (0..proto.vocab_size).map(|t| match proto.decode(t) {
            Some(Token::Value { field, .. }) => field,
            _ => u32::MAX,
        });
        let names = proto.fields.iter().map(|f| f.name.clone()).collect();
        Self { field: field.collect(), names, kinds: HashMap::new(), pending: None, fields: Vec::new(), field_secs: 0.0 }
    }

    /// Count `token` of kind `kind` ([`token_kinds`]: 0 a commit, which ends the step being emitted and
    /// computes the next), fed in `secs`. Prompt tokens are not counted.
    pub fn add(&mut self, token: u32, kind: u8, secs: f64) {
        if kind == 3 {
            return;
        }
        if let Some(&f) = self.field.get(token as usize).filter(|f| **f != u32::MAX) {
            if !self.fields.contains(&f) {
                self.fields.push(f);
            }
        }
        if kind != 0 {
            self.field_secs += secs;
            return;
        }
        if let Some(commit) = self.pending {
            self.fields.sort_unstable();
            let e = self.kinds.entry(self.fields.clone()).or_default();
            *e = (e.0 + 1, e.1 + commit, e.2 + self.field_secs);
        }
        self.fields.clear();
        self.field_secs = 0.0;
        self.pending = Some(secs);
    }

    /// Every kind of step counted, the most time (commits and other tokens) first.
    pub fn rows(&self) -> Vec<StepRow> {
        let mut rows: Vec<StepRow> =
            self.kinds.iter().map(|(k, &(n, c, f))| (k.iter().map(|&i| self.names[i as usize].clone()).collect(), n, c, f)).collect();
        rows.sort_by(|a, b| (b.2 + b.3).total_cmp(&(a.2 + a.3)).then_with(|| a.0.cmp(&b.0)));
        rows
    }

    /// The rows as JSON: the step's fields, steps, milliseconds of their commits and of their other tokens,
    /// microseconds per commit.
    pub fn json(&self) -> serde_json::Value {
        self.rows()
            .iter()
            .map(|(f, n, c, o)| serde_json::json!({ "fields": f, "steps": n, "commit_ms": c * 1e3, "other_ms": o * 1e3, "us_per_commit": c / *n as f64 * 1e6 }))
            .collect()
    }

    /// The first `limit` rows as a table on stderr, with each kind's share of the time counted.
    pub fn print(&self, limit: usize) {
        let rows = self.rows();
        let total: f64 = rows.iter().map(|r| r.2 + r.3).sum();
        eprintln!("decode time by the kind of step, its fields (LOOM_PROFILE=steps; commit: the forward pass that computed it):");
        eprintln!("{:>9} {:>6} {:>10} {:>10} {:>10}  fields", "steps", "share", "commit ms", "other ms", "us/commit");
        for (f, n, c, o) in rows.iter().take(limit) {
            let share = if total > 0.0 { (c + o) / total * 100.0 } else { 0.0 };
            eprintln!("{n:>9} {share:>5.1}% {:>10.1} {:>10.1} {:>10.1}  {}", c * 1e3, o * 1e3, c / *n as f64 * 1e6, f.join(" "));
        }
        if rows.len() > limit {
            eprintln!("({} more kinds in the JSON's step_times)", rows.len() - limit);
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

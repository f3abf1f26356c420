//! The front end's text layer: CUDA qualifiers, comments and object-like `#define`s are blanked out (same
//! length, so every byte keeps its line and column), a prelude of `typedef`s (`bool`, `uint`, ...) is put
//! before the text, and `lang-c` parses the result. Positions map back to the original file.

use lang_c::ast::{Expression, TranslationUnit};
use lang_c::driver::{Config, Flavor, parse_preprocessed};
use lang_c::span::{Node, Span};
use std::collections::HashMap;

/// The typedefs every kernel sees (the names CUDA code uses for its integer types). One line, so the
/// original text starts on a line of its own.
const PRELUDE: &str = "typedef _Bool bool; typedef unsigned int uint; typedef unsigned int uint32_t; typedef int int32_t;\n";

/// A CUDA qualifier found (and blanked) in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Qual {
    Global,
    Device,
    Shared,
    /// `__host__`, `__forceinline__`, `__noinline__`, `__inline__`, `__restrict__`: no meaning here.
    Other,
}

/// One object-like `#define NAME value`: the value parsed as an expression.
pub(crate) struct Define {
    pub expr: Node<Expression>,
    /// Added to an offset in the value's own parse to get the offset in the original file.
    pub shift: isize,
}

/// A parsed kernel file.
pub(crate) struct Parsed {
    /// The original text.
    pub text: String,
    /// The text that was parsed (prelude + blanked original).
    pub parsed: String,
    pub unit: TranslationUnit,
    /// Qualifiers by their offset in `parsed` (start, end, kind).
    pub quals: Vec<(usize, usize, Qual)>,
    pub defines: HashMap<String, Define>,
    line_starts: Vec<usize>,
}

/// A position error before there is a compiler: (original offset, message).
pub(crate) type PosErr = (usize, String);

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The index just past the string or character literal whose opening quote is `b[i]`: escapes skipped, a
/// literal left open ends at its line's end.
fn skip_quoted(b: &[u8], mut i: usize) -> usize {
    let q = b[i];
    i += 1;
    while i < b.len() && b[i] != q && b[i] != b'\n' {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// Blank comments (keeping newlines). String and character literals are kept as they are.
fn blank_comments(b: &mut [u8]) {
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1).copied()) {
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    b[i] = b' ';
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                b[i] = b' ';
                b[i + 1] = b' ';
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] != b'\n' {
                        b[i] = b' ';
                    }
                    i += 1;
                }
                for _ in 0..2 {
                    if i < b.len() {
                        b[i] = b' ';
                        i += 1;
                    }
                }
            }
            (b'"' | b'\'', _) => i = skip_quoted(b, i),
            _ => i += 1,
        }
    }
}

impl Parsed {
    /// Preprocess and parse `text`. Errors: (offset in `text`, message).
    pub fn new(text: &str) -> Result<Parsed, PosErr> {
        let mut b = text.as_bytes().to_vec();
        blank_comments(&mut b);
        // Directives, line by line.
        let mut defines_src: Vec<(String, usize, String)> = Vec::new();
        let mut start = 0;
        while start < b.len() {
            let end = b[start..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(b.len(), |p| start + p);
            let first = (start..end).find(|&i| b[i] != b' ' && b[i] != b'\t');
            if let Some(h) = first.filter(|&i| b[i] == b'#') {
                let line = String::from_utf8_lossy(&b[h + 1..end]).to_string();
                let body = line.trim_start();
                let word: String = body
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                match word.as_str() {
                    "define" => {
                        let after = &body[6..];
                        let name: String = after
                            .trim_start()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        let name_at = h
                            + 1
                            + (line.len() - body.len())
                            + 6
                            + (after.len() - after.trim_start().len());
                        if name.is_empty() {
                            return Err((h, "#define without a name".into()));
                        }
                        let vstart = name_at + name.len();
                        if b.get(vstart) == Some(&b'(') {
                            return Err((
                                h,
                                format!(
                                    "function-like macro {name}(...) is not supported (only #define NAME value)"
                                ),
                            ));
                        }
                        if b[end.saturating_sub(1).max(start)] == b'\\' {
                            return Err((
                                h,
                                "a #define continued on the next line is not supported".into(),
                            ));
                        }
                        let value = String::from_utf8_lossy(&b[vstart..end]).to_string();
                        if value.trim().is_empty() {
                            return Err((
                                h,
                                format!("#define {name} without a value is not supported"),
                            ));
                        }
                        defines_src.push((name, vstart, value));
                    }
                    "include" | "pragma" => {}
                    other => {
                        return Err((
                            h,
                            format!(
                                "preprocessor directive #{other} is not supported (only #define NAME value, #include, #pragma)"
                            ),
                        ));
                    }
                }
                for c in &mut b[start..end] {
                    *c = b' ';
                }
            }
            start = end + 1;
        }
        // Qualifiers.
        let mut quals = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'"' || b[i] == b'\'' {
                i = skip_quoted(&b, i);
                continue;
            }
            if is_ident(b[i]) {
                let s = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                let kind = match &b[s..i] {
                    b"__global__" => Some(Qual::Global),
                    b"__device__" => Some(Qual::Device),
                    b"__shared__" => Some(Qual::Shared),
                    b"__host__" | b"__forceinline__" | b"__noinline__" | b"__inline__"
                    | b"__restrict__" => Some(Qual::Other),
                    _ => None,
                };
                if let Some(k) = kind {
                    quals.push((s + PRELUDE.len(), i + PRELUDE.len(), k));
                    for c in &mut b[s..i] {
                        *c = b' ';
                    }
                }
                continue;
            }
            i += 1;
        }
        let blanked =
            String::from_utf8(b).map_err(|_| (0, "the source is not UTF-8".to_string()))?;
        let parsed = format!("{PRELUDE}{blanked}");
        let unit =
            parse_text(&parsed).map_err(|(off, m)| (off.saturating_sub(PRELUDE.len()), m))?;
        let mut defines = HashMap::new();
        for (name, vs, value) in defines_src {
            let prefix = format!("{PRELUDE}int __define_value = ");
            let src = format!("{prefix}{value};");
            let shift = vs as isize - prefix.len() as isize;
            let unit = parse_text(&src).map_err(|(off, m)| {
                (
                    (off as isize + shift).max(0) as usize,
                    format!("#define {name}: {m}"),
                )
            })?;
            let expr = unit.0.into_iter().find_map(|d| match d.node {
                lang_c::ast::ExternalDeclaration::Declaration(d) => {
                    d.node.declarators.into_iter().find_map(|id| {
                        match id.node.initializer.map(|i| i.node) {
                            Some(lang_c::ast::Initializer::Expression(e)) => Some(*e),
                            _ => None,
                        }
                    })
                }
                _ => None,
            });
            let expr = expr.ok_or((
                vs,
                format!("#define {name}: the value is not an expression"),
            ))?;
            defines.insert(name, Define { expr, shift });
        }
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, c)| *c == b'\n')
                .map(|(i, _)| i + 1),
        );
        Ok(Parsed {
            text: text.to_string(),
            parsed,
            unit,
            quals,
            defines,
            line_starts,
        })
    }

    /// The prelude's length: offsets in `parsed` below it are not in the file.
    pub fn prelude_len(&self) -> usize {
        PRELUDE.len()
    }

    /// (line, column), both 1-based, of an offset in the original text.
    pub fn line_col(&self, off: usize) -> (u32, u32) {
        let off = off.min(self.text.len());
        let line = self.line_starts.partition_point(|s| *s <= off);
        let ls = self.line_starts[line - 1];
        let col = self
            .text
            .get(ls..off)
            .map_or(off - ls, |s| s.chars().count())
            + 1;
        (line as u32, col as u32)
    }

    /// The original offset of a span start in the parse (`shift` for a define's value).
    pub fn orig(&self, span: Span, shift: isize) -> usize {
        if span.is_none() {
            return 0;
        }
        if shift != 0 {
            return (span.start as isize + shift).max(0) as usize;
        }
        span.start.saturating_sub(PRELUDE.len())
    }

    /// The qualifiers of a declaration that starts at `start` and whose specifiers end before `spec_end`
    /// (offsets in `parsed`): those inside the specifiers and those just before it (only blanks between).
    pub fn quals_of(&self, start: usize, spec_end: usize) -> Vec<(usize, Qual)> {
        let b = self.parsed.as_bytes();
        self.quals
            .iter()
            .filter(|(s, e, _)| {
                (*s >= start && *s < spec_end)
                    || (*e <= start && b[*e..start].iter().all(|c| c.is_ascii_whitespace()))
            })
            .map(|(s, _, k)| (*s, *k))
            .collect()
    }
}

/// Parse with lang-c (GNU C11); a parser panic is caught and reported as a syntax error. Err: the offset and
/// the message.
fn parse_text(src: &str) -> Result<TranslationUnit, (usize, String)> {
    let cfg = Config {
        cpp_command: String::new(),
        cpp_options: Vec::new(),
        flavor: Flavor::GnuC11,
    };
    let s = src.to_string();
    let r = std::panic::catch_unwind(move || parse_preprocessed(&cfg, s));
    match r {
        Ok(Ok(p)) => Ok(p.unit),
        Ok(Err(e)) => {
            let off = e.offset;
            let found: String = src
                .get(off..)
                .unwrap_or("")
                .chars()
                .take_while(|c| !c.is_whitespace())
                .take(20)
                .collect();
            let found = if found.is_empty() {
                "the end of the file".to_string()
            } else {
                format!("{found:?}")
            };
            let mut exp: Vec<&str> = e.expected.into_iter().collect();
            exp.sort();
            let exp: Vec<String> = exp.iter().take(8).map(|e| format!("'{e}'")).collect();
            let msg = if exp.is_empty() {
                format!("syntax error at {found}")
            } else {
                format!("syntax error at {found}: expected {}", exp.join(", "))
            };
            Err((off, msg))
        }
        Err(_) => Err((0, "syntax error (the parser gave up)".into())),
    }
}

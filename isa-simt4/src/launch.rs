//! A kernel launch: grid and block sizes and the kernel's arguments (from a launch file or the command
//! line), and the compiled image the machine loads.
//!
//! A launch file (TOML):
//!
//! ```toml
//! kernel = "map.cu"          # optional: the kernel source, relative to this file
//! grid = [1, 1]              # or a number: [x, 1]
//! block = [4, 1]
//! [args]                     # by the kernel's parameter names
//! size = 4                   # a scalar
//! a = [0, 1, 2, 3]           # an array (nested arrays: a 2-D array, stored row-major)
//! out = "zeros(4)"           # an array of zeros; "zeros(2,2)" a 2-D one
//! x = "@x.json"              # an array from a JSON file (relative to the launch file)
//! ```
//!
//! On the command line the same: `--grid 3,1 --block 4 --arg size=4 --arg a=[0,1,2,3] --arg 'out=zeros(4)'
//! --arg x=@x.json`.

use crate::error::LaunchError;
use crate::isa::Instr;
use std::path::{Path, PathBuf};

/// One argument's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgValue {
    /// A scalar (`int`, `unsigned`, `bool`), as written (wrapped to 32 bits by the compiler).
    Scalar(i64),
    /// An array, flattened row-major, with its shape (`[n]` or `[rows, cols]`).
    Array { data: Vec<i64>, shape: Vec<usize> },
}

/// Grid, block and arguments of one launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchSpec {
    /// The kernel source named by a launch file, if it names one.
    pub kernel: Option<PathBuf>,
    /// Blocks in the grid, `[x, y]`.
    pub grid: [u32; 2],
    /// Threads in a block, `[x, y]`.
    pub block: [u32; 2],
    /// Arguments by parameter name, in the order given.
    pub args: Vec<(String, ArgValue)>,
}

/// Overrides of a launch given as text, as on a command line (`--grid X[,Y]`, `--block X[,Y]`, `--arg
/// NAME=VALUE`, see the module docs): each replaces that part of the launch; an argument the launch lacks is added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchOverrides {
    pub grid: Option<String>,
    pub block: Option<String>,
    pub args: Vec<String>,
}

impl LaunchOverrides {
    /// No override at all.
    pub fn is_empty(&self) -> bool {
        self.grid.is_none() && self.block.is_none() && self.args.is_empty()
    }

    /// Apply to `spec` (`@file.json` arguments relative to `dir`). Errors name the flag (`--grid ...`) or the
    /// argument.
    pub fn apply(&self, spec: &mut LaunchSpec, dir: &Path) -> Result<(), LaunchError> {
        let flag = |flag, e| LaunchError::Flag { flag, source: Box::new(e) };
        if let Some(g) = &self.grid {
            spec.grid = LaunchSpec::parse_dims(g).map_err(|e| flag("--grid", e))?;
        }
        if let Some(b) = &self.block {
            spec.block = LaunchSpec::parse_dims(b).map_err(|e| flag("--block", e))?;
        }
        for s in &self.args {
            let (name, v) = LaunchSpec::parse_arg(s, dir)?;
            match spec.args.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = v,
                None => spec.args.push((name, v)),
            }
        }
        Ok(())
    }
}

/// The launch of a kernel (`given`: `X.cu`, or a launch file naming its kernel): the launch file (`launch`, else
/// `X.toml` beside the kernel, or `given` itself), then `overrides` over it. Returns the program the machine
/// loads: a launch file named beside the kernel, whose `kernel` is the kernel's file name. Errors: no such
/// kernel, no launch at all, a bad launch file or override.
pub fn launch_program(given: &Path, launch: Option<&Path>, overrides: &LaunchOverrides) -> Result<isa_api::front::Program, LaunchError> {
    let is_launch = given.extension().is_some_and(|e| e == "toml");
    let (kernel, base) = if is_launch {
        let spec = LaunchSpec::from_file(given)?;
        let k = spec.kernel.clone().unwrap_or_else(|| given.with_extension("cu"));
        (k, Some(spec))
    } else {
        let beside = given.with_extension("toml");
        let file = launch.map(Path::to_path_buf).or_else(|| beside.is_file().then_some(beside));
        (given.to_path_buf(), file.map(|f| LaunchSpec::from_file(&f)).transpose()?)
    };
    if !kernel.is_file() {
        return Err(LaunchError::NoKernel(kernel));
    }
    if base.is_none() && overrides.is_empty() {
        return Err(LaunchError::NoLaunch(kernel));
    }
    let mut spec = base.unwrap_or_default();
    overrides.apply(&mut spec, Path::new("."))?;
    let file_name = kernel.file_name().ok_or(LaunchError::KernelNoFileName)?;
    spec.kernel = Some(PathBuf::from(file_name));
    let name = kernel.with_file_name(format!("{}.launch.toml", file_name.to_string_lossy()));
    Ok(isa_api::front::Program { name: name.display().to_string(), bytes: spec.to_toml().into_bytes(), expected_console: None })
}

impl Default for LaunchSpec {
    fn default() -> Self {
        Self { kernel: None, grid: [1, 1], block: [1, 1], args: Vec::new() }
    }
}

impl LaunchSpec {
    /// The argument named `name`.
    pub fn arg(&self, name: &str) -> Option<&ArgValue> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Read a launch file. Errors name the file and the key.
    pub fn from_file(path: &Path) -> Result<LaunchSpec, LaunchError> {
        let text = std::fs::read_to_string(path).map_err(|source| LaunchError::Read { path: path.into(), source })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::from_toml(&text, dir).map_err(|e| e.in_file(path))
    }

    /// Parse a launch file's text; `@file` arguments and `kernel` are relative to `dir`.
    pub fn from_toml(text: &str, dir: &Path) -> Result<LaunchSpec, LaunchError> {
        let t: toml::Table = text.parse().map_err(|e: toml::de::Error| LaunchError::Toml(e.message().to_string()))?;
        let mut spec = LaunchSpec::default();
        for (k, v) in &t {
            match k.as_str() {
                "kernel" => spec.kernel = Some(dir.join(v.as_str().ok_or(LaunchError::KernelNotText)?)),
                "grid" => spec.grid = dims(v).map_err(|e| e.at_key("grid"))?,
                "block" => spec.block = dims(v).map_err(|e| e.at_key("block"))?,
                "args" => {
                    let a = v.as_table().ok_or(LaunchError::ArgsNotTable)?;
                    for (name, v) in a {
                        let val = toml_arg(v, dir).map_err(|e| e.at_key(format!("args.{name}")))?;
                        spec.args.push((name.clone(), val));
                    }
                }
                other => return Err(LaunchError::UnknownKey(other.to_string())),
            }
        }
        Ok(spec)
    }

    /// The launch as a launch file's text (arguments inline; `kernel` as given).
    pub fn to_toml(&self) -> String {
        let mut t = toml::Table::new();
        if let Some(k) = &self.kernel {
            t.insert("kernel".into(), toml::Value::String(k.display().to_string()));
        }
        let dims = |d: [u32; 2]| toml::Value::Array(d.iter().map(|v| toml::Value::Integer(i64::from(*v))).collect());
        t.insert("grid".into(), dims(self.grid));
        t.insert("block".into(), dims(self.block));
        let mut args = toml::Table::new();
        for (name, v) in &self.args {
            let ints = |d: &[i64]| toml::Value::Array(d.iter().map(|x| toml::Value::Integer(*x)).collect());
            let val = match v {
                ArgValue::Scalar(n) => toml::Value::Integer(*n),
                ArgValue::Array { data, shape } if shape.len() == 2 => toml::Value::Array(data.chunks(shape[1].max(1)).map(ints).collect()),
                ArgValue::Array { data, .. } => ints(data),
            };
            args.insert(name.clone(), val);
        }
        t.insert("args".into(), toml::Value::Table(args));
        toml::to_string(&t).unwrap_or_default()
    }

    /// Parse `X` or `X,Y` (a `--grid`/`--block` value).
    pub fn parse_dims(s: &str) -> Result<[u32; 2], LaunchError> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let num = |p: &str| p.parse::<u32>().map_err(|_| LaunchError::DimsNotNumbers(s.to_string()));
        let d = match parts.as_slice() {
            [x] => [num(x)?, 1],
            [x, y] => [num(x)?, num(y)?],
            _ => return Err(LaunchError::DimsShape(s.to_string())),
        };
        if d.contains(&0) {
            return Err(LaunchError::DimsZero(s.to_string()));
        }
        Ok(d)
    }

    /// Parse one `--arg NAME=VALUE` (`VALUE`: a number, `[..]` JSON, `zeros(N[,M])`, `@file.json`).
    pub fn parse_arg(s: &str, dir: &Path) -> Result<(String, ArgValue), LaunchError> {
        let (name, value) = s.split_once('=').ok_or_else(|| LaunchError::ArgNoValue(s.to_string()))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(LaunchError::ArgName { text: s.to_string(), name: name.to_string() });
        }
        let v = text_arg(value.trim(), dir).map_err(|e| LaunchError::Arg { name: name.into(), source: Box::new(e) })?;
        Ok((name.to_string(), v))
    }
}

fn dims(v: &toml::Value) -> Result<[u32; 2], LaunchError> {
    let one = |v: &toml::Value| match v.as_integer() {
        Some(n) if (1..=65535).contains(&n) => Ok(n as u32),
        _ => Err(LaunchError::NotASize(v.to_string())),
    };
    match v {
        toml::Value::Integer(_) => Ok([one(v)?, 1]),
        toml::Value::Array(a) if a.len() == 1 => Ok([one(&a[0])?, 1]),
        toml::Value::Array(a) if a.len() == 2 => Ok([one(&a[0])?, one(&a[1])?]),
        _ => Err(LaunchError::DimsExpected),
    }
}

fn toml_arg(v: &toml::Value, dir: &Path) -> Result<ArgValue, LaunchError> {
    match v {
        toml::Value::Integer(n) => Ok(ArgValue::Scalar(*n)),
        toml::Value::Boolean(b) => Ok(ArgValue::Scalar(i64::from(*b))),
        toml::Value::String(s) => text_arg(s, dir),
        toml::Value::Array(_) => {
            let j: serde_json::Value = serde_json::to_value(v).map_err(LaunchError::TomlArray)?;
            json_array(&j)
        }
        other => Err(LaunchError::TomlArg(other.to_string())),
    }
}

fn text_arg(s: &str, dir: &Path) -> Result<ArgValue, LaunchError> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(ArgValue::Scalar(n));
    }
    match s {
        "true" => return Ok(ArgValue::Scalar(1)),
        "false" => return Ok(ArgValue::Scalar(0)),
        _ => {}
    }
    if let Some(inner) = s.strip_prefix("zeros(").and_then(|r| r.strip_suffix(')')) {
        let shape: Vec<usize> = inner
            .split(',')
            .map(|p| p.trim().parse::<usize>().ok().filter(|n| *n > 0))
            .collect::<Option<_>>()
            .filter(|v: &Vec<usize>| (1..=2).contains(&v.len()))
            .ok_or_else(|| LaunchError::Zeros(s.to_string()))?;
        return Ok(ArgValue::Array { data: vec![0; shape.iter().product()], shape });
    }
    if let Some(f) = s.strip_prefix('@') {
        let p = dir.join(f);
        let text = std::fs::read_to_string(&p).map_err(|source| LaunchError::Read { path: p.clone(), source })?;
        let j: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| LaunchError::JsonFile { path: p.clone(), source })?;
        return json_array(&j).map_err(|e| e.in_file(&p));
    }
    if s.starts_with('[') {
        let j: serde_json::Value =
            serde_json::from_str(s).map_err(|source| LaunchError::JsonText { text: s.into(), source })?;
        return json_array(&j);
    }
    Err(LaunchError::ArgValue(s.to_string()))
}

/// A JSON array of integers (or of equal-length arrays of integers: 2-D).
pub fn json_array(j: &serde_json::Value) -> Result<ArgValue, LaunchError> {
    let int = |v: &serde_json::Value| v.as_i64().filter(|n| (-(1i64 << 31)..(1i64 << 32)).contains(n)).ok_or_else(|| LaunchError::NotInt32(v.to_string()));
    let a = j.as_array().ok_or(LaunchError::NotArray)?;
    if a.is_empty() {
        return Err(LaunchError::EmptyArray);
    }
    if a[0].is_array() {
        let rows: Vec<&Vec<serde_json::Value>> = a.iter().map(|r| r.as_array().ok_or(LaunchError::RowNotArray)).collect::<Result<_, _>>()?;
        let cols = rows[0].len();
        if cols == 0 || rows.iter().any(|r| r.len() != cols) {
            return Err(LaunchError::RaggedRows);
        }
        let data = rows.iter().flat_map(|r| r.iter()).map(int).collect::<Result<_, _>>()?;
        return Ok(ArgValue::Array { data, shape: vec![rows.len(), cols] });
    }
    let data: Vec<i64> = a.iter().map(int).collect::<Result<_, _>>()?;
    let n = data.len();
    Ok(ArgValue::Array { data, shape: vec![n] })
}

/// Where a compiled kernel put one array argument in global memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayPlace {
    /// The parameter name.
    pub name: String,
    /// First word.
    pub base: u32,
    /// Words.
    pub len: u32,
    /// Its shape (for printing it back).
    pub shape: Vec<usize>,
    /// Read as unsigned (`unsigned *`) when printed.
    pub unsigned: bool,
}

/// A compiled launch: what the machine loads and how to read its results back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelImage {
    /// The kernel's name.
    pub name: String,
    /// The kernel's source file, as given to the compiler (for messages: `file:line`).
    pub file: String,
    /// The program, from row 0.
    pub program: Vec<Instr>,
    /// The source line of each instruction (1-based; 0: generated code without a line).
    pub lines: Vec<u32>,
    /// Global memory from word 0 (the arrays' initial contents).
    pub global: Vec<u32>,
    /// The array arguments.
    pub arrays: Vec<ArrayPlace>,
    /// Warps per block.
    pub warps: u32,
}

impl KernelImage {
    /// The program words.
    pub fn words(&self) -> Vec<u64> {
        self.program.iter().map(Instr::encode).collect()
    }
    /// The arrays' values in a global memory image, as JSON (`{"out": [..], ...}`; 2-D arrays nested).
    pub fn arrays_json(&self, global: &[u32]) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for a in &self.arrays {
            let vals: Vec<serde_json::Value> = (0..a.len)
                .map(|k| {
                    let w = global.get((a.base + k) as usize).copied().unwrap_or(0);
                    if a.unsigned { serde_json::Value::from(w) } else { serde_json::Value::from(w as i32) }
                })
                .collect();
            let v = if a.shape.len() == 2 {
                serde_json::Value::Array(vals.chunks(a.shape[1].max(1)).map(|r| serde_json::Value::Array(r.to_vec())).collect())
            } else {
                serde_json::Value::Array(vals)
            };
            m.insert(a.name.clone(), v);
        }
        serde_json::Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_their_parts_and_add_missing_arguments() {
        let mut spec = LaunchSpec::from_toml("grid = [3, 1]\nblock = 4\n[args]\nsize = 9\nout = \"zeros(9)\"\n", Path::new(".")).unwrap();
        let o = LaunchOverrides { grid: Some("2,2".into()), block: None, args: vec!["size=5".into(), "k=7".into()] };
        assert!(!o.is_empty() && LaunchOverrides::default().is_empty());
        o.apply(&mut spec, Path::new(".")).unwrap();
        assert_eq!((spec.grid, spec.block), ([2, 2], [4, 1]));
        assert_eq!(spec.arg("size"), Some(&ArgValue::Scalar(5)));
        assert_eq!(spec.arg("k"), Some(&ArgValue::Scalar(7)));
        assert!(matches!(spec.arg("out"), Some(ArgValue::Array { .. })));
        let bad = LaunchOverrides { grid: Some("x".into()), ..Default::default() };
        assert!(bad.apply(&mut spec, Path::new(".")).unwrap_err().to_string().starts_with("--grid"));
    }

    #[test]
    fn launch_file_and_command_line_agree() {
        let t = "grid = [3, 1]\nblock = 4\n[args]\nsize = 9\na = [[1, 2], [3, 4]]\nout = \"zeros(9)\"\n";
        let s = LaunchSpec::from_toml(t, Path::new(".")).unwrap();
        assert_eq!(s.grid, [3, 1]);
        assert_eq!(s.block, [4, 1]);
        assert_eq!(s.arg("size"), Some(&ArgValue::Scalar(9)));
        assert_eq!(s.arg("a"), Some(&ArgValue::Array { data: vec![1, 2, 3, 4], shape: vec![2, 2] }));
        assert_eq!(LaunchSpec::parse_arg("out=zeros(9)", Path::new(".")).unwrap().1, *s.arg("out").unwrap());
        assert_eq!(LaunchSpec::parse_arg("a=[[1,2],[3,4]]", Path::new(".")).unwrap().1, *s.arg("a").unwrap());
        assert_eq!(LaunchSpec::parse_dims("3,1").unwrap(), [3, 1]);
        // A launch written back as a launch file reads as the same launch.
        assert_eq!(LaunchSpec::from_toml(&s.to_toml(), Path::new(".")).unwrap(), s);
    }

    #[test]
    fn bad_launches_are_named() {
        assert!(LaunchSpec::from_toml("grid = 0", Path::new(".")).unwrap_err().to_string().contains("grid"));
        assert!(LaunchSpec::from_toml("blocks = 1", Path::new(".")).unwrap_err().to_string().contains("unknown key \"blocks\""));
        assert!(LaunchSpec::from_toml("[args]\nx = [[1], [2, 3]]", Path::new(".")).unwrap_err().to_string().contains("args.x"));
        assert!(LaunchSpec::parse_arg("x", Path::new(".")).unwrap_err().to_string().contains("NAME=VALUE"));
        assert!(LaunchSpec::parse_arg("x=zeros(0)", Path::new(".")).unwrap_err().to_string().contains("zeros"));
        assert!(LaunchSpec::parse_arg("x=@/nonexistent.json", Path::new(".")).unwrap_err().to_string().contains("nonexistent"));
        assert!(LaunchSpec::parse_dims("2,x").is_err());
    }
}

//! The GPU puzzles (srush/GPU-Puzzles, re-expressed as data in `$WEAVER_TESTDATA/cuda/gpu_puzzles_specs.json`)
//! solved by our kernels in `examples/cuda/puzzles`: each launch file must be the spec's launch, and each
//! kernel's `out` must be the spec's `expected` on POCL (the independent oracle) and on the reference interpreter
//! through the CUDA front end, on 4 lanes and on 8.
//!
//! Without `WEAVER_TESTDATA`, without an OpenCL platform, or (for now) without the CUDA front end, a test prints
//! SKIPPED; under `CI=true` it fails instead.

mod common;

use common::pocl::{Pocl, kernel_signature};
use common::{examples_dir, kernels_in, load, run_interp, skip};
use isa_simt4::{ArgValue, LaunchSpec};
use serde_json::Value;
use std::path::PathBuf;

struct Puzzle {
    name: String,
    file: PathBuf,
    src: String,
    spec: LaunchSpec,
    expected: Value,
}

/// The puzzles, their kernels and launches (checked against the spec), or `None` (skipped) without testdata.
fn puzzles() -> Option<Vec<Puzzle>> {
    let path = test_kit::testdata("cuda/gpu_puzzles_specs.json")?;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let j: Value = serde_json::from_str(&text).unwrap();
    let problems = j["problems"].as_array().expect("problems");
    let kernels = kernels_in(&examples_dir().join("puzzles"));
    assert_eq!(kernels.len(), problems.len(), "one kernel (NN-name.cu + NN-name.toml) per puzzle");
    let mut out = Vec::new();
    for (n, ((cu, toml), p)) in kernels.iter().zip(problems).enumerate() {
        let file = cu.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(file[..2].parse::<usize>().ok(), Some(n + 1), "{file}: the files are numbered as the puzzles");
        let name = p["name"].as_str().unwrap().to_string();
        let (src, spec) = load(cu, toml);
        // The launch is the spec's: grid, block, inputs a and b, the scalars in parameter order, out's shape.
        let dims = |v: &Value| [v[0].as_u64().unwrap() as u32, v[1].as_u64().unwrap() as u32];
        assert_eq!(spec.grid, dims(&p["blocks_per_grid"]), "{file} ({name}): grid");
        assert_eq!(spec.block, dims(&p["threads_per_block"]), "{file} ({name}): block");
        for (k, input) in p["inputs"].as_array().unwrap().iter().enumerate() {
            let arg = ["a", "b"][k];
            assert_eq!(spec.arg(arg), Some(&isa_simt4::launch::json_array(input).unwrap()), "{file} ({name}): input {arg}");
        }
        let cl = isa_simt4::opencl::to_opencl(&src).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (_, params) = kernel_signature(&cl).unwrap();
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[0], "out", "{file}: out is the first parameter");
        let scalars: Vec<i64> = params
            .iter()
            .filter(|p| !p.array)
            .map(|p| match spec.arg(&p.name) {
                Some(ArgValue::Scalar(x)) => *x,
                other => panic!("{file}: scalar {} is {other:?}", p.name),
            })
            .collect();
        let want: Vec<i64> = p["scalar_args"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        assert_eq!(scalars, want, "{file} ({name}): the scalar arguments in parameter order");
        let expected = p["expected"].clone();
        let shape: Vec<usize> = p["expected_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        match spec.arg("out") {
            Some(ArgValue::Array { data, shape: s }) => {
                assert_eq!(s, &shape, "{file} ({name}): out's shape");
                assert!(data.iter().all(|x| *x == 0), "{file}: out starts as zeros");
            }
            other => panic!("{file}: out is {other:?}"),
        }
        out.push(Puzzle { name, file: cu.clone(), src, spec, expected });
    }
    Some(out)
}

#[test]
fn puzzles_on_pocl_equal_the_expected_outputs() {
    let Some(puzzles) = puzzles() else { return };
    let Some(pocl) = Pocl::open() else {
        skip("no OpenCL platform (install pocl-opencl-icd and ocl-icd-opencl-dev)");
        return;
    };
    println!("OpenCL: {}", pocl.platform);
    let mut words = 0;
    for p in &puzzles {
        let got = pocl.run(&p.src, &p.spec).unwrap_or_else(|e| panic!("{}: {e}", p.file.display()));
        assert_eq!(got["out"], p.expected, "{} ({}): POCL's out", p.file.display(), p.name);
        words += common::words(&p.expected);
        println!("{:<28} POCL == expected ({} words)", p.file.file_name().unwrap().to_string_lossy(), common::words(&p.expected));
    }
    println!("{} puzzles, {words} words of out: POCL equals the spec's expected outputs", puzzles.len());
}

#[test]
fn puzzles_on_the_interpreter_equal_the_expected_outputs() {
    let Some(puzzles) = puzzles() else { return };
    let mut words = 0;
    println!("{:<28} {:>6} {:>10} {:>10}", "puzzle", "instrs", "steps(4)", "steps(8)");
    for p in &puzzles {
        let file = p.file.file_name().unwrap().to_string_lossy().to_string();
        let mut steps = Vec::new();
        let mut instrs = 0;
        for lanes in [4, 8] {
            let r = run_interp(&p.src, &file, &p.spec, lanes).unwrap_or_else(|e| panic!("{file} ({}), {lanes} lanes: {e:?}", p.name));
            assert_eq!(r.arrays["out"], p.expected, "{file} ({}): the interpreter's out on {lanes} lanes", p.name);
            steps.push(r.steps);
            instrs = r.instructions;
        }
        words += 2 * common::words(&p.expected);
        println!("{file:<28} {instrs:>6} {:>10} {:>10}", steps[0], steps[1]);
    }
    println!("{} puzzles on 4 and 8 lanes, {words} words of out: the interpreter equals the spec's expected outputs", puzzles.len());
}

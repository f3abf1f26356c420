//! The kernel corpus, `examples/cuda/*.cu` with their launch files: every kernel runs on POCL (the independent
//! oracle, through the mechanical OpenCL translation) and on the reference interpreter through the CUDA front
//! end, on 4 lanes and on 8; every array of the three runs must be equal, word for word.
//!
//! A kernel whose result legitimately depends on what C leaves undefined (`x / 0`, `INT_MIN / -1`, shifts by 32
//! or more) or on the order of threads (a used atomic's old value) says so with a line
//! `// oracle: interpreter only`, or is listed in [`NOT_ON_POCL`] (kernels of other authors): it is not run on
//! POCL at all (a division by zero may trap there), or only some of its arrays are not compared. Its 4- and
//! 8-lane runs are still compared (the machine's rules and its order of lanes are the same on both).
//!
//! `SIMT4_CORPUS_DUMP=DIR` writes each kernel's arrays (POCL's, else the 4-lane interpreter's) to
//! `DIR/NAME.json`.
//!
//! Without an OpenCL platform, or without the CUDA front end, the test prints SKIPPED for that side; under
//! `CI=true` it fails instead.

mod common;

use common::pocl::Pocl;
use common::{examples_dir, first_difference, kernels_in, load, run_interp, skip, words};

/// Kernels whose results are not C's, or not only C's: (file, arrays not compared with POCL (none listed: the
/// kernel does not run on POCL), why).
const NOT_ON_POCL: &[(&str, &[&str], &str)] = &[
    ("divmod_table.cu", &[], "x / 0, x % 0 and INT_MIN / -1 by the machine's rules (C leaves them undefined; x86 traps)"),
];

/// Kernels the corpus must hold at least.
const MIN_KERNELS: usize = 60;

#[test]
fn corpus_kernels_agree_on_pocl_and_the_interpreter() {
    let kernels = kernels_in(&examples_dir());
    assert!(kernels.len() >= MIN_KERNELS, "{} kernels in examples/cuda; the corpus holds at least {MIN_KERNELS}", kernels.len());
    let pocl = Pocl::open();
    match &pocl {
        Some(p) => println!("OpenCL: {}", p.platform),
        None => skip("no OpenCL platform (install pocl-opencl-icd and ocl-icd-opencl-dev): the corpus runs on the interpreter only"),
    }
    let mut failures = Vec::new();
    let (mut pocl_kernels, mut pocl_words, mut lanes_kernels, mut lanes_words) = (0, 0, 0, 0);
    println!("{:<32} {:>6} {:>10} {:>10} {:>6}  oracle", "kernel", "instrs", "steps(4)", "steps(8)", "words");
    for (cu, toml) in &kernels {
        let file = cu.file_name().unwrap().to_string_lossy().to_string();
        let (src, spec) = load(cu, toml);
        let exception = NOT_ON_POCL.iter().find(|(f, ..)| *f == file);
        let pocl_ok = !src.contains("// oracle: interpreter only") && !exception.is_some_and(|(_, arrays, _)| arrays.is_empty());
        let got_pocl = match (&pocl, pocl_ok) {
            (Some(p), true) => match p.run(&src, &spec) {
                Ok(mut v) => {
                    // Arrays that are not C's: removed from both sides, so not compared.
                    if let (Some((_, arrays, _)), Some(o)) = (exception, v.as_object_mut()) {
                        for a in *arrays {
                            o.remove(*a);
                        }
                    }
                    Some(v)
                }
                Err(e) => {
                    failures.push(format!("{file}: POCL: {e}"));
                    None
                }
            },
            _ => None,
        };
        let mut runs = Vec::new();
        for lanes in [4, 8] {
            match run_interp(&src, &file, &spec, lanes) {
                Ok(r) => runs.push(r),
                Err(e) => {
                    failures.push(format!("{file} ({lanes} lanes): {e:?}"));
                    break;
                }
            }
        }
        let mut oracle = Vec::new();
        if let Some((_, _, why)) = exception {
            println!("  {file}: {why}");
        }
        if !pocl_ok {
            oracle.push("not on POCL");
        }
        if let Some(pv) = &got_pocl {
            if let Some(r4) = runs.first() {
                let mut r4a = r4.arrays.clone();
                if let (Some((_, arrays, _)), Some(o)) = (exception, r4a.as_object_mut()) {
                    for a in *arrays {
                        o.remove(*a);
                    }
                }
                match first_difference("POCL", pv, "interpreter (4 lanes)", &r4a) {
                    None => {
                        pocl_kernels += 1;
                        pocl_words += words(pv);
                        oracle.push(if exception.is_some() { "POCL == interp(4) (some arrays)" } else { "POCL == interp(4)" });
                    }
                    Some(d) => failures.push(format!("{file}: {d}")),
                }
            } else {
                oracle.push("POCL ran");
            }
        }
        if let [r4, r8] = runs.as_slice() {
            match first_difference("4 lanes", &r4.arrays, "8 lanes", &r8.arrays) {
                None => {
                    lanes_kernels += 1;
                    lanes_words += words(&r4.arrays);
                    oracle.push("interp(4) == interp(8)");
                }
                Some(d) => failures.push(format!("{file}: {d}")),
            }
        }
        let (instrs, s4, s8) = match runs.as_slice() {
            [r4, r8] => (r4.instructions.to_string(), r4.steps.to_string(), r8.steps.to_string()),
            _ => ("-".into(), "-".into(), "-".into()),
        };
        if let (Ok(dir), Some(v)) = (std::env::var("SIMT4_CORPUS_DUMP"), got_pocl.as_ref().or(runs.first().map(|r| &r.arrays))) {
            let path = std::path::Path::new(&dir).join(cu.with_extension("json").file_name().unwrap());
            std::fs::write(&path, v.to_string()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let w = got_pocl.as_ref().map(words).or(runs.first().map(|r| words(&r.arrays))).unwrap_or(0);
        println!("{file:<32} {instrs:>6} {s4:>10} {s8:>10} {w:>6}  {}", oracle.join(", "));
    }
    println!(
        "{} kernels: {pocl_kernels} equal on POCL and the interpreter ({pocl_words} words), {lanes_kernels} equal on 4 and 8 lanes ({lanes_words} words)",
        kernels.len()
    );
    assert!(failures.is_empty(), "{} of {} kernels disagree or fail:\n{}", failures.len(), kernels.len(), failures.join("\n"));
}

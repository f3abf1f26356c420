//! `loom cuda`: CUDA-subset kernels on the woven SIMT4 GPU (configs/simt4.toml built in, 4 lanes; 8 lanes in
//! `cuda_puzzles.rs`), the arrays printed as JSON, `--check` replaying the trace against the reference
//! evaluator and the reference interpreter; kernel and launch errors named before any weaving.

mod common;
use common::{loom, repo};

/// One woven SIMT4 machine at a time in this binary (about 5 GB each on 4 lanes).
static WEAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let _one = WEAVING.lock().unwrap_or_else(|e| e.into_inner());
    let out = loom().current_dir(repo()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// The demo (two blocks of 8 threads, two warps each on 4 lanes, shared memory, a barrier, atomicAdd) on the
/// network, checked step by step against the interpreter. Expected values computed by hand from the kernel.
#[test]
fn the_demo_kernel_runs_in_the_network_and_agrees_with_the_interpreter() {
    for config in ["configs/simt4.toml"] {
        let (code, out, err) = run(&["cuda", config, "examples/cuda/demo.cu", "--check"]);
        assert_eq!(code, Some(0), "{config}: {out}\n{err}");
        let json: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        assert_eq!(json["out"], serde_json::json!([-6, 2, 9, -5, 1, 4, -1, 3, 0, 0, 0, 9, 8, 0, 0, 0]), "{config}: {out}");
        assert_eq!(json["sum"], serde_json::json!([377]), "{config}: {out}");
        assert_eq!(json["a"], serde_json::json!([3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, 7, 9, 3]), "{config}: {out}");
        let check = out.lines().find(|l| l.starts_with("check:")).unwrap_or_default();
        assert!(check.starts_with("check: agree:") && check.contains("the SIMT4 reference interpreter") && check.contains("halted"), "{config}: {out}");
        assert!(err.contains("[loom cuda: kernel demo done;"), "{config}: {err}");
        // One instruction count: `loom lockstep` (the interpreter's, HALT included) equals `loom cuda`'s.
        let (code, lock, lerr) = run(&["lockstep", config]);
        assert_eq!(code, Some(0), "{lock}\n{lerr}");
        let row: Vec<&str> = lock.lines().find(|l| l.starts_with("examples/cuda/demo.cu")).unwrap().split_whitespace().collect();
        assert!(err.contains(&format!("[loom cuda: kernel demo done; {} instructions, {} steps,", row[3], row[4])), "{lock}\n{err}");
        assert_eq!(row[3], "129", "{lock}");
    }
}

/// Launch flags on the command line override the launch file: a grid of one block covers 8 elements.
#[test]
fn command_line_arguments_override_the_launch_file() {
    let (code, out, err) = run(&["cuda", "examples/cuda/demo.cu", "--grid", "1", "--arg", "n=8", "--arg", "out=zeros(8)", "--arg", "a=[1,2,3,4,5,6,7,8]", "--no-progress"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["out"], serde_json::json!([8, 7, 6, 5, 4, 3, 2, 1]), "{out}");
    assert_eq!(json["sum"], serde_json::json!([204]), "{out}");
}

/// An out-of-bounds access in the network is a machine fault naming the lane, the index and the source line.
#[test]
fn an_out_of_bounds_access_faults_with_lane_index_and_line() {
    let dir = std::env::temp_dir().join(format!("loom-cuda-oob-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("oob.cu");
    std::fs::write(&k, "__global__ void oob(int *out, int n) {\n    int i = threadIdx.x;\n    out[i + n] = i;\n}\n").unwrap();
    let (code, out, err) = run(&["cuda", k.to_str().unwrap(), "--block", "4", "--arg", "out=zeros(6)", "--arg", "n=3", "--no-progress"]);
    assert_eq!(code, Some(134), "{out}\n{err}");
    // Lanes 0..2 store in lane order; lane 3's index 6 is past out[6].
    assert!(err.contains(&format!("lane 3 of warp 0 (thread 3): index 6 of out[6] at {}:3 ", k.display())), "{err}");
    assert_eq!(out.trim(), "{\"out\":[0,0,0,0,1,2]}", "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Kernel and launch errors are named (file:line:column for the kernel) before anything is woven.
#[test]
fn bad_kernels_and_launches_are_named_errors() {
    let dir = std::env::temp_dir().join(format!("loom-cuda-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("f.cu");
    std::fs::write(&k, "__global__ void f(int *out) {\n    float x = 1.5;\n    out[0] = x;\n}\n").unwrap();
    let (code, _, err) = run(&["cuda", k.to_str().unwrap(), "--arg", "out=zeros(1)"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("f.cu:2:5") && err.contains("float"), "{err}");
    assert!(!err.contains("weaving"), "{err}");
    let (code, _, err) = run(&["cuda", k.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no launch: give --grid, --block and --arg"), "{err}");
    let (code, _, err) = run(&["cuda", "examples/cuda/demo.cu", "--grid", "0"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--grid") && err.contains("at least 1"), "{err}");
    let (code, _, err) = run(&["cuda", "examples/cuda/demo.cu", "--arg", "a=zeros(x)"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--arg a") && err.contains("zeros"), "{err}");
    let (code, _, err) = run(&["cuda", "configs/acc8.toml", "examples/cuda/demo.cu"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("not simt4"), "{err}");
    let (code, _, err) = run(&["cuda", "examples/cuda/no-such.cu"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no-such.cu: no such kernel file"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

//! The 471 riscv-tests operand/result vectors (rv32ui, rv32um, rv32uzba) from `$WEAVER_TESTDATA/riscv`,
//! executed as real instructions on the interpreter (encode, decode, execute), not just through `alu()`.

mod common;
use common::*;

const FILE: &str = "riscv/riscv-tests-rv32im-zba-vectors.json";

#[test]
fn riscv_tests_vectors() {
    let Some(path) = testdata_file(FILE) else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(vectors.len(), 471, "vector count");
    let mut passed = 0;
    let mut failures = Vec::new();
    for v in &vectors {
        let kind = v["kind"].as_str().unwrap();
        let op = v["op"].as_str().unwrap();
        let a = v["a"].as_u64().unwrap() as u32;
        let b_raw = v["b"].as_i64().unwrap();
        let expected = v["expected"].as_u64().unwrap() as u32;
        let label = format!(
            "{}/{} test {}",
            v["suite"].as_str().unwrap(),
            v["file"].as_str().unwrap(),
            v["test"]
        );
        let got = match kind {
            "rr" => {
                let mut cpu = machine(&[rr(op, 3, 1, 2)]);
                cpu.set_x(1, a);
                cpu.set_x(2, b_raw as u32);
                cpu.step().unwrap();
                assert_eq!(
                    isa_rv32im::alu::alu(
                        isa_rv32im::alu::alu_op_by_name(op).unwrap(),
                        a,
                        b_raw as u32
                    ),
                    cpu.x(3)
                );
                cpu.x(3)
            }
            "imm" => {
                // b is the signed 12-bit immediate (for shifts: the shift amount)
                let imm = b_raw as i32;
                assert!(
                    (-2048..2048).contains(&imm),
                    "{label}: immediate {imm} out of range"
                );
                let mut cpu = machine(&[ri(op, 3, 1, imm)]);
                cpu.set_x(1, a);
                cpu.step().unwrap();
                cpu.x(3)
            }
            "br_taken" | "br_nottaken" => {
                let mut cpu = machine(&[branch(op, 1, 2, 8)]);
                cpu.set_x(1, a);
                cpu.set_x(2, b_raw as u32);
                cpu.step().unwrap();
                match cpu.pc() - BASE {
                    8 => 1,
                    4 => 0,
                    other => panic!("{label}: branch went to +{other}"),
                }
            }
            other => panic!("unknown vector kind {other}"),
        };
        if got == expected {
            passed += 1;
        } else {
            failures.push(format!(
                "{label}: {op} {a:#x}, {b_raw:#x} -> {got:#x}, expected {expected:#x}"
            ));
        }
    }
    eprintln!("riscv-tests vectors: {passed}/{} passed", vectors.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(passed, 471);
}

//! The cdylib built with `--features plugin` loads through the isa-api C ABI and describes the machine.
#![cfg(feature = "plugin")]

#[test]
fn the_cdylib_loads_as_a_machine_plugin() {
    // target/<profile>/deps/<this test> -> target/<profile>/deps/libisa_rv32im.so (the cdylib of this build).
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let lib = [dir.join("libisa_rv32im.so"), dir.parent().unwrap().join("libisa_rv32im.so")]
        .into_iter()
        .find(|p| p.exists())
        .expect("libisa_rv32im.so next to the test binary");
    let bytes = isa_api::plugin::load_plugin_bytes(&lib).unwrap();
    let d = isa_api::MachineDesc::from_json(&bytes).unwrap();
    assert_eq!(d, isa_rv32im::circuit::rv32im_machine(&Default::default()).unwrap());
}

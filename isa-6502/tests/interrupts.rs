//! Reset, NMI, IRQ, BRK/RTI, the B-flag rules, the NMOS wrap-around quirks and the faults, on small programs
//! (no test data needed). Sources: NESdev wiki, "CPU interrupts", "Status flags", "CPU power up state",
//! "CPU addressing modes".

use isa_6502::{Bus, Cpu, Fault, FlatRam, Mnemonic, flag};

const NMI_HANDLER: u16 = 0x0300;
const RESET_HANDLER: u16 = 0x0200;
const IRQ_HANDLER: u16 = 0x0400;

/// A flat RAM with `program` at $0200, the three vectors set, and an RTI at the NMI and IRQ handlers.
fn machine(program: &[u8]) -> FlatRam {
    let mut ram = FlatRam::new();
    ram.load(RESET_HANDLER, program).expect("the program fits");
    for (vector, handler) in [(0xFFFA, NMI_HANDLER), (0xFFFC, RESET_HANDLER), (0xFFFE, IRQ_HANDLER)] {
        ram.load(vector, &handler.to_le_bytes()).expect("vectors fit");
    }
    ram.write(NMI_HANDLER, 0x40); // RTI
    ram.write(IRQ_HANDLER, 0x40); // RTI
    ram
}

fn step(cpu: &mut Cpu, ram: &mut FlatRam) -> u32 {
    cpu.step(ram).unwrap_or_else(|fault| panic!("{fault}"))
}

#[test]
fn reset_reads_the_vector_lowers_s_by_3_sets_i_and_takes_7_cycles() {
    let mut ram = machine(&[0xEA]);
    let before = ram.as_slice().to_vec();
    let cpu = Cpu::power_on(&mut ram);
    assert_eq!((cpu.pc, cpu.s, cpu.p, cpu.cycles), (RESET_HANDLER, 0xFD, 0x24, 7));
    assert_eq!(ram.as_slice(), &before[..], "reset writes nothing");

    let mut cpu = Cpu::new();
    cpu.s = 0x10;
    cpu.p = flag::U | flag::C;
    cpu.reset(&mut ram);
    assert_eq!((cpu.pc, cpu.s, cpu.p, cpu.cycles), (RESET_HANDLER, 0x0D, flag::U | flag::I | flag::C, 7));
}

#[test]
fn brk_pushes_pc_plus_2_with_b_set_and_rti_returns_there() {
    // $0200: BRK, padding byte, NOP.
    let mut ram = machine(&[0x00, 0xFF, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.p = flag::U | flag::C | flag::N;
    assert_eq!(step(&mut cpu, &mut ram), 7);
    assert_eq!(cpu.pc, IRQ_HANDLER);
    assert_eq!(cpu.s, 0xFA);
    assert_eq!(ram.read(0x01FD), 0x02, "return address high byte");
    assert_eq!(ram.read(0x01FC), 0x02, "return address low byte: BRK's address + 2");
    assert_eq!(ram.read(0x01FB), flag::N | flag::U | flag::B | flag::C, "pushed status has B and bit 5 set");
    assert_ne!(cpu.p & flag::I, 0, "BRK sets I");
    assert_eq!(step(&mut cpu, &mut ram), 6, "RTI");
    assert_eq!((cpu.pc, cpu.s, cpu.p), (0x0202, 0xFD, flag::N | flag::U | flag::C));
}

#[test]
fn nmi_is_an_edge_serviced_once_even_with_i_set_and_pushes_b_clear() {
    let mut ram = machine(&[0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    assert_ne!(cpu.p & flag::I, 0);
    cpu.raise_nmi();
    cpu.raise_nmi();
    assert!(cpu.nmi_pending());
    assert_eq!(step(&mut cpu, &mut ram), 7);
    assert!(!cpu.nmi_pending());
    assert_eq!(cpu.pc, NMI_HANDLER);
    assert_eq!(ram.read(0x01FB), flag::U | flag::I, "pushed status: B clear, bit 5 set");
    assert_eq!((ram.read(0x01FD), ram.read(0x01FC)), (0x02, 0x00), "the interrupted PC");
    assert_eq!(step(&mut cpu, &mut ram), 6, "RTI");
    assert_eq!(cpu.pc, RESET_HANDLER);
    assert_eq!(step(&mut cpu, &mut ram), 2, "the two edges were serviced as one: back to the NOPs");
    assert_eq!(cpu.pc, RESET_HANDLER + 1);
}

#[test]
fn irq_is_a_level_masked_by_i() {
    // $0200: NOP, CLI, NOP, NOP, NOP.
    let mut ram = machine(&[0xEA, 0x58, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.set_irq_line(true);
    assert_eq!(step(&mut cpu, &mut ram), 2, "masked while I is set: the NOP runs");
    assert_eq!(step(&mut cpu, &mut ram), 2, "CLI");
    assert_eq!(cpu.pc, 0x0202);
    assert_eq!(step(&mut cpu, &mut ram), 2, "CLI's change of I is seen one instruction late: the NOP runs");
    assert_eq!(cpu.pc, 0x0203);
    assert_eq!(step(&mut cpu, &mut ram), 7, "the IRQ");
    assert_eq!(cpu.pc, IRQ_HANDLER);
    assert_eq!(ram.read(0x01FB), flag::U, "pushed status: B clear, I clear as it was");
    assert_eq!(step(&mut cpu, &mut ram), 6, "RTI");
    assert_eq!(cpu.pc, 0x0203);
    assert_eq!(step(&mut cpu, &mut ram), 7, "the line is still asserted: RTI clears I at once, IRQ again");
    assert_eq!(cpu.pc, IRQ_HANDLER);
    step(&mut cpu, &mut ram);
    cpu.set_irq_line(false);
    assert_eq!(step(&mut cpu, &mut ram), 2, "released: the NOP runs");
    assert_eq!(cpu.pc, 0x0204);
}

#[test]
fn plp_ignores_bits_4_and_5_and_php_pushes_them_set() {
    // $0200: PLP, PLP, PHP.
    let mut ram = machine(&[0x28, 0x28, 0x08]);
    let mut cpu = Cpu::power_on(&mut ram);
    ram.write(0x01FE, 0xFF);
    ram.write(0x01FF, 0x00);
    assert_eq!(step(&mut cpu, &mut ram), 4);
    assert_eq!(cpu.p, 0xEF, "B reads 0");
    assert_eq!(step(&mut cpu, &mut ram), 4);
    assert_eq!(cpu.p, 0x20, "bit 5 reads 1");
    assert_eq!(step(&mut cpu, &mut ram), 3);
    assert_eq!(ram.read(0x01FF), 0x30, "PHP pushes B and bit 5 set");
}

#[test]
fn jmp_indirect_takes_the_high_byte_from_the_same_page() {
    // $0200: JMP ($02FF); the pointer's low byte at $02FF, its high byte at $0200 (the JMP opcode, $6C).
    let mut ram = machine(&[0x6C, 0xFF, 0x02]);
    ram.write(0x02FF, 0x34);
    ram.write(0x0300, 0x12);
    let mut cpu = Cpu::power_on(&mut ram);
    assert_eq!(step(&mut cpu, &mut ram), 5);
    assert_eq!(cpu.pc, 0x6C34);
}

#[test]
fn zero_page_indexing_and_pointers_wrap_within_page_zero() {
    // LDA $F0,X with X = $20 reads $0010; LDA ($FF),Y reads its pointer from $00FF and $0000;
    // LDA ($F0,X) with X = $0F reads its pointer from $00FF and $0000.
    let mut ram = machine(&[0xB5, 0xF0, 0xB1, 0xFF, 0xA1, 0xF0]);
    ram.write(0x0010, 0x11);
    ram.write(0x0110, 0xEE);
    ram.write(0x00FF, 0x00);
    ram.write(0x0000, 0x05);
    ram.write(0x0100, 0x07);
    ram.write(0x0520, 0x22);
    ram.write(0x0500, 0x33);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.x = 0x20;
    cpu.y = 0x20;
    assert_eq!(step(&mut cpu, &mut ram), 4);
    assert_eq!(cpu.a, 0x11);
    assert_eq!(step(&mut cpu, &mut ram), 5);
    assert_eq!(cpu.a, 0x22);
    cpu.x = 0x0F;
    assert_eq!(step(&mut cpu, &mut ram), 6);
    assert_eq!(cpu.a, 0x33);
}

#[test]
fn decimal_flag_is_stored_but_adc_and_sbc_stay_binary() {
    // SED; LDA #$09; CLC; ADC #$01; SEC; SBC #$01.
    let mut ram = machine(&[0xF8, 0xA9, 0x09, 0x18, 0x69, 0x01, 0x38, 0xE9, 0x01]);
    let mut cpu = Cpu::power_on(&mut ram);
    for _ in 0..4 {
        step(&mut cpu, &mut ram);
    }
    assert_eq!(cpu.a, 0x0A, "binary 9 + 1, not BCD $10");
    assert_ne!(cpu.p & flag::D, 0);
    step(&mut cpu, &mut ram);
    step(&mut cpu, &mut ram);
    assert_eq!(cpu.a, 0x09);
}

#[test]
fn jam_and_unstable_opcodes_fault_naming_opcode_and_address_and_change_nothing() {
    for (opcode, mnemonic) in
        [(0x02, Mnemonic::Jam), (0xF2, Mnemonic::Jam), (0x8B, Mnemonic::Xaa), (0xBB, Mnemonic::Las), (0x9F, Mnemonic::Ahx)]
    {
        let mut ram = machine(&[0xEA, opcode]);
        let mut cpu = Cpu::power_on(&mut ram);
        step(&mut cpu, &mut ram);
        let before = cpu.clone();
        let fault = cpu.step(&mut ram).expect_err("a fault");
        let expected = if mnemonic == Mnemonic::Jam {
            Fault::Jam { pc: 0x0201, opcode }
        } else {
            Fault::Unstable { pc: 0x0201, opcode, mnemonic }
        };
        assert_eq!(fault, expected);
        let message = fault.to_string();
        assert!(message.contains(&format!("${opcode:02X}")) && message.contains("$0201"), "{message}");
        if mnemonic != Mnemonic::Jam {
            assert!(message.contains(mnemonic.name()), "{message}");
        }
        assert_eq!(cpu, before, "a fault leaves the CPU as it was");
    }
}

/// The lines of one boundary.
fn lines(nmi_age: u8, irq: u8) -> isa_6502::Lines {
    isa_6502::Lines { nmi_age, irq }
}

#[test]
fn an_instruction_polls_at_its_second_to_last_cycle() {
    let mut ram = machine(&[0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.set_lines(lines(1, 0));
    assert_eq!(step(&mut cpu, &mut ram), 2, "an edge in the last cycle is too late for the poll: the NOP runs");
    assert!(cpu.nmi_pending());
    assert_eq!(step(&mut cpu, &mut ram), 7, "the next poll services it");
    assert_eq!(cpu.pc, NMI_HANDLER);
    let mut ram = machine(&[0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.set_lines(lines(2, 0));
    assert_eq!(step(&mut cpu, &mut ram), 7, "an edge of age 2 is seen");
    // The IRQ level: bit 0 is what an instruction's poll sees.
    let mut ram = machine(&[0x58, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram); // CLI
    step(&mut cpu, &mut ram); // NOP (CLI's delay)
    cpu.set_lines(lines(0, 0b10));
    assert_eq!(step(&mut cpu, &mut ram), 2, "the level a cycle too early does not count");
    cpu.set_lines(lines(0, 0b01));
    assert_eq!(step(&mut cpu, &mut ram), 7, "the IRQ");
}

#[test]
fn a_taken_branch_on_its_page_polls_a_cycle_early() {
    // $0200: CLC; BCC +1 (taken, same page: 3 cycles); NOP; NOP.
    let mut ram = machine(&[0x18, 0x90, 0x01, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    assert_eq!(step(&mut cpu, &mut ram), 3);
    assert_eq!(cpu.poll(), isa_6502::Poll::Early);
    cpu.set_lines(lines(2, 0));
    assert_eq!(step(&mut cpu, &mut ram), 2, "an edge of age 2 came after the branch's poll: one more instruction");
    assert_eq!(cpu.pc, 0x0205);
    assert_eq!(step(&mut cpu, &mut ram), 7);
    assert_eq!(cpu.pc, NMI_HANDLER);
    let mut ram = machine(&[0x18, 0x90, 0x01, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    step(&mut cpu, &mut ram);
    cpu.set_lines(lines(3, 0));
    assert_eq!(step(&mut cpu, &mut ram), 7, "age 3 is before the branch's poll");
    // Not taken: an ordinary poll.
    let mut ram = machine(&[0x38, 0x90, 0x01, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    assert_eq!(step(&mut cpu, &mut ram), 2);
    assert_eq!(cpu.poll(), isa_6502::Poll::Normal);
}

#[test]
fn an_early_nmi_hijacks_brk_and_a_late_one_waits_for_the_handlers_first_instruction() {
    // $0200: BRK, padding; the IRQ handler is an RTI at $0400.
    let mut ram = machine(&[0x00, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    assert_eq!(step(&mut cpu, &mut ram), 7, "BRK");
    assert_eq!(cpu.pc, IRQ_HANDLER);
    cpu.set_lines(lines(4, 0));
    assert_eq!(step(&mut cpu, &mut ram), 0, "the hijack: no cycles of its own");
    assert_eq!(cpu.pc, NMI_HANDLER);
    assert_eq!(ram.read(0x01FB), flag::U | flag::B | flag::I, "BRK's push: B set");
    assert!(!cpu.nmi_pending());
    assert_eq!(cpu.poll(), isa_6502::Poll::Skip);
    // An edge in BRK's last three cycles: the IRQ handler's first instruction runs, then the NMI.
    let mut ram = machine(&[0x00, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    cpu.set_lines(lines(3, 0));
    assert_eq!(step(&mut cpu, &mut ram), 6, "the RTI at the IRQ handler");
    assert!(cpu.nmi_pending());
    assert_eq!(step(&mut cpu, &mut ram), 7);
    assert_eq!(cpu.pc, NMI_HANDLER);
    // After an NMI sequence no poll: the handler's first instruction runs before a second edge.
    let mut ram = machine(&[0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    cpu.raise_nmi();
    step(&mut cpu, &mut ram);
    cpu.set_lines(lines(4, 0));
    assert_eq!(step(&mut cpu, &mut ram), 6, "the NMI handler's RTI");
    assert_eq!(step(&mut cpu, &mut ram), 7, "the pending edge");
}

#[test]
fn an_oam_dma_keeps_its_stores_poll() {
    let mut ram = machine(&[0xEA, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    cpu.set_lines(lines(2, 0));
    cpu.dma(513);
    assert_eq!(cpu.poll(), isa_6502::Poll::AfterDma, "the store's poll saw the edge");
    cpu.set_lines(lines(0, 0));
    assert_eq!(step(&mut cpu, &mut ram), 7, "serviced right after the DMA");
    assert_eq!(cpu.pc, NMI_HANDLER);
    let mut ram = machine(&[0xEA, 0xEA, 0xEA, 0xEA]);
    let mut cpu = Cpu::power_on(&mut ram);
    step(&mut cpu, &mut ram);
    let before = cpu.cycles;
    cpu.set_lines(lines(1, 0));
    cpu.dma(514);
    assert_eq!(cpu.cycles, before + 514);
    assert_eq!(cpu.poll(), isa_6502::Poll::Skip);
    cpu.set_lines(lines(4, 0));
    assert_eq!(step(&mut cpu, &mut ram), 2, "edges after the store's poll wait for the next instruction");
    assert_eq!(step(&mut cpu, &mut ram), 7);
    assert_eq!(cpu.pc, NMI_HANDLER);
}

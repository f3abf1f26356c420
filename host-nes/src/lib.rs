//! The NES host shim (PPU, APU, controllers, interrupt lines) around the woven 6502. Not built yet: an
//! empty shell that reserves its place in the workspace. Nothing here pretends to work.

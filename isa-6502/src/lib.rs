//! The NES's 6502 CPU as a machine plugin. Not built yet: an empty shell that reserves its place in the
//! workspace. Nothing here pretends to work.

//! RV32IM+Zba as a machine plugin (issue 4). Not built yet: this crate is an empty shell that reserves its
//! place in the workspace. Nothing here pretends to work.

//! The SIMT4 machine as an `isa-api` circuit (being written).

//! The stable machine-plugin API (issue 3): machine descriptions, the circuit IR, the trace protocol.

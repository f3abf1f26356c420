//! The weaver: compiles a machine circuit into Qwen3.5 weights (issue 3).

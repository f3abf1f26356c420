//! The CUDA subset front end (being written).

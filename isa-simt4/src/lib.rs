//! The 4-lane SIMT GPU that runs CUDA, as a machine plugin. Not built yet: an empty shell that reserves its
//! place in the workspace. Nothing here pretends to work.

//! The mechanical CUDA-subset to OpenCL C translation for the POCL oracle (being written).

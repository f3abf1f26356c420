//! The POCL runner: a kernel of the CUDA subset, translated by `isa_simt4::opencl::to_opencl`, built and run by
//! the OpenCL runtime on the CPU (POCL), its arrays read back by parameter name.

use isa_simt4::{ArgValue, LaunchSpec};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, Device};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_int, cl_uint};
use serde_json::Value;
use std::ptr;

/// One parameter of the translated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// A `__global` pointer (an array).
    pub array: bool,
    /// `uint` (else `int`; a `bool` parameter was translated to `int`).
    pub unsigned: bool,
}

/// The kernel's name and parameters, from the `__kernel` signature of an OpenCL C translation.
pub fn kernel_signature(cl: &str) -> Result<(String, Vec<Param>), String> {
    let k = cl.find("__kernel").ok_or("no __kernel in the translation")?;
    let open = k + cl[k..].find('(').ok_or("no parameter list")?;
    let close = open + cl[open..].find(')').ok_or("no ) after the parameters")?;
    let idents = |s: &str| -> Vec<String> { s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(String::from).collect() };
    let name = idents(&cl[k..open]).last().cloned().ok_or("no kernel name")?;
    let inner = &cl[open + 1..close];
    let mut params = Vec::new();
    if !inner.trim().is_empty() && inner.trim() != "void" {
        for p in inner.split(',') {
            let w = idents(p);
            let mut pname = w.last().cloned().ok_or_else(|| format!("a parameter without a name: {p:?}"))?;
            // A name OpenCL reserves was translated with `_cu` appended: the launch knows the CUDA name.
            if let Some(stem) = pname.strip_suffix("_cu").filter(|s| isa_simt4::opencl::RENAMED.contains(s)) {
                pname = stem.to_string();
            }
            params.push(Param { name: pname, array: p.contains('*'), unsigned: w.iter().any(|t| t == "uint") });
        }
    }
    Ok((name, params))
}

/// An OpenCL device (the first of the first platform that has one), its context and queue.
pub struct Pocl {
    pub platform: String,
    pub device: Device,
    context: Context,
    queue: CommandQueue,
}

impl Pocl {
    /// The first device of POCL's platform (else of the first platform that has one); `None` when there is
    /// none (no ICD loader, no POCL).
    pub fn open() -> Option<Pocl> {
        let mut platforms = get_platforms().ok()?;
        platforms.sort_by_key(|p| !p.name().unwrap_or_default().contains("Portable Computing Language"));
        for p in platforms {
            let Ok(devs) = p.get_devices(CL_DEVICE_TYPE_ALL) else { continue };
            let Some(&d) = devs.first() else { continue };
            let device = Device::new(d);
            let context = Context::from_device(&device).ok()?;
            #[allow(deprecated)]
            let queue = CommandQueue::create_default(&context, 0).ok()?;
            let platform = format!("{} / {}", p.name().unwrap_or_default(), device.name().unwrap_or_default());
            return Some(Pocl { platform, device, context, queue });
        }
        None
    }

    /// Translate `cuda`, build it, run it for `spec` (global size grid*block, local size block per dimension)
    /// and read back every array, as `{"name": [..]}` (2-D arrays nested as in the launch; `uint` arrays as
    /// unsigned numbers, `int` arrays as signed), like `KernelImage::arrays_json`.
    pub fn run(&self, cuda: &str, spec: &LaunchSpec) -> Result<Value, String> {
        let cl = isa_simt4::opencl::to_opencl(cuda).map_err(|e| e.to_string())?;
        let (name, params) = kernel_signature(&cl)?;
        let program = Program::create_and_build_from_source(&self.context, &cl, "")
            .map_err(|log| format!("the OpenCL build failed:\n{log}\n--- the translation ---\n{cl}"))?;
        let kernel = Kernel::create(&program, &name).map_err(|e| format!("kernel {name}: {e}"))?;

        enum Arg {
            Buf(Buffer<cl_uint>, usize, Vec<usize>, bool, String),
            Int(cl_int),
            Uint(cl_uint),
        }
        let mut args = Vec::new();
        for p in &params {
            let v = spec.arg(&p.name).ok_or_else(|| format!("no argument for parameter {}", p.name))?;
            match (v, p.array) {
                (ArgValue::Array { data, shape }, true) => {
                    let words: Vec<cl_uint> = data.iter().map(|x| *x as u32).collect();
                    let mut buf = unsafe { Buffer::<cl_uint>::create(&self.context, CL_MEM_READ_WRITE, words.len(), ptr::null_mut()) }
                        .map_err(|e| format!("buffer {}: {e}", p.name))?;
                    unsafe { self.queue.enqueue_write_buffer(&mut buf, CL_BLOCKING, 0, &words, &[]) }.map_err(|e| format!("write {}: {e}", p.name))?;
                    args.push(Arg::Buf(buf, words.len(), shape.clone(), p.unsigned, p.name.clone()));
                }
                (ArgValue::Scalar(x), false) if p.unsigned => args.push(Arg::Uint(*x as u32)),
                (ArgValue::Scalar(x), false) => args.push(Arg::Int(*x as i32)),
                _ => return Err(format!("parameter {}: an {} expected", p.name, if p.array { "array" } else { "scalar" })),
            }
        }
        let [gx, gy] = spec.grid.map(|v| v as usize);
        let [bx, by] = spec.block.map(|v| v as usize);
        let mut exec = ExecuteKernel::new(&kernel);
        for a in &args {
            unsafe {
                match a {
                    Arg::Buf(b, ..) => exec.set_arg(b),
                    Arg::Int(x) => exec.set_arg(x),
                    Arg::Uint(x) => exec.set_arg(x),
                };
            }
        }
        exec.set_global_work_sizes(&[gx * bx, gy * by]).set_local_work_sizes(&[bx, by]);
        let event = unsafe { exec.enqueue_nd_range(&self.queue) }.map_err(|e| format!("enqueue: {e}"))?;
        event.wait().map_err(|e| format!("run: {e}"))?;

        let mut out = serde_json::Map::new();
        for a in &args {
            let Arg::Buf(buf, len, shape, unsigned, pname) = a else { continue };
            let mut words = vec![0 as cl_uint; *len];
            unsafe { self.queue.enqueue_read_buffer(buf, CL_BLOCKING, 0, &mut words, &[]) }.map_err(|e| format!("read {pname}: {e}"))?;
            let vals: Vec<Value> = words.iter().map(|w| if *unsigned { Value::from(*w) } else { Value::from(*w as i32) }).collect();
            let v = if shape.len() == 2 { Value::Array(vals.chunks(shape[1].max(1)).map(|r| Value::Array(r.to_vec())).collect()) } else { Value::Array(vals) };
            out.insert(pname.clone(), v);
        }
        Ok(out.into())
    }
}

//! [`CheckedWeights`]: a model's weights with the shapes its config expects, taken tensor by tensor with errors
//! that name the tensor.

use crate::config::Qwen35Config;
use crate::error::CpuError;
use crate::tensor::{HostTensor, WeightMap};

/// A model's weights with the shapes its config expects: every tensor is checked as it is taken. Shared by
/// the CPU executors.
pub struct CheckedWeights<'a> {
    weights: &'a WeightMap,
    shapes: std::collections::HashMap<String, Vec<usize>>,
}

impl<'a> CheckedWeights<'a> {
    /// Validate `cfg` and index the shapes it expects.
    pub fn new(cfg: &Qwen35Config, weights: &'a WeightMap) -> Result<Self, CpuError> {
        cfg.validate()?;
        Ok(Self { weights, shapes: cfg.expected_tensors().into_iter().collect() })
    }

    /// The tensor `name` (a name the config expects); errors name a missing or misshapen tensor.
    pub fn get(&self, name: &str) -> Result<&'a HostTensor, CpuError> {
        let t = self.weights.get(name).ok_or_else(|| CpuError::MissingTensor { name: name.to_string() })?;
        let shape = &self.shapes[name];
        if &t.shape != shape {
            let (found, expected) = (t.shape.clone(), shape.clone());
            return Err(CpuError::TensorShape { name: name.to_string(), found, expected });
        }
        Ok(t)
    }

    /// `1 + w` of a zero-centred RMSNorm weight.
    pub fn one_plus(&self, name: &str) -> Result<Vec<f32>, CpuError> {
        Ok(self.get(name)?.data.iter().map(|w| 1.0 + w).collect())
    }
}

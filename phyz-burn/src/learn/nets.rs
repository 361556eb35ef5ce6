//! The networks the learners train and what they do to them: multilayer perceptrons, a
//! Gaussian policy, running observation statistics, the global gradient norm and its clip, and
//! a slowly following copy of a network.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::activation::elu;
use burn::tensor::{DType, Device, Tensor, TensorData};

/// A multilayer perceptron with ELU between its layers and none after the last.
#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
}

impl Mlp {
    /// Layers of the given widths, `sizes[0]` inputs to `sizes[last]` outputs.
    pub fn new(sizes: &[usize], device: &Device) -> Self {
        let layers = sizes.windows(2).map(|w| LinearConfig::new(w[0], w[1]).init(device)).collect();
        Mlp { layers }
    }

    pub fn forward(&self, input: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len() - 1;
        self.layers.iter().enumerate().fold(input, |x, (k, layer)| {
            let y = layer.forward(x);
            if k < last { elu(y, 1.0) } else { y }
        })
    }
}

/// A Gaussian policy squashed into `[−1, 1]`: `tanh(μ(o) + σ ε)`, `σ` one learned number per
/// control.
#[derive(Module, Debug)]
pub struct GaussianPolicy {
    mean: Mlp,
    log_std: Param<Tensor<1>>,
}

impl GaussianPolicy {
    /// A policy of `hidden` layers from `observations` to `actions`, its spread starting at
    /// `exp(log_std)`.
    pub fn new(observations: usize, hidden: &[usize], actions: usize, log_std: f64, device: &Device) -> Self {
        let sizes: Vec<usize> = std::iter::once(observations).chain(hidden.iter().copied()).chain([actions]).collect();
        let log_std = Tensor::from_data(TensorData::new(vec![log_std; actions], [actions]), (device, DType::F64));
        GaussianPolicy { mean: Mlp::new(&sizes, device), log_std: Param::from_tensor(log_std) }
    }

    /// The mean of the unsquashed action, `[batch, actions]`.
    pub fn mean(&self, observation: Tensor<2>) -> Tensor<2> {
        self.mean.forward(observation)
    }

    /// `σ` as a row, `[1, actions]`.
    pub fn std(&self) -> Tensor<2> {
        self.log_std.val().exp().unsqueeze_dim(0)
    }

    /// The action for the standard normal `noise` (`[batch, actions]`): reparameterized, so
    /// its gradient reaches the policy through the sample.
    pub fn act(&self, observation: Tensor<2>, noise: Tensor<2>) -> Tensor<2> {
        (self.mean(observation) + noise * self.std()).tanh()
    }

    /// The action without noise: what an evaluation runs.
    pub fn act_deterministic(&self, observation: Tensor<2>) -> Tensor<2> {
        self.mean(observation).tanh()
    }
}

/// Running mean and variance of the observations (Chan et al.'s merge of batches): a network
/// sees each observation centred and scaled to unit spread, as SHAC's and PPO's reference
/// implementations do.
#[derive(Clone, Debug)]
pub struct Normalizer {
    mean: Vec<f64>,
    var: Vec<f64>,
    count: f64,
}

impl Normalizer {
    pub fn new(size: usize) -> Self {
        Normalizer { mean: vec![0.0; size], var: vec![1.0; size], count: 1e-4 }
    }

    /// Merges the rows of `batch` (`rows × size`, row-major) into the statistics.
    pub fn update(&mut self, batch: &[f64], rows: usize) {
        let size = self.mean.len();
        if rows == 0 {
            return;
        }
        let n = rows as f64;
        for k in 0..size {
            let column = || (0..rows).map(|r| batch[r * size + k]);
            let mean = column().sum::<f64>() / n;
            let var = column().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
            let total = self.count + n;
            let delta = mean - self.mean[k];
            self.mean[k] += delta * n / total;
            self.var[k] = (self.var[k] * self.count + var * n + delta * delta * self.count * n / total) / total;
        }
        self.count += n;
    }

    /// The running standard deviation of entry `k`.
    pub fn spread(&self, k: usize) -> f64 {
        (self.var[k] + 1e-8).sqrt()
    }

    /// `observation` centred, scaled and held within ±10 (`[batch, size]`; CleanRL's clip).
    pub fn apply(&self, observation: Tensor<2>) -> Tensor<2> {
        let device = observation.device();
        let size = self.mean.len();
        let row = |v: Vec<f64>| Tensor::<2>::from_data(TensorData::new(v, [1, size]), (&device, DType::F64));
        let scale = self.var.iter().map(|v| 1.0 / (v + 1e-8).sqrt()).collect();
        ((observation - row(self.mean.clone())) * row(scale)).clamp(-10.0, 10.0)
    }
}

/// The norm of all of `module`'s gradients in `grads` together.
pub fn gradient_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    struct Norm<'a> {
        grads: &'a GradientsParams,
        squares: f64,
    }
    impl ModuleVisitor for Norm<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                self.squares += scalar(g.powi_scalar(2).sum());
            }
        }
    }
    let mut norm = Norm { grads, squares: 0.0 };
    module.visit(&mut norm);
    norm.squares.sqrt()
}

/// Scales every gradient of `module` in `grads` by `factor` (a global norm clip).
pub fn scale_gradients<M: Module>(module: &M, grads: &mut GradientsParams, factor: f64) {
    struct Scale<'a> {
        grads: &'a mut GradientsParams,
        factor: f64,
    }
    impl ModuleVisitor for Scale<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.remove::<D>(param.id) {
                self.grads.register(param.id, g.mul_scalar(self.factor));
            }
        }
    }
    module.visit(&mut Scale { grads, factor });
}

/// `follower` moved towards `leader`, parameter by parameter: `α · follower + (1 − α) · leader`
/// (two networks of one architecture), off the autodiff graph.
pub fn follow<M: Module>(follower: M, leader: &M, alpha: f64) -> M {
    struct Values(Vec<TensorData>);
    impl ModuleVisitor for Values {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.val().to_data());
        }
    }
    struct Blend {
        leader: std::vec::IntoIter<TensorData>,
        alpha: f64,
    }
    impl ModuleMapper for Blend {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let Some(lead) = self.leader.next() else { return param };
            let alpha = self.alpha;
            param.map(|value| {
                let lead = Tensor::<D>::from_data(lead, (&value.device(), value.dtype()));
                (value.mul_scalar(alpha) + lead.mul_scalar(1.0 - alpha)).detach()
            })
        }
    }
    let mut values = Values(Vec::new());
    leader.visit(&mut values);
    follower.map(&mut Blend { leader: values.0.into_iter(), alpha })
}

/// Standard normal noise for `lanes` × `actions` controls, from `rng`.
pub fn noise(rng: &mut super::task::Rng, lanes: usize, actions: usize, device: &Device) -> Tensor<2> {
    tensor((0..lanes * actions).map(|_| rng.normal()).collect(), lanes, actions, device)
}

/// A one-element tensor's value.
pub fn scalar(t: Tensor<1>) -> f64 {
    t.to_data().convert::<f64>().try_into_vec::<f64>().ok().and_then(|v| v.first().copied()).unwrap_or(f64::NAN)
}

/// A tensor's values, row-major, as `f64`.
pub fn host(t: &Tensor<2>) -> Vec<f64> {
    t.to_data().convert::<f64>().try_into_vec::<f64>().unwrap_or_default()
}

/// `values` (`rows × cols`, row-major) as a tensor on `device`.
pub fn tensor(values: Vec<f64>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values, [rows, cols]), (device, DType::F64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_statistics_are_the_whole_sets() {
        let data: Vec<f64> = (0..40).map(|i| ((i * 7) % 11) as f64 - 3.0 + 0.5 * (i % 2) as f64).collect();
        let mut normalizer = Normalizer::new(2);
        normalizer.update(&data[..16], 8);
        normalizer.update(&data[16..], 12);
        for k in 0..2 {
            let column: Vec<f64> = data.iter().skip(k).step_by(2).copied().collect();
            let mean = column.iter().sum::<f64>() / 20.0;
            let var = column.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 20.0;
            // The prior (one unit of variance, weighing 1e-4 of a sample) is all that differs.
            assert!((normalizer.mean[k] - mean).abs() < 1e-4, "{} vs {mean}", normalizer.mean[k]);
            assert!((normalizer.var[k] - var).abs() < 1e-3 * var.max(1.0), "{} vs {var}", normalizer.var[k]);
        }
    }

    #[test]
    fn a_follower_copies_its_leader_or_keeps_itself() {
        // In the device's own float type: other tests of this process may have fixed it.
        let device = Device::flex();
        let (a, b) = (Mlp::new(&[3, 4, 1], &device), Mlp::new(&[3, 4, 1], &device));
        let input = Tensor::<2>::from_floats([[0.1, -0.2, 0.3]], &device);
        let (ya, yb) = (host(&a.forward(input.clone()))[0], host(&b.forward(input.clone()))[0]);
        // α = 0 copies the leader exactly; a copy is a network of its own.
        let copy = follow(Mlp::new(&[3, 4, 1], &device), &b, 0.0);
        assert_eq!(host(&copy.forward(input.clone()))[0], yb);
        // α = 1 keeps the follower.
        assert_eq!(host(&follow(a.clone(), &b, 1.0).forward(input))[0], ya);
    }
}

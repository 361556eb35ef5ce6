//! Short-horizon actor-critic (SHAC; Xu et al., ICLR 2022): a policy trained through the
//! differentiable rollout over short windows, each closed by a learned value.
//!
//! First-order policy gradients through a whole episode of stiff contact explode or vanish
//! (Suh et al., ICML 2022): the product of hundreds of step Jacobians is ill-conditioned. SHAC
//! differentiates only `horizon` decisions at a time, from where the last window left the
//! lanes, and replaces the rest of the episode by a critic's value of the window's last state.
//! The actor's loss is the window's discounted reward plus that value, back-propagated through
//! the policy, every physics step (phyz's exact vector-Jacobian products, contact by the
//! implicit function theorem) and the critic; its gradient's global norm is clipped (and
//! reported). The critic then regresses on TD(λ) returns of the window, and a slowly following
//! copy of it closes the next windows.

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

use super::episodes::{End, Episodes, restart};
use super::nets::{
    GaussianPolicy, Mlp, Normalizer, follow, gradient_norm, host, noise, scalar, scale_gradients, tensor,
};
use super::task::{Rng, Task};
use crate::{BatchState, BurnError};

/// SHAC's settings; [`ShacConfig::default`] is the paper's for its hopper (Adam's moments at
/// 0.7 and 0.95 too), with 64 lanes where it had 256.
#[derive(Clone, Debug)]
pub struct ShacConfig {
    /// Lanes rolled out together.
    pub lanes: usize,
    /// Decisions a window differentiates through.
    pub horizon: usize,
    pub gamma: f64,
    /// TD(λ)'s λ for the critic's targets.
    pub lambda: f64,
    pub actor_lr: f64,
    pub critic_lr: f64,
    /// Passes over a window's samples the critic takes, each in `critic_minibatches` steps.
    pub critic_passes: usize,
    pub critic_minibatches: usize,
    /// How slowly the target critic follows the critic (its old weight per window).
    pub target_alpha: f64,
    /// The actor's gradient is scaled down to this global norm.
    pub max_grad_norm: f64,
    pub actor_hidden: Vec<usize>,
    pub critic_hidden: Vec<usize>,
    /// The policy's spread at the start, `log σ`.
    pub initial_log_std: f64,
    pub seed: u64,
}

impl Default for ShacConfig {
    fn default() -> Self {
        ShacConfig {
            lanes: 64,
            horizon: 32,
            gamma: 0.99,
            lambda: 0.95,
            actor_lr: 2e-3,
            critic_lr: 2e-4,
            critic_passes: 16,
            critic_minibatches: 4,
            target_alpha: 0.2,
            max_grad_norm: 1.0,
            actor_hidden: vec![128, 64, 32],
            critic_hidden: vec![64, 64],
            initial_log_std: -1.0,
            seed: 1,
        }
    }
}

/// What one window of training did.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowReport {
    /// The actor's loss: minus the window's mean discounted reward and closing value, per
    /// decision.
    pub actor_loss: f64,
    /// The actor's gradient's global norm before the clip; not finite where the window
    /// stepped no actor.
    pub gradient_norm: f64,
    /// The critic's mean squared error on its last pass.
    pub critic_loss: f64,
    /// The undiscounted returns of the episodes that ended in this window.
    pub finished_returns: Vec<f64>,
    /// Decisions taken so far, all lanes together (gymnasium's env-steps).
    pub decisions: usize,
}

/// A SHAC learner of a [`Task`], its lanes where the last window left them.
pub struct Shac<'a, T: Task> {
    task: &'a T,
    config: ShacConfig,
    device: Device,
    actor: GaussianPolicy,
    critic: Mlp,
    target: Mlp,
    actor_optim: ModuleOptimizer,
    critic_optim: ModuleOptimizer,
    normalizer: Normalizer,
    rng: Rng,
    state: BatchState,
    episodes: Episodes,
}

impl<'a, T: Task> Shac<'a, T> {
    /// A learner on `device` (an autodiff device whose floats are `f64`), its lanes at fresh
    /// starts.
    pub fn new(task: &'a T, config: ShacConfig, device: &Device) -> Result<Self, BurnError> {
        let counts =
            [("lanes", config.lanes), ("horizon", config.horizon), ("critic_minibatches", config.critic_minibatches)];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(BurnError::ZeroSetting(name));
        }
        device.seed(config.seed);
        let (n, a) = (task.observations(), task.actions());
        let actor = GaussianPolicy::new(n, &config.actor_hidden, a, config.initial_log_std, device);
        let sizes: Vec<usize> = std::iter::once(n).chain(config.critic_hidden.iter().copied()).chain([1]).collect();
        let critic = Mlp::new(&sizes, device);
        // A copy of its own (a clone would share the critic's parameters).
        let target = follow(Mlp::new(&sizes, device), &critic, 0.0).no_grad();
        let mut rng = Rng::new(config.seed);
        let state = task.reset(&mut rng, config.lanes, device)?;
        Ok(Shac {
            task,
            device: device.clone(),
            actor,
            critic,
            target,
            actor_optim: AdamConfig::new().with_beta_1(0.7).with_beta_2(0.95).init(),
            critic_optim: AdamConfig::new().with_beta_1(0.7).with_beta_2(0.95).init(),
            normalizer: Normalizer::new(n),
            rng,
            state,
            episodes: Episodes::new(config.lanes, task.episode_length()),
            config,
        })
    }

    /// The policy as it stands.
    pub fn policy(&self) -> &GaussianPolicy {
        &self.actor
    }

    /// The observation statistics the policy's inputs are scaled by.
    pub fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    /// The policy as it stands as a controller without noise, on tensors without autodiff:
    /// what a held-out evaluation runs.
    pub fn controller(&self) -> Box<dyn Fn(Tensor<2>) -> Tensor<2>> {
        let (policy, normalizer) = (self.actor.valid(), self.normalizer.clone());
        Box::new(move |observation| policy.act_deterministic(normalizer.apply(observation)))
    }

    /// One window: the actor's step through the rollout at `schedule` times its learning rate
    /// (1 at the start, annealed towards 0 by the caller), then the critic's at its own. A
    /// window whose actor gradient is not finite steps no actor (the report says so); the
    /// critic still learns from its rollout.
    pub fn window(&mut self, schedule: f64) -> Result<WindowReport, BurnError> {
        let rollout = self.roll_out()?;
        let mut grads = GradientsParams::from_grads(rollout.loss.clone().backward(), &self.actor);
        let norm = gradient_norm(&self.actor, &grads);
        if norm.is_finite() {
            if norm > self.config.max_grad_norm {
                scale_gradients(&self.actor, &mut grads, self.config.max_grad_norm / norm);
            }
            self.actor = self.actor_optim.step(self.config.actor_lr * schedule, self.actor.clone(), grads);
        }
        let critic_loss = self.fit_critic(&rollout, self.config.critic_lr);
        self.target = follow(self.target.clone(), &self.critic, self.config.target_alpha).no_grad();
        Ok(WindowReport {
            actor_loss: scalar(rollout.loss),
            gradient_norm: norm,
            critic_loss,
            finished_returns: rollout.finished,
            decisions: self.episodes.decisions,
        })
    }
}

/// What a window's rollout leaves for the two updates.
struct Rollout {
    /// The actor's loss, `[1]`, on the graph of the whole window.
    loss: Tensor<1>,
    /// Per decision `t`, the lanes' scaled observations before it (`[lanes, n]`, detached), their
    /// rewards, whether the episode ended there (and how), and the target critic's value of
    /// the state after it.
    observations: Vec<Tensor<2>>,
    rewards: Vec<Vec<f64>>,
    ends: Vec<Vec<End>>,
    next_values: Vec<Vec<f64>>,
    finished: Vec<f64>,
}

impl<T: Task> Shac<'_, T> {
    /// The window's rollout on the autodiff graph, the lanes left at its end (detached),
    /// episodes that ended restarted.
    fn roll_out(&mut self) -> Result<Rollout, BurnError> {
        let (lanes, horizon, gamma) = (self.config.lanes, self.config.horizon, self.config.gamma);
        let device = self.device.clone();
        let mut state = self.state.detach();
        let mut loss = Tensor::<2>::zeros([lanes, 1], (&device, DType::F64));
        let mut discount = vec![1.0; lanes];
        let (mut observations, mut rewards_seen, mut ends_seen, mut next_values, mut finished) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for t in 0..horizon {
            let raw = self.task.observe(&state);
            self.normalizer.update(&host(&raw.clone().detach()), lanes);
            // The statistics learn as the window goes (docs/burn.md: a variant that froze them
            // for the window did worse in one hopper run).
            let observation = self.normalizer.apply(raw);
            let noise = noise(&mut self.rng, lanes, self.task.actions(), &device);
            let action = self.actor.act(observation.clone(), noise);
            let next = self.task.decide(&state, &action)?;
            let fallen = self.task.terminated(&next);
            let reward = self.task.reward(&state, &next, &action, &fallen);
            let rewards = host(&reward.clone().detach());
            let ends = self.episodes.record(&rewards, &fallen, &mut finished);
            let next_value = self.target.forward(self.normalizer.apply(self.task.observe(&next)));
            let values = host(&next_value.clone().detach());
            // The window's return: discounted rewards, and at each end of an episode inside the
            // window (or the window's end) the value of what would follow.
            let weight = |f: &dyn Fn(usize) -> f64| tensor((0..lanes).map(f).collect(), lanes, 1, &device);
            loss = loss - reward * weight(&|l| discount[l]);
            let closes = |l: usize| match ends[l] {
                End::Truncated => true,
                End::Continues => t + 1 == horizon,
                End::Terminated => false,
            };
            loss = loss - next_value * weight(&|l| if closes(l) { discount[l] * gamma } else { 0.0 });
            for l in 0..lanes {
                discount[l] = if ends[l] == End::Continues { discount[l] * gamma } else { 1.0 };
            }
            observations.push(observation.detach());
            rewards_seen.push(rewards);
            next_values.push(values);
            state = restart(self.task, &mut self.rng, &self.device, next, &ends)?;
            ends_seen.push(ends);
        }
        self.state = state.detach();
        Ok(Rollout {
            loss: loss.sum().div_scalar((lanes * horizon) as f64),
            observations,
            rewards: rewards_seen,
            ends: ends_seen,
            next_values,
            finished,
        })
    }

    /// The critic's regression on the window's TD(λ) returns; its last pass's mean squared
    /// error.
    fn fit_critic(&mut self, rollout: &Rollout, lr: f64) -> f64 {
        let targets = td_lambda(rollout, self.config.gamma, self.config.lambda);
        // Off the graph: each minibatch's regression is a graph of its own.
        let observations = Tensor::cat(rollout.observations.clone(), 0).detach();
        let samples = targets.len();
        let batch = samples.div_ceil(self.config.critic_minibatches);
        let mut last = 0.0;
        for _ in 0..self.config.critic_passes {
            let order = self.rng.permutation(samples);
            let mut total = 0.0;
            for chunk in order.chunks(batch) {
                let picked: Vec<i64> = chunk.iter().map(|&i| i as i64).collect();
                let index = Tensor::<1, Int>::from_data(TensorData::new(picked, [chunk.len()]), &self.device);
                let inputs = observations.clone().select(0, index);
                let wanted = tensor(chunk.iter().map(|&i| targets[i]).collect(), chunk.len(), 1, &self.device);
                let error = (self.critic.forward(inputs) - wanted).powi_scalar(2).mean();
                total += scalar(error.clone().detach()) * chunk.len() as f64;
                let grads = GradientsParams::from_grads(error.backward(), &self.critic);
                self.critic = self.critic_optim.step(lr, self.critic.clone(), grads);
            }
            last = total / samples as f64;
        }
        last
    }
}

/// TD(λ) returns of each `(decision, lane)` of the window, decision-major: `G_t = r_t +
/// γ ((1 − λ) V(s_{t+1}) + λ G_{t+1})`, with `G = V` past the window and nothing past a fall;
/// at the time limit the bootstrap is the value alone.
fn td_lambda(rollout: &Rollout, gamma: f64, lambda: f64) -> Vec<f64> {
    let horizon = rollout.rewards.len();
    let lanes = rollout.rewards.first().map_or(0, Vec::len);
    let mut targets = vec![0.0; horizon * lanes];
    for l in 0..lanes {
        let mut next_return = rollout.next_values[horizon - 1][l];
        for t in (0..horizon).rev() {
            let (r, v) = (rollout.rewards[t][l], rollout.next_values[t][l]);
            let g = match rollout.ends[t][l] {
                End::Terminated => r,
                End::Truncated => r + gamma * v,
                End::Continues if t + 1 == horizon => r + gamma * v,
                End::Continues => r + gamma * ((1.0 - lambda) * v + lambda * next_return),
            };
            targets[t * lanes + l] = g;
            next_return = g;
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of three decisions of two lanes: the first lane falls at its second decision,
    /// the second is cut at the time limit at its third.
    #[test]
    fn td_lambda_stops_at_a_fall_and_bootstraps_at_a_cut() {
        let device = Device::flex();
        let rollout = Rollout {
            loss: Tensor::zeros([1], (&device, DType::F64)),
            observations: Vec::new(),
            rewards: vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]],
            ends: vec![
                vec![End::Continues, End::Continues],
                vec![End::Terminated, End::Continues],
                vec![End::Continues, End::Truncated],
            ],
            next_values: vec![vec![10.0, 20.0], vec![30.0, 40.0], vec![50.0, 60.0]],
            finished: Vec::new(),
        };
        let (g, l) = (0.9, 0.5);
        let targets = td_lambda(&rollout, g, l);
        // Lane 0: a new episode at t = 2, closed by the window's end; the fall at t = 1 leaves
        // its reward alone; t = 0 mixes V(s_1) and that.
        let t2 = 5.0 + g * 50.0;
        let t1 = 3.0;
        let t0 = 1.0 + g * ((1.0 - l) * 10.0 + l * t1);
        // Lane 1: the cut at t = 2 bootstraps from the value alone.
        let u2 = 6.0 + g * 60.0;
        let u1 = 4.0 + g * ((1.0 - l) * 40.0 + l * u2);
        let u0 = 2.0 + g * ((1.0 - l) * 20.0 + l * u1);
        let expected = [t0, u0, t1, u1, t2, u2];
        for (got, want) in targets.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{targets:?} vs {expected:?}");
        }
    }
}

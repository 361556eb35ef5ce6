//! Proximal policy optimization (PPO; Schulman et al., 2017), the model-free baseline SHAC is
//! measured against: the same tasks, stepped without gradients, a Gaussian policy trained on
//! the clipped surrogate of its sampled returns. The settings are the common ones for MuJoCo
//! locomotion (CleanRL's `ppo_continuous_action`): GAE(λ) advantages normalized per minibatch,
//! a clipped value loss, observations normalized and rewards scaled by the running spread of
//! the discounted return, the global gradient norm clipped, the learning rate annealed.

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};

use super::episodes::{End, Episodes, restart};
use super::nets::{GaussianPolicy, Mlp, Normalizer, gradient_norm, host, noise, scalar, scale_gradients, tensor};
use super::task::{Rng, Task};
use crate::{BatchState, BurnError};

/// PPO's settings.
#[derive(Clone, Debug)]
pub struct PpoConfig {
    pub lanes: usize,
    /// Decisions per lane between updates.
    pub rollout: usize,
    pub epochs: usize,
    pub minibatches: usize,
    pub gamma: f64,
    pub lambda: f64,
    pub clip: f64,
    pub value_weight: f64,
    pub lr: f64,
    pub max_grad_norm: f64,
    pub hidden: Vec<usize>,
    pub seed: u64,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            lanes: 64,
            rollout: 32,
            epochs: 10,
            minibatches: 32,
            gamma: 0.99,
            lambda: 0.95,
            clip: 0.2,
            value_weight: 0.5,
            lr: 3e-4,
            max_grad_norm: 0.5,
            hidden: vec![64, 64],
            seed: 1,
        }
    }
}

/// The policy and its value, trained together.
#[derive(Module, Debug)]
pub struct ActorCritic {
    pub actor: GaussianPolicy,
    pub critic: Mlp,
}

/// What one update did.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateReport {
    pub policy_loss: f64,
    pub value_loss: f64,
    /// The mean global gradient norm of the update's steps, before the clip.
    pub gradient_norm: f64,
    pub finished_returns: Vec<f64>,
    pub decisions: usize,
}

/// A PPO learner of a [`Task`]: rollouts on `device` without gradients, updates on its
/// autodiff form.
pub struct Ppo<'a, T: Task> {
    task: &'a T,
    config: PpoConfig,
    device: Device,
    train_device: Device,
    net: ActorCritic,
    optim: ModuleOptimizer,
    normalizer: Normalizer,
    /// The discounted return's running spread, which rewards are divided by.
    return_scale: Normalizer,
    discounted: Vec<f64>,
    rng: Rng,
    state: BatchState,
    episodes: Episodes,
}

/// A rollout's samples, decision-major (`t · lanes + l`).
struct Batch {
    observations: Vec<f64>,
    actions: Vec<f64>,
    log_probs: Vec<f64>,
    advantages: Vec<f64>,
    returns: Vec<f64>,
    values: Vec<f64>,
    finished: Vec<f64>,
}

impl<'a, T: Task> Ppo<'a, T> {
    /// A learner whose rollouts run on `device` (floats `f64`, no autodiff) and whose updates
    /// run on `train_device` (its autodiff form).
    pub fn new(task: &'a T, config: PpoConfig, device: &Device, train_device: &Device) -> Result<Self, BurnError> {
        let counts = [
            ("lanes", config.lanes),
            ("rollout", config.rollout),
            ("epochs", config.epochs),
            ("minibatches", config.minibatches),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(BurnError::ZeroSetting(name));
        }
        train_device.seed(config.seed);
        let (n, a) = (task.observations(), task.actions());
        let critic_sizes: Vec<usize> = std::iter::once(n).chain(config.hidden.iter().copied()).chain([1]).collect();
        let net = ActorCritic {
            actor: GaussianPolicy::new(n, &config.hidden, a, 0.0, train_device),
            critic: Mlp::new(&critic_sizes, train_device),
        };
        let mut rng = Rng::new(config.seed);
        let state = task.reset(&mut rng, config.lanes, device)?;
        Ok(Ppo {
            task,
            device: device.clone(),
            train_device: train_device.clone(),
            net,
            optim: AdamConfig::new().with_epsilon(1e-5).init(),
            normalizer: Normalizer::new(n),
            return_scale: Normalizer::new(1),
            discounted: vec![0.0; config.lanes],
            rng,
            state,
            episodes: Episodes::new(config.lanes, task.episode_length()),
            config,
        })
    }

    pub fn policy(&self) -> &GaussianPolicy {
        &self.net.actor
    }

    pub fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    /// The policy as it stands as a controller without noise (its mean action, clipped as the
    /// rollouts clip), on tensors without autodiff: what a held-out evaluation runs.
    pub fn controller(&self) -> Box<dyn Fn(Tensor<2>) -> Tensor<2>> {
        let (policy, normalizer) = (self.net.actor.valid(), self.normalizer.clone());
        Box::new(move |observation| policy.mean(normalizer.apply(observation)).clamp(-1.0, 1.0))
    }

    /// One rollout and the update on it, at `schedule` times the learning rate (1 at the
    /// start, annealed towards 0 by the caller).
    pub fn update(&mut self, schedule: f64) -> Result<UpdateReport, BurnError> {
        let lr = self.config.lr * schedule;
        let batch = self.collect()?;
        let samples = batch.returns.len();
        let size = samples.div_ceil(self.config.minibatches);
        let (mut policy_loss, mut value_loss, mut norms, mut count) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..self.config.epochs {
            let order = self.rng.permutation(samples);
            for chunk in order.chunks(size) {
                let (p, v, norm) = self.step_on(&batch, chunk, lr)?;
                policy_loss += p;
                value_loss += v;
                norms += norm;
                count += 1.0;
            }
        }
        Ok(UpdateReport {
            policy_loss: policy_loss / count,
            value_loss: value_loss / count,
            gradient_norm: norms / count,
            finished_returns: batch.finished,
            decisions: self.episodes.decisions,
        })
    }

    /// One optimizer step on the samples `chunk`: the policy's and the value's losses and the
    /// gradient's norm before the clip.
    fn step_on(&mut self, batch: &Batch, chunk: &[usize], lr: f64) -> Result<(f64, f64, f64), BurnError> {
        let (n, a, m) = (self.task.observations(), self.task.actions(), chunk.len());
        let device = &self.train_device;
        let gather = |v: &[f64], width: usize| -> Vec<f64> {
            chunk.iter().flat_map(|&i| v[i * width..(i + 1) * width].iter().copied()).collect()
        };
        let observations = tensor(gather(&batch.observations, n), m, n, device);
        let actions = tensor(gather(&batch.actions, a), m, a, device);
        let old_log_probs = tensor(gather(&batch.log_probs, 1), m, 1, device);
        let mut advantages = gather(&batch.advantages, 1);
        let mean = advantages.iter().sum::<f64>() / m as f64;
        let spread = (advantages.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / m as f64).sqrt() + 1e-8;
        advantages.iter_mut().for_each(|x| *x = (*x - mean) / spread);
        let advantages = tensor(advantages, m, 1, device);
        let ratio = (log_prob(&self.net.actor, observations.clone(), actions) - old_log_probs).exp();
        let clipped = ratio.clone().clamp(1.0 - self.config.clip, 1.0 + self.config.clip);
        let policy_loss = (ratio * advantages.clone()).min_pair(clipped * advantages).neg().mean();
        // The value's loss, clipped to the old value's neighbourhood.
        let (returns, old) =
            (tensor(gather(&batch.returns, 1), m, 1, device), tensor(gather(&batch.values, 1), m, 1, device));
        let value = self.net.critic.forward(observations);
        let near = old.clone() + (value.clone() - old).clamp(-self.config.clip, self.config.clip);
        let value_loss =
            (value - returns.clone()).powi_scalar(2).max_pair((near - returns).powi_scalar(2)).mean().mul_scalar(0.5);
        let loss = policy_loss.clone() + value_loss.clone().mul_scalar(self.config.value_weight);
        let mut grads = GradientsParams::from_grads(loss.backward(), &self.net);
        let norm = gradient_norm(&self.net, &grads);
        if !norm.is_finite() {
            return Err(BurnError::NonFiniteGradient { what: "PPO's", norm });
        }
        if norm > self.config.max_grad_norm {
            scale_gradients(&self.net, &mut grads, self.config.max_grad_norm / norm);
        }
        self.net = self.optim.step(lr, self.net.clone(), grads);
        Ok((scalar(policy_loss), scalar(value_loss), norm))
    }

    /// A rollout of `config.rollout` decisions from where the last one left the lanes, with
    /// GAE(λ) advantages.
    fn collect(&mut self) -> Result<Batch, BurnError> {
        let (lanes, steps, a) = (self.config.lanes, self.config.rollout, self.task.actions());
        let net = self.net.valid();
        let mut batch = Batch {
            observations: Vec::new(),
            actions: Vec::new(),
            log_probs: Vec::new(),
            advantages: vec![0.0; lanes * steps],
            returns: vec![0.0; lanes * steps],
            values: Vec::new(),
            finished: Vec::new(),
        };
        let (mut rewards, mut ends, mut next_values) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..steps {
            let raw = self.task.observe(&self.state);
            self.normalizer.update(&host(&raw), lanes);
            let observation = self.normalizer.apply(raw);
            let noise = noise(&mut self.rng, lanes, a, &self.device);
            let action = net.actor.mean(observation.clone()) + noise * net.actor.std();
            batch.log_probs.extend(host(&log_prob(&net.actor, observation.clone(), action.clone())));
            batch.values.extend(host(&net.critic.forward(observation.clone())));
            batch.observations.extend(host(&observation));
            batch.actions.extend(host(&action));
            let applied = action.clamp(-1.0, 1.0);
            let next = self.task.decide(&self.state, &applied)?;
            let fallen = self.task.terminated(&next);
            let reward = host(&self.task.reward(&self.state, &next, &applied, &fallen));
            let after = host(&net.critic.forward(self.normalizer.apply(self.task.observe(&next))));
            let ends_now = self.episodes.record(&reward, &fallen, &mut batch.finished);
            rewards.push(self.scale_rewards(&reward, &ends_now));
            // No value follows a fall; the time limit's cut bootstraps from where it was.
            next_values
                .push(after.iter().zip(&ends_now).map(|(v, e)| if *e == End::Terminated { 0.0 } else { *v }).collect());
            self.state = restart(self.task, &mut self.rng, &self.device, next, &ends_now)?;
            ends.push(ends_now.iter().map(|e| e.ended()).collect());
        }
        gae(&mut batch, &rewards, &ends, &next_values, self.config.gamma, self.config.lambda);
        Ok(batch)
    }

    /// The rewards divided by the running spread of the lanes' discounted returns (which
    /// restart where an episode ended), held within ±10.
    fn scale_rewards(&mut self, rewards: &[f64], ends: &[End]) -> Vec<f64> {
        for (discounted, r) in self.discounted.iter_mut().zip(rewards) {
            *discounted = *discounted * self.config.gamma + r;
        }
        self.return_scale.update(&self.discounted, rewards.len());
        for (discounted, end) in self.discounted.iter_mut().zip(ends) {
            if end.ended() {
                *discounted = 0.0;
            }
        }
        let scale = self.return_scale.spread(0);
        rewards.iter().map(|r| (r / scale).clamp(-10.0, 10.0)).collect()
    }
}

/// GAE(λ): `δ_t = r_t + γ V'_t − V_t`, `A_t = δ_t + γλ A_{t+1}` within an episode, where `V'_t`
/// is the value after the decision (zero after a fall); returns are `A + V`.
fn gae(batch: &mut Batch, rewards: &[Vec<f64>], ends: &[Vec<bool>], next_values: &[Vec<f64>], gamma: f64, lambda: f64) {
    let steps = rewards.len();
    let lanes = rewards.first().map_or(0, Vec::len);
    for l in 0..lanes {
        let mut advantage = 0.0;
        for t in (0..steps).rev() {
            let i = t * lanes + l;
            let delta = rewards[t][l] + gamma * next_values[t][l] - batch.values[i];
            let carry = if ends[t][l] { 0.0 } else { gamma * lambda * advantage };
            advantage = delta + carry;
            batch.advantages[i] = advantage;
            batch.returns[i] = advantage + batch.values[i];
        }
    }
}

/// The Gaussian's log density of the raw `action` (`[batch, 1]`).
fn log_prob(actor: &GaussianPolicy, observation: Tensor<2>, action: Tensor<2>) -> Tensor<2> {
    let std = actor.std();
    let z = (action - actor.mean(observation)) / std.clone();
    let per_control = (z.powi_scalar(2).mul_scalar(-0.5) - std.log()).sub_scalar(0.5 * std::f64::consts::TAU.ln());
    per_control.sum_dim(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gae_carries_advantage_within_an_episode_only() {
        let mut batch = Batch {
            observations: Vec::new(),
            actions: Vec::new(),
            log_probs: Vec::new(),
            advantages: vec![0.0; 3],
            returns: vec![0.0; 3],
            values: vec![1.0, 2.0, 3.0],
            finished: Vec::new(),
        };
        // One lane: decisions 0 and 1 in one episode, which ends at 1; decision 2 in the next.
        let rewards = [vec![1.0], vec![1.0], vec![1.0]];
        let ends = [vec![false], vec![true], vec![false]];
        let next_values = [vec![2.0], vec![0.0], vec![4.0]];
        let (g, l) = (0.9, 0.8);
        gae(&mut batch, &rewards, &ends, &next_values, g, l);
        let a2 = 1.0 + g * 4.0 - 3.0;
        let a1 = 1.0 - 2.0;
        let a0 = (1.0 + g * 2.0 - 1.0) + g * l * a1;
        for (got, want) in batch.advantages.iter().zip([a0, a1, a2]) {
            assert!((got - want).abs() < 1e-12, "{:?}", batch.advantages);
        }
        assert_eq!(batch.returns, [a0 + 1.0, a1 + 2.0, a2 + 3.0]);
    }
}

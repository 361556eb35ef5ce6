//! Control tasks on a [`Simulation`]: what a policy observes, what it is paid, when an episode
//! ends and where one starts. Gymnasium's MuJoCo locomotion tasks, v5, are built in
//! ([`Gymnasium`]), on the models as written.
//!
//! Observations and rewards are tensor expressions of the states, so that a learner through
//! the physics (`shac`) differentiates them with the rollout, and one without (`ppo`) reads
//! them detached; ant's contact wrenches, and the lag in how gymnasium measures its speed,
//! enter as values cut from the graph (see [`Gymnasium`]).

use burn::tensor::{DType, Device, Tensor, TensorData};

use super::nets::host;
use crate::{BatchState, BurnError, Simulation};

/// Hopper's and ant's pay for each decision they end healthy.
const HEALTHY_REWARD: f64 = 1.0;
/// The range ant's contact wrenches are clipped to, observed and paid for.
const ANT_WRENCH_RANGE: f64 = 1.0;

/// A control task: a simulated system, its decisions and its rewards.
pub trait Task {
    /// The simulation a decision steps.
    fn simulation(&self) -> &Simulation;
    /// Simulation steps a decision holds its controls for (gymnasium's frame skip).
    fn frame_skip(&self) -> usize;
    /// Observations a decision is made from.
    fn observations(&self) -> usize;
    /// Controls a decision sets, each in `[−1, 1]`.
    fn actions(&self) -> usize {
        self.simulation().model().nu()
    }
    /// Decisions after which an episode is cut short (gymnasium's time limit).
    fn episode_length(&self) -> usize {
        1000
    }
    /// What each lane observes at `state`: `[batch, observations]`.
    fn observe(&self, state: &BatchState) -> Tensor<2>;
    /// Each lane's reward for the decision `action` taking it from `before` to `after`, where
    /// `fallen` is [`Task::terminated`] at `after`: `[batch, 1]`.
    fn reward(&self, before: &BatchState, after: &BatchState, action: &Tensor<2>, fallen: &[bool]) -> Tensor<2>;
    /// The lanes whose episode ended at `state` (fell, or left the healthy range).
    fn terminated(&self, state: &BatchState) -> Vec<bool>;
    /// `lanes` fresh starts, drawn from `rng`, on `device`.
    fn reset(&self, rng: &mut Rng, lanes: usize, device: &Device) -> Result<BatchState, BurnError>;

    /// One decision: [`Task::frame_skip`] steps from `state` under `action`.
    fn decide(&self, state: &BatchState, action: &Tensor<2>) -> Result<BatchState, BurnError> {
        let sim = self.simulation();
        let mut next = sim.step(state, action)?;
        for _ in 1..self.frame_skip() {
            next = sim.step(&next, action)?;
        }
        Ok(next)
    }
}

/// A small seeded generator (xorshift64*) of the starts' noise: a task's episodes are
/// reproducible from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[−scale, scale)`.
    pub fn symmetric(&mut self, scale: f64) -> f64 {
        scale * (2.0 * self.uniform() - 1.0)
    }
    /// `0..n` in a uniformly random order (Fisher–Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, (self.uniform() * (i + 1) as f64) as usize);
        }
        order
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (a, b) = (self.uniform().max(f64::MIN_POSITIVE), self.uniform());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// Which of gymnasium's locomotion tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locomotion {
    /// `Hopper-v5`: a one-legged hopper in a plane, paid for forward speed while it stays up.
    Hopper,
    /// `HalfCheetah-v5`: a planar cheetah, paid for forward speed; it never falls.
    HalfCheetah,
    /// `Ant-v5`: a four-legged ant, free in space, paid for forward speed while its torso stays
    /// between 0.2 m and 1 m high, and charged for its contact wrenches.
    Ant,
}

impl Locomotion {
    /// Gymnasium's name of the task.
    pub fn name(self) -> &'static str {
        match self {
            Locomotion::Hopper => "Hopper-v5",
            Locomotion::HalfCheetah => "HalfCheetah-v5",
            Locomotion::Ant => "Ant-v5",
        }
    }
}

/// One of gymnasium's MuJoCo locomotion tasks, v5, with its default settings: its model as
/// written, its observation, reward, health check, time limit and start noise. Ant reads what
/// MuJoCo's data holds after a step (the last RK4 stage's torso position and contact wrenches,
/// `Simulation::with_body_records`): those values are gymnasium's, and a gradient through them
/// is not. The reward keeps gymnasium's speed and differentiates the torso's travel between the
/// states; the wrenches, clipped to ±1 (where most sit, or at 0), carry none.
#[derive(Clone, Debug)]
pub struct Gymnasium {
    kind: Locomotion,
    sim: Simulation,
    /// The time a decision spans (s).
    dt: f64,
}

impl Gymnasium {
    /// The task on `sim`, a simulation of the task's model (gymnasium's `hopper.xml`,
    /// `half_cheetah.xml` or `ant.xml`). Ant's steps record the bodies it reads
    /// ([`Simulation::with_body_records`]): its simulation is then a copy of `sim` with its own
    /// solve counts ([`Task::simulation`]), and a `sim` with a device route is refused.
    pub fn new(kind: Locomotion, sim: Simulation) -> Result<Self, BurnError> {
        let expected = match kind {
            Locomotion::Hopper => (6, 6, 3),
            Locomotion::HalfCheetah => (9, 9, 6),
            Locomotion::Ant => (15, 14, 8),
        };
        let model = sim.model();
        let got = (model.nq(), model.nv(), model.nu());
        if got != expected {
            return Err(BurnError::TaskModel { task: kind.name(), expected, got });
        }
        let dt = model.timestep * Self::skip(kind) as f64;
        let sim = if kind == Locomotion::Ant { sim.with_body_records()? } else { sim };
        Ok(Gymnasium { kind, sim, dt })
    }

    fn skip(kind: Locomotion) -> usize {
        match kind {
            Locomotion::Hopper => 4,
            Locomotion::HalfCheetah | Locomotion::Ant => 5,
        }
    }

    /// The task's kind.
    pub fn kind(&self) -> Locomotion {
        self.kind
    }

    /// Hopper's health: the torso above 0.7 m, within 0.2 rad of upright, and every position
    /// but the first two and every velocity within ±100.
    fn healthy(qpos: &[f64], qvel: &[f64]) -> bool {
        let (z, angle) = (qpos[1], qpos[2]);
        let bounded = qpos[2..].iter().chain(qvel).all(|x| x.abs() < 100.0);
        bounded && z > 0.7 && angle.abs() < 0.2
    }

    /// Ant's forward speed as gymnasium measures it: of the torso's position in MuJoCo's data
    /// after each decision, which is that of the last step's fourth RK4 stage, not of the state
    /// reached (`[batch, 1]`, cut from the graph). Its sum over an episode is the torso's
    /// travel but for that last stage's lag; the reward keeps this value, and differentiates
    /// the travel between the states.
    fn torso_speed(&self, before: &BatchState, after: &BatchState) -> Tensor<2> {
        let bodies = self.sim.model().bodies().len();
        // Body 1 is the torso; a state without records (made elsewhere) reads its own pose,
        // the free root's position.
        let x = |s: &BatchState| -> Vec<f64> {
            match s.body_positions() {
                Some(positions) => positions.chunks(3 * bodies).map(|lane| lane[3]).collect(),
                None => host(&s.qpos).chunks(s.qpos.dims()[1]).map(|lane| lane[0]).collect(),
            }
        };
        let speed: Vec<f64> = x(after).iter().zip(x(before)).map(|(a, b)| (a - b) / self.dt).collect();
        let lanes = speed.len();
        Tensor::from_data(TensorData::new(speed, [lanes, 1]), (&after.qpos.device(), DType::F64))
    }

    /// Ant's contact wrenches, every body's but the world's, clipped to ±1 and cut from the
    /// graph: `[batch, 6 × (bodies − 1)]`, zero at a start (as gymnasium's after a reset).
    /// The clip holds most of them at ±1 or 0, where it has no derivative to lose.
    fn ant_wrenches(&self, state: &BatchState) -> Tensor<2> {
        let (lanes, width) = (state.batch(), 6 * self.sim.model().bodies().len());
        let values = match state.external_wrenches() {
            Some(w) => w.iter().map(|x| x.clamp(-ANT_WRENCH_RANGE, ANT_WRENCH_RANGE)).collect(),
            None => vec![0.0; lanes * width],
        };
        let device = state.qpos.device();
        let all = Tensor::<2>::from_data(TensorData::new(values, [lanes, width]), (&device, DType::F64));
        all.narrow(1, 6, width - 6)
    }
}

impl Task for Gymnasium {
    fn simulation(&self) -> &Simulation {
        &self.sim
    }

    fn frame_skip(&self) -> usize {
        Self::skip(self.kind)
    }

    fn observations(&self) -> usize {
        let model = self.sim.model();
        match self.kind {
            Locomotion::Hopper | Locomotion::HalfCheetah => model.nq() - 1 + model.nv(),
            Locomotion::Ant => model.nq() - 2 + model.nv() + 6 * (model.bodies().len() - 1),
        }
    }

    /// The positions but the forward ones (x; ant's x and y), and the velocities (hopper's
    /// clipped to ±10); ant's clipped contact wrenches after them.
    fn observe(&self, state: &BatchState) -> Tensor<2> {
        let nq = state.qpos.dims()[1];
        match self.kind {
            Locomotion::Hopper => {
                let qvel = state.qvel.clone().clamp(-10.0, 10.0);
                Tensor::cat(vec![state.qpos.clone().narrow(1, 1, nq - 1), qvel], 1)
            }
            Locomotion::HalfCheetah => {
                Tensor::cat(vec![state.qpos.clone().narrow(1, 1, nq - 1), state.qvel.clone()], 1)
            }
            Locomotion::Ant => {
                let positions = state.qpos.clone().narrow(1, 2, nq - 2);
                Tensor::cat(vec![positions, state.qvel.clone(), self.ant_wrenches(state)], 1)
            }
        }
    }

    /// Forward speed (of the root's x; ant's of its torso's, as gymnasium reads it), less the
    /// control cost, plus hopper's and ant's 1 while healthy, less ant's contact cost.
    fn reward(&self, before: &BatchState, after: &BatchState, action: &Tensor<2>, fallen: &[bool]) -> Tensor<2> {
        let x = |s: &BatchState| s.qpos.clone().narrow(1, 0, 1);
        let speed = (x(after) - x(before)).div_scalar(self.dt);
        let effort = action.clone().powi_scalar(2).sum_dim(1);
        let device = speed.device();
        let alive = || {
            let alive: Vec<f64> = fallen.iter().map(|&t| if t { 0.0 } else { HEALTHY_REWARD }).collect();
            let lanes = alive.len();
            Tensor::<2>::from_data(TensorData::new(alive, [lanes, 1]), (&device, DType::F64))
        };
        match self.kind {
            Locomotion::Hopper => speed + alive() - effort.mul_scalar(1e-3),
            Locomotion::HalfCheetah => speed - effort.mul_scalar(0.1),
            Locomotion::Ant => {
                let contact = self.ant_wrenches(after).powi_scalar(2).sum_dim(1);
                let speed = speed.clone() + (self.torso_speed(before, after) - speed).detach();
                speed + alive() - effort.mul_scalar(0.5) - contact.mul_scalar(5e-4)
            }
        }
    }

    fn terminated(&self, state: &BatchState) -> Vec<bool> {
        if self.kind == Locomotion::HalfCheetah {
            return vec![false; state.batch()];
        }
        let (qpos, qvel) = (host(&state.qpos), host(&state.qvel));
        let (nq, nv) = (state.qpos.dims()[1], state.qvel.dims()[1]);
        let lanes = (0..state.batch()).map(|l| (&qpos[l * nq..(l + 1) * nq], &qvel[l * nv..(l + 1) * nv]));
        match self.kind {
            Locomotion::Hopper => lanes.map(|(q, v)| !Self::healthy(q, v)).collect(),
            // Ant's health: the torso between 0.2 m and 1 m, and gymnasium's check that the
            // state is finite (a step that would leave it so is refused first: `StepError`).
            _ => {
                lanes.map(|(q, v)| !(q.iter().chain(v).all(|x| x.is_finite()) && (0.2..=1.0).contains(&q[2]))).collect()
            }
        }
    }

    /// Gymnasium's starts: the reference pose plus uniform noise of ±0.005 (hopper) or ±0.1
    /// (cheetah, ant) on the positions (ant's torso quaternion among them, left as it comes, as
    /// gymnasium's); on the velocities the same uniform noise (hopper) or 0.1 times a standard
    /// normal (cheetah, ant).
    fn reset(&self, rng: &mut Rng, lanes: usize, device: &Device) -> Result<BatchState, BurnError> {
        let model = self.sim.model();
        let reference = model.default_state();
        let (nq, nv) = (model.nq(), model.nv());
        let mut qpos = Vec::with_capacity(lanes * nq);
        let mut qvel = Vec::with_capacity(lanes * nv);
        for _ in 0..lanes {
            match self.kind {
                Locomotion::Hopper => {
                    qpos.extend(reference.qpos.iter().map(|q| q + rng.symmetric(5e-3)));
                    qvel.extend(reference.qvel.iter().map(|v| v + rng.symmetric(5e-3)));
                }
                Locomotion::HalfCheetah | Locomotion::Ant => {
                    qpos.extend(reference.qpos.iter().map(|q| q + rng.symmetric(0.1)));
                    qvel.extend(reference.qvel.iter().map(|v| v + 0.1 * rng.normal()));
                }
            }
        }
        let dtype = self.sim.dtype(device);
        let tensor = |v: Vec<f64>, n: usize| Tensor::from_data(TensorData::new(v, [lanes, n]), (device, dtype));
        self.sim.state(tensor(qpos, nq), tensor(qvel, nv))
    }
}

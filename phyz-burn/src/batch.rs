//! The batch on the host: each lane's step in `f64` (rayon over the lanes), keeping what its
//! backward needs, and each lane's vector-Jacobian product from what its step kept.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use nalgebra::DVector;
use phyz_core::dynamics::kinematics::Kinematics;
use phyz_core::sim::{ContactState, SolveLog, StepInfo, Workspace, step_in};
use phyz_core::{Model, ModelError, State};
use phyz_dual::{Coordinates, DualError, StateTangent, StepVjp, StepVjps};
use rayon::prelude::*;

use crate::BurnError;

/// What every step of a simulation shares: the model, the solver preset, the chosen
/// parameters, and the solve counters.
#[derive(Debug)]
pub(crate) struct Shared {
    pub model: Model<f64>,
    /// The preset and contact capacity, with a cold warm-start cache.
    pub contact: ContactState,
    /// The chosen parameters' positions in [`Model::parameters`].
    pub params: Vec<usize>,
    /// The model's parameter values.
    pub base: Vec<f64>,
    /// Whether each lane's step records its bodies ([`BODY_RECORD`] numbers each).
    pub record_bodies: bool,
    pub counts: Counts,
}

/// Lane solves run forward and backward, and lane steps pulled back, over a simulation's life.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub forward: AtomicU64,
    pub backward: AtomicU64,
    pub pulled: AtomicU64,
}

impl Shared {
    /// The same model and preset with other chosen parameters and body records, and counts of
    /// its own.
    pub fn derived(&self, params: Vec<usize>, record_bodies: bool) -> Shared {
        Shared {
            model: self.model.clone(),
            contact: self.contact.clone(),
            params,
            base: self.base.clone(),
            record_bodies,
            counts: Counts::default(),
        }
    }

    /// The model with the chosen parameters at `values`.
    pub fn model_with(&self, values: &[f64]) -> Result<Model<f64>, ModelError> {
        let mut all = self.base.clone();
        for (&i, &v) in self.params.iter().zip(values) {
            all[i] = v;
        }
        self.model.with_parameters(&all)
    }

    pub fn nq(&self) -> usize {
        self.model.nq()
    }
    pub fn nv(&self) -> usize {
        self.model.nv()
    }
    pub fn na(&self) -> usize {
        self.model.na()
    }
    pub fn nu(&self) -> usize {
        self.model.nu()
    }
    /// The packed state's width: positions, velocities, activations.
    pub fn width(&self) -> usize {
        self.nq() + self.nv() + self.na()
    }
}

/// The parameter values a step runs with.
#[derive(Clone, Debug)]
pub(crate) enum LaneParams {
    /// The model's own: no parameter is differentiated.
    Model,
    /// One set for every lane.
    Shared(Vec<f64>),
    /// One set per lane, lane after lane.
    PerLane(Vec<f64>),
}

/// Where a lane's step started and the solutions its solves found: what its backward replays.
#[derive(Clone, Debug)]
pub(crate) struct LaneStart {
    state: State<f64>,
    ctrl: Vec<f64>,
    log: SolveLog,
}

/// A batch step taken on the host.
#[derive(Debug)]
pub(crate) struct Taken {
    pub shared: std::sync::Arc<Shared>,
    pub batch: usize,
    /// The next packed states, lane after lane.
    pub next: Vec<f64>,
    /// Each lane's start, kept when the step's gradient is tracked (else empty).
    pub starts: Vec<LaneStart>,
    pub params: LaneParams,
}

/// A lane's step, as [`step_batch`] returns it.
pub(crate) struct LaneStep {
    pub next: State<f64>,
    pub info: StepInfo,
    pub contact: ContactState,
    pub start: Option<LaneStart>,
    /// The step's record of its bodies, when the simulation asks for it (else empty).
    pub bodies: Vec<f64>,
}

/// The cotangents a step's backward gives: of the packed state, the controls and the
/// parameters (`[1, P]`, summed over the lanes, when they are shared).
pub(crate) struct Pulled {
    pub state: Vec<f64>,
    pub ctrl: Vec<f64>,
    pub params: Vec<f64>,
}

thread_local! {
    /// Each thread's step storage, kept from one lane step to the next.
    static WORKSPACE: std::cell::RefCell<Workspace<f64>> = std::cell::RefCell::new(Workspace::default());
}

/// Steps every lane from `states` under `ctrl` (`[batch, nu]`, lane after lane) with the
/// parameters `params`, each lane from its own warm starts; `tracked` keeps what the backward
/// needs and refuses unconverged solves. The first failing lane's error is returned.
pub(crate) fn step_batch(
    shared: &Shared,
    states: &[State<f64>],
    ctrl: &[f64],
    params: &LaneParams,
    contacts: &[ContactState],
    tracked: bool,
) -> Result<Vec<LaneStep>, BurnError> {
    let nu = shared.nu();
    let common = match params {
        LaneParams::Shared(values) => Some(shared.model_with(values)?),
        _ => None,
    };
    let lane = |l: usize| -> Result<LaneStep, BurnError> {
        let model = lane_model(shared, params, common.as_ref(), l)?;
        let lane_ctrl = &ctrl[l * nu..(l + 1) * nu];
        let mut contact = contacts[l].clone();
        let before = contact.solves();
        if tracked {
            contact.keep_solutions();
        }
        let stepped = WORKSPACE.with(|w| {
            let w = &mut *w.borrow_mut();
            w.data.set_record_wrenches(shared.record_bodies);
            step_in(&model, &states[l], lane_ctrl, &mut contact, w)?;
            let data = &w.data;
            let bodies = match shared.record_bodies {
                true => record_bodies(&model, data.kinematics(), data.external_wrenches(&model)),
                false => Vec::new(),
            };
            Ok((w.next.clone(), w.info.clone(), bodies))
        });
        let log = contact.take_solutions();
        shared.counts.forward.fetch_add(contact.solves() - before, Ordering::Relaxed);
        let (next, info, bodies) = stepped.map_err(|source| BurnError::Step { lane: l, source })?;
        if tracked && !info.differentiable {
            return Err(BurnError::Unconverged { lane: l, residual: info.residual });
        }
        let start = tracked.then(|| LaneStart { state: states[l].clone(), ctrl: lane_ctrl.to_vec(), log });
        Ok(LaneStep { next, info, contact, start, bodies })
    };
    let results: Vec<Result<LaneStep, BurnError>> = (0..states.len()).into_par_iter().map(lane).collect();
    results.into_iter().collect()
}

/// Numbers a body's record holds: its position (MuJoCo's `xpos`), then its external wrench
/// from the constraints (`cfrc_ext`: torque, force).
pub(crate) const BODY_RECORD: usize = 9;

/// Each body's record at the pose `kin` holds, under the constraints' `wrenches` (zero
/// without: a start, as MuJoCo's after a reset), body after body.
pub(crate) fn record_bodies(model: &Model<f64>, kin: &Kinematics<f64>, wrenches: Option<Vec<[f64; 6]>>) -> Vec<f64> {
    let mut out = Vec::with_capacity(BODY_RECORD * model.bodies().len());
    for b in 0..model.bodies().len() {
        out.extend(kin.body_pose(model, b).pos.iter());
        out.extend(wrenches.as_ref().map_or([0.0; 6], |w| w[b]));
    }
    out
}

/// Lane `l`'s model: the simulation's, the shared parameters' (`common`), or its own.
fn lane_model<'a>(
    shared: &'a Shared,
    params: &LaneParams,
    common: Option<&'a Model<f64>>,
    l: usize,
) -> Result<Cow<'a, Model<f64>>, ModelError> {
    Ok(match (params, common) {
        (LaneParams::PerLane(values), _) => {
            let p = shared.params.len();
            Cow::Owned(shared.model_with(&values[l * p..(l + 1) * p])?)
        }
        (_, Some(model)) => Cow::Borrowed(model),
        (_, None) => Cow::Borrowed(&shared.model),
    })
}

impl Taken {
    pub fn width(&self) -> usize {
        self.shared.width()
    }
    pub fn nu(&self) -> usize {
        self.shared.nu()
    }
    /// The shape of the parameters' tensor.
    pub fn params_shape(&self) -> [usize; 2] {
        match &self.params {
            LaneParams::Model => [1, 0],
            LaneParams::Shared(values) => [1, values.len()],
            LaneParams::PerLane(_) => [self.batch, self.shared.params.len()],
        }
    }

    /// The backward of the step for the next packed states' cotangent `bar` (lane after lane):
    /// each lane's step recorded again from its start, its solves given their logged
    /// solutions (no solver iteration runs), and swept back once.
    pub fn pull(&self, bar: &[f64]) -> Result<Pulled, DualError> {
        let shared = &*self.shared;
        let (nq, nv, na, nu, width) = (shared.nq(), shared.nv(), shared.na(), shared.nu(), self.width());
        let chosen: &[usize] = match self.params {
            LaneParams::Model => &[],
            _ => &shared.params,
        };
        let common = match &self.params {
            LaneParams::Shared(values) => Some(shared.model_with(values)?),
            _ => None,
        };
        // Lane `l`'s product, by `vjps` (the lane's model on the tape).
        let pull_lane = |vjps: &mut StepVjps, l: usize| -> Result<StepVjp, DualError> {
            let start = &self.starts[l];
            let row = &bar[l * width..(l + 1) * width];
            let cotangent = StateTangent {
                qpos: DVector::from_column_slice(&row[..nq]),
                qvel: DVector::from_column_slice(&row[nq..nq + nv]),
                act: DVector::from_column_slice(&row[nq + nv..]),
            };
            let mut contact = shared.contact.clone();
            contact.replay(start.log.clone());
            let vjp = vjps.at(Coordinates::Stored, &start.state, &start.ctrl, &cotangent, &mut contact)?;
            shared.counts.backward.fetch_add(contact.solves(), Ordering::Relaxed);
            shared.counts.pulled.fetch_add(1, Ordering::Relaxed);
            // The replay must be the forward step itself, bit for bit, its log used up: else the
            // solutions were another problem's and the derivative one of a step never taken.
            let next = &self.next[l * width..(l + 1) * width];
            let replayed = vjp.next.qpos.iter().chain(&vjp.next.qvel).chain(&vjp.next.act);
            let same = replayed.zip(next).all(|(a, b)| a.to_bits() == b.to_bits());
            if !same || !contact.replay_used_up() {
                panic!("phyz-burn: lane {l}'s backward replay is not its forward step");
            }
            Ok(vjp)
        };
        let lanes = (0..self.batch).into_par_iter();
        let vjps: Vec<Result<StepVjp, DualError>> = match &self.params {
            LaneParams::PerLane(_) => lanes
                .map(|l| {
                    let model = lane_model(shared, &self.params, None, l)?;
                    pull_lane(&mut StepVjps::new(&model, chosen)?, l)
                })
                .collect(),
            // One model for every lane: put on the tape once per thread's run of lanes.
            _ => {
                let model = common.as_ref().unwrap_or(&shared.model);
                lanes
                    .map_init(
                        || StepVjps::new(model, chosen),
                        |vjps, l| match vjps {
                            Ok(vjps) => pull_lane(vjps, l),
                            Err(e) => Err(e.clone()),
                        },
                    )
                    .collect()
            }
        };
        let vjps: Vec<StepVjp> = vjps.into_iter().collect::<Result<_, _>>()?;
        let mut pulled = Pulled {
            state: Vec::with_capacity(self.batch * width),
            ctrl: Vec::with_capacity(self.batch * nu),
            params: Vec::new(),
        };
        for v in &vjps {
            pulled.state.extend(v.state.qpos.iter().chain(&v.state.qvel).chain(&v.state.act));
            pulled.ctrl.extend(v.ctrl.iter());
        }
        debug_assert_eq!(pulled.state.len(), self.batch * (nq + nv + na));
        pulled.params = match self.params {
            LaneParams::Model => Vec::new(),
            // Summed lane by lane, in order: the same bits whatever the threads.
            LaneParams::Shared(_) => {
                let mut sum = vec![0.0; chosen.len()];
                for v in &vjps {
                    sum.iter_mut().zip(v.params.iter()).for_each(|(s, p)| *s += p);
                }
                sum
            }
            LaneParams::PerLane(_) => vjps.iter().flat_map(|v| v.params.iter().copied()).collect(),
        };
        Ok(pulled)
    }
}

//! Exact step Jacobians, `DualSVec64<N>` columns at a time.

use nalgebra::DMatrix;
use num_dual::DualSVec64;
use rayon::prelude::*;

use crate::DualError;
use crate::forward::{Seed, push_forward, seeded};
use crate::parameter::check_positions;
use phyz_core::Tangents;
use phyz_core::contact::SolverConfig;
use phyz_core::sim::{ContactState, StepInfo, Workspace, sensor_data_with};
use phyz_core::{Model, State};

/// Exact Jacobians of one step, in tangent coordinates, the state laid out `(q, v, act)` as
/// MuJoCo's `mjd_transitionFD` lays it out (`n = 2nv + na`): `a` is `∂x'/∂x` (`n × n`), `b` is
/// `∂x'/∂u` (`n × nu`), `p` is `∂x'/∂θ` for the chosen parameters (`n × np`).
#[derive(Clone, Debug, PartialEq)]
pub struct StepJacobians {
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    pub p: DMatrix<f64>,
    /// The state the step reaches.
    pub next: State<f64>,
    /// What the step's constraint solves did.
    pub info: StepInfo,
}

/// Exact Jacobians of the sensor outputs at a state (MuJoCo's `C` and `D` of
/// `mjd_transitionFD`): `c` is `∂s/∂x` over the state `(q, v, act)` in tangent coordinates
/// (`nsensordata × (2nv + na)`), `d` is `∂s/∂u` (`nsensordata × nu`). `N` columns per
/// `DualSVec64<N>` pass.
pub fn sensor_jacobians_lanes<const N: usize>(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
) -> Result<(DMatrix<f64>, DMatrix<f64>), DualError> {
    sensor_jacobians_with::<N>(model, state, ctrl, &SolverConfig::default())
}

/// [`sensor_jacobians_lanes`] with the acceleration-stage sensors' constraint solve under
/// `config` (see [`sensor_data_with`]): through the solve by the implicit function theorem.
pub fn sensor_jacobians_with<const N: usize>(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    config: &SolverConfig,
) -> Result<(DMatrix<f64>, DMatrix<f64>), DualError> {
    let (nv, nu) = (model.nv(), model.nu());
    let n = 2 * nv + model.na();
    let mut jac = DMatrix::zeros(model.nsensordata(), n + nu);
    // At least one pass, so that the sensors' refusal (or the state's) is reported.
    for start in (0..(n + nu).max(1)).step_by(N.max(1)) {
        let seeds: Vec<Seed> = (start..(start + N).min(n + nu)).map(|c| unit_seed(model, c, &[])).collect();
        let (model_d, state_d, ctrl_d) = seeded::<DualSVec64<N>>(model, state, ctrl, &seeds)?;
        let outputs = sensor_data_with(&model_d, &state_d, &ctrl_d, config)?;
        for k in 0..seeds.len() {
            jac.column_mut(start + k).copy_from(&outputs.map(|x| x.tangent(0, k)));
        }
    }
    Ok((jac.columns(0, n).into_owned(), jac.columns(n, nu).into_owned()))
}

/// The unit seed of column `column` of a step's Jacobian: the state `(q, v, act)`, then the
/// controls, then the parameters at `params`.
fn unit_seed(model: &Model<f64>, column: usize, params: &[usize]) -> Seed {
    let (nv, nu) = (model.nv(), model.nu());
    let n = 2 * nv + model.na();
    let mut seed = Seed::zeros(model);
    match column {
        c if c < nv => seed.qpos[c] = 1.0,
        c if c < 2 * nv => seed.qvel[c - nv] = 1.0,
        c if c < n => seed.act[c - 2 * nv] = 1.0,
        c if c < n + nu => seed.ctrl[c - n] = 1.0,
        c => {
            let mut direction = vec![0.0; model.parameters().len()];
            direction[params[c - n - nu]] = 1.0;
            seed.params = Some(direction);
        }
    }
    seed
}

/// Step Jacobians `a` and `b` from a cold start of the default solver preset, 8 columns per
/// pass.
pub fn step_jacobians(model: &Model<f64>, state: &State<f64>, ctrl: &[f64]) -> Result<StepJacobians, DualError> {
    step_jacobians_lanes::<8>(model, state, ctrl, &[], &mut ContactState::default())
}

/// Step Jacobians with respect to the state, the controls and the parameters at `params`
/// (positions in [`Model::parameters`], see [`crate::Parameter::index`]), from the solver
/// preset and warm starts in `contact` — the step a simulator with that state would take; the
/// cache is left as that step leaves it. `N` columns per `DualSVec64<N>` pass
/// (`⌈(2nv + na + nu + np) / N⌉` passes).
pub fn step_jacobians_lanes<const N: usize>(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    params: &[usize],
    contact: &mut ContactState,
) -> Result<StepJacobians, DualError> {
    let (nv, nu, np) = (model.nv(), model.nu(), params.len());
    check_positions(model, params)?;
    let n = 2 * nv + model.na();
    let columns = n + nu + np;
    let unit = |column: usize| unit_seed(model, column, params);
    let mut jac = DMatrix::zeros(n, columns);
    let start_cache = contact.clone();
    // The passes are independent: each from the same warm starts, in its own storage (one
    // workspace per thread), on as many threads as rayon has. At least one pass, so that a
    // model without degrees of freedom still reports its step.
    let starts: Vec<usize> = (0..columns.max(1)).step_by(N.max(1)).collect();
    let passes: Vec<_> = starts
        .par_iter()
        .map_init(Workspace::default, |workspace, &start| {
            let seeds: Vec<Seed> = (start..(start + N).min(columns)).map(unit).collect();
            let mut cache = start_cache.clone();
            push_forward::<DualSVec64<N>>(model, (state, ctrl), &seeds, &mut cache, workspace)
                .map(|(next, tangents, info)| (start, next, tangents, info, cache))
        })
        .collect();
    let mut reached = None;
    for pass in passes {
        let (start, next, tangents, info, cache) = pass?;
        for (k, t) in tangents.iter().enumerate() {
            jac.view_mut((0, start + k), (nv, 1)).copy_from(&t.qpos);
            jac.view_mut((nv, start + k), (nv, 1)).copy_from(&t.qvel);
            jac.view_mut((2 * nv, start + k), (n - 2 * nv, 1)).copy_from(&t.act);
        }
        // The first pass's cache is the step's.
        if reached.is_none() {
            *contact = cache;
            reached = Some((next, info));
        }
    }
    let (next, info) = reached.ok_or(DualError::TooManySeeds { seeds: columns, directions: N })?;
    Ok(StepJacobians {
        a: jac.columns(0, n).into_owned(),
        b: jac.columns(n, nu).into_owned(),
        p: jac.columns(n + nu, np).into_owned(),
        next,
        info,
    })
}

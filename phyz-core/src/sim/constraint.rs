//! The constraint stage: the gathered constraints' problem assembled in `S` (each row's
//! targets and regularizer from its material, depth and pre-step velocity, so that every
//! tangent reaches them), solved, and its impulses turned into accelerations.

use nalgebra::DVector;

use super::ContactState;
use super::data::Data;
use super::gather::Gather;
use super::info::StepInfo;
use crate::contact::{ContactError, ContactProblem, ContactRow, SolverConfig, Source, Units, noslip, solve_scalar_in};
use crate::error::StepError;
use crate::math::{copy_vector, zero_vector};
use crate::model::Model;
use crate::scalar::Scalar;

/// The problem of the gathered constraints at velocity `v`, written into `data.problem`:
/// the joint-space data from the smooth stages (the bare mass matrix and the undamped free
/// motion where `split`, as MuJoCo solves), then each constraint's row in `S` from its
/// material, depth and pre-step velocity, whose values carry every tangent into the targets,
/// regularizer and friction.
fn assemble<S: Scalar>(
    data: &mut Data<S>,
    model: &Model<S>,
    v: &DVector<S>,
    split: bool,
    config: &SolverConfig,
) -> Result<(), StepError> {
    let Data { smooth, bare, gather, problem, rows, bodies, pre_step, .. } = data;
    let dt = model.timestep;
    let joint = &mut problem.joint;
    if split {
        bare.factorize_tree(model, &smooth.mass, None)?;
        copy_vector(&mut joint.free, &smooth.force);
        bare.solve_in_place(&mut joint.free);
        joint.mass.copy_from(&smooth.mass);
    } else {
        copy_vector(&mut joint.free, &smooth.acceleration);
        smooth.factored_into(&mut joint.mass);
    }
    joint.free *= dt;
    joint.free += v;
    set_rows(model, (gather, v), config, (problem, pre_step), (rows, bodies));
    Ok(())
}

/// The rows of the gathered constraints in `gather` set on `problem`, whose joint-space data
/// is in place: their Jacobian, the pre-step velocity `J v` (into `pre_step`), and each row's
/// target and regularizer in `S` from its material, depth and pre-step velocity. `rows` and
/// `bodies` are the storage the rows are written through.
pub(super) fn set_rows<S: Scalar>(
    model: &Model<S>,
    (gather, v): (&Gather<S>, &DVector<S>),
    config: &SolverConfig,
    (problem, pre_step): (&mut ContactProblem<S>, &mut DVector<S>),
    (rows, bodies): (&mut Vec<ContactRow<S>>, &mut Vec<[Option<usize>; 2]>),
) {
    problem.joint.jacobian.copy_from(gather.jacobian());
    debug_assert_eq!(problem.joint.jacobian.nrows(), gather.row_count(), "a row outside the list");
    problem.joint.jacobian.mul_into(v, pre_step);
    let (dt, impratio) = (model.timestep, S::from_f64(model.contact.impratio));
    let list = &gather.list;
    rows.clear();
    let mut at = 0;
    for g in list {
        let (depth, v_n) = (g.depth, pre_step[at]);
        let row = match g.tie {
            Some((norm, _)) => ContactRow::bilateral(&g.material, depth, norm, v_n, dt),
            None => ContactRow::from_material(g.kind, &g.material, depth, v_n, dt, config),
        };
        rows.push(ContactRow { inverse_weight: Some(g.inverse_weight), impratio, ..row });
        at += g.kind.dim();
    }
    bodies.clear();
    bodies.extend(list.iter().map(|g| g.bodies));
    problem.set_rows(Some(pre_step), rows, Some(bodies), config);
    problem.present.clear();
    problem.present.extend(list.iter().map(|g| g.present));
    // A tie's rows target the violation's true acceleration: MuJoCo 4 subtracts `J̇ v` from
    // their reference, which the velocity target takes over the step.
    let mut at = 0;
    for g in list {
        if let Some((_, velocity_product)) = g.tie {
            problem.target[at] -= dt * velocity_product;
        }
        at += g.kind.dim();
    }
}

/// The constraint stage, after the gathering and the smooth stages at the same point: the
/// problem of the gathered constraints at velocity `v` over `lanes` batch lanes assembled and
/// solved, and its impulses folded into `data.qacc`, which holds the smooth acceleration.
/// phyz solves in the metric the integrator uses (with Euler's implicit damping); MuJoCo
/// solves with the bare mass matrix and the undamped free motion, then integrates the
/// constraint force with the damped one (`split`, reproduced under compatibility).
pub(super) fn solve<S: Scalar>(
    model: &Model<S>,
    (v, lanes, split): (&DVector<S>, usize, bool),
    data: &mut Data<S>,
    state: &mut ContactState,
    info: &mut StepInfo,
) -> Result<(), StepError> {
    if data.gather.list.is_empty() {
        (info.contacts, info.limits) = (0, 0);
        info.impulses.clear();
        return Ok(());
    }
    let config = state.config;
    assemble(data, model, v, split, &config)?;
    let dt = model.timestep;
    let inertia = model.constants().weights.mean_inertia.lane(0);
    data.problem.units = Units { scale: 1.0 / (inertia * model.nv().max(1) as f64), timestep: dt.lane(0) };
    state.warm.starts(&data.gather, v, dt, lanes, &mut data.warm);
    run_solver(model, lanes, split, data, state)?;
    let Data { smooth, gather, problem, velocity, solutions, impulse, qacc, .. } = data;
    state.logging.keep(solutions);
    state.warm.record(gather, solutions, v, dt);
    info.record(gather, solutions, config.method);
    // The velocity change the impulses make, folded into the acceleration.
    *velocity -= &problem.joint.free;
    if split {
        zero_vector(impulse, model.nv());
        problem.joint.mass.mul_add(velocity.as_slice(), impulse.as_mut_slice());
        smooth.factor.solve_in_place(impulse);
        qacc.axpy(S::one() / dt, impulse, S::one());
    } else {
        qacc.axpy(S::one() / dt, velocity, S::one());
    }
    Ok(())
}

/// The assembled problem's solutions in `data.solutions` and its post-step velocity in
/// `data.velocity`: given by the solve log where it replays, else solved (by the batch solver a
/// batch scalar supplies, or lane by lane), then MuJoCo's no-slip pass where the model asks.
fn run_solver<S: Scalar>(
    model: &Model<S>,
    lanes: usize,
    split: bool,
    data: &mut Data<S>,
    state: &mut ContactState,
) -> Result<(), StepError> {
    let config = state.config;
    let Data { smooth, bare, problem, warm, newton, velocity, solutions, solver, noslip_impulses, noslip_ran, .. } =
        data;
    // Only a Newton solve run below in `newton` leaves its factor at this problem's solution.
    newton.forget_solution();
    let source = match state.logging.next_given() {
        Some(given) => Source::Given(given.map_err(ContactError::Replay)?),
        None => {
            state.solves += lanes as u64;
            Source::Solve(warm)
        }
    };
    match (solver, source) {
        (Some(solver), Source::Solve(warm)) => {
            let mass = if split { &*bare } else { &smooth.factor };
            solver.solve(problem, mass, &config, warm, velocity, solutions)?;
            // Storage it wrote in place may hold a rule of an earlier problem.
            solutions.iter_mut().for_each(|s| s.derivative = None);
        }
        (_, Source::Given(_)) => {
            solve_scalar_in(problem, &config, source, newton, velocity, solutions)?;
            state.logging.share_derivatives(solutions);
        }
        (None, Source::Solve(_)) => solve_scalar_in(problem, &config, source, newton, velocity, solutions)?,
    }
    let noslip = model.contact.noslip;
    let slipless = noslip.iterations > 0 && config.mujoco_compat;
    if slipless {
        let trees = &model.tree().dof_root;
        noslip::pass(problem, &noslip, trees, config.method, solutions, velocity, noslip_impulses)?;
    } else {
        // A replayed log may carry a pass this solve does not run.
        solutions.iter_mut().for_each(|s| s.noslip = None);
    }
    *noslip_ran = slipless;
    Ok(())
}

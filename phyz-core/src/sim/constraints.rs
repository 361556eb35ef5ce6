//! The constraint stage of a step: gather contacts and limits, assemble the problem in `S`,
//! solve it, and turn the impulses into accelerations.

use std::collections::HashMap;
use std::sync::Arc;

use nalgebra::{DMatrix, DVector, Vector3};

use crate::Scalar;
use crate::collision::{Contact, detect};
use crate::contact::{
    ConstraintKind, ContactProblem, ContactRow, Material, SolImp, SolRef, SolverConfig, solve_scalar,
};
use crate::dynamics::kinematics::subspace;
use crate::dynamics::{Kinematics, MassFactor, forward_dynamics, forward_kinematics, mass_matrix};
use crate::error::StepError;
use crate::math::Pose;
use crate::model::{JointKind, Model};

/// Which constraint an impulse belongs to, across steps (the warm-start key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Contact { geoms: [usize; 2], feature: usize },
    JointLimit { joint: usize, upper: bool },
    TendonLimit { tendon: usize, upper: bool },
}

/// What the constraint stages of a step did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInfo {
    /// Contacts and limits in the last solve.
    pub contacts: usize,
    pub limits: usize,
    /// Largest iteration count and residual over the step's solves (one per RK4 stage).
    pub iterations: usize,
    pub residual: f64,
    /// Every solve of the step converged.
    pub converged: bool,
    /// Impulses of the last solve, row by row.
    pub impulses: Vec<f64>,
}

/// The solver preset and the warm-start cache a simulator keeps between steps.
#[derive(Clone, Debug, Default)]
pub struct ContactState {
    pub config: SolverConfig,
    warm: HashMap<Key, [f64; 3]>,
    /// The model's inverse weights, with the parameters (real parts) they were computed from:
    /// recomputed whenever a parameter changes.
    weights: Option<(Vec<f64>, Arc<InverseWeights>)>,
}

impl ContactState {
    pub fn new(config: SolverConfig) -> Self {
        ContactState { config, warm: HashMap::new(), weights: None }
    }

    /// The model's inverse weights, computed once per parameter set.
    fn weights<S: Scalar>(&mut self, model: &Model<S>) -> Result<Arc<InverseWeights>, StepError> {
        let parameters: Vec<f64> = model.parameters().iter().map(|p| p.lane(0)).collect();
        if let Some((known, weights)) = &self.weights
            && *known == parameters
        {
            return Ok(Arc::clone(weights));
        }
        let weights = Arc::new(InverseWeights::new(model)?);
        self.weights = Some((parameters, Arc::clone(&weights)));
        Ok(weights)
    }
}

/// One constraint gathered for assembly.
struct Gathered<S> {
    key: Key,
    kind: ConstraintKind,
    bodies: [Option<usize>; 2],
    material: Material,
    /// Rows of the constraint Jacobian (normal first), `nv` each.
    jacobian: Vec<DVector<S>>,
    depth: S,
    /// The inverse weight the regularizer is scaled by (MuJoCo's `diagApprox`).
    inverse_weight: f64,
}

/// MuJoCo's inverse weights at the reference pose (`body_invweight0`, `dof_invweight0`,
/// `tendon_invweight0`): how hard each body's centre of mass, each degree of freedom and each
/// tendon is to accelerate. The soft-constraint regularizer is scaled by them, which is what
/// makes a resting body settle at MuJoCo's depth.
#[derive(Debug)]
struct InverseWeights {
    body: Vec<f64>,
    dof: Vec<f64>,
    tendon: Vec<f64>,
}

impl InverseWeights {
    fn new<S: Scalar>(model: &Model<S>) -> Result<Self, StepError> {
        let model = model.cast::<f64>();
        let q0 = model.qpos0();
        let kin = forward_kinematics(&model, &q0);
        let factor = MassFactor::new(&model, &mass_matrix(&model, &kin))?;
        let weight = |jac: &DMatrix<f64>| {
            let rows = jac.nrows() as f64;
            (0..jac.nrows()).map(|r| jac.row(r).dot(&factor.solve(&jac.row(r).transpose()).transpose())).sum::<f64>()
                / rows
        };
        // MuJoCo's "simple" bodies — moved only by slides, off a static parent, carrying nothing
        // that moves — use their mass alone (no armature), for the body and for its degrees of
        // freedom.
        let carries_joints = |b: usize| {
            model.bodies().iter().enumerate().any(|(c, child)| {
                let mut p = c;
                while p != 0 && p != b {
                    p = model.bodies()[p].parent();
                }
                c != b && p == b && !child.joints().is_empty()
            })
        };
        let simple = |b: usize| {
            let body = &model.bodies()[b];
            if carries_joints(b) {
                return false;
            }
            let slides_only =
                !body.joints().is_empty() && body.joints().all(|j| model.joints()[j].kind() == JointKind::Slide);
            let static_parent = (0..).try_fold(body.parent(), |p, _| {
                if p == 0 {
                    Err(true)
                } else if model.bodies()[p].joints().is_empty() {
                    Ok(model.bodies()[p].parent())
                } else {
                    Err(false)
                }
            });
            slides_only && static_parent == Err(true) && body.mass > 0.0
        };
        let body: Vec<f64> = (0..model.bodies().len())
            .map(|b| {
                if b == 0 {
                    return 0.0;
                }
                if simple(b) {
                    return 1.0 / model.bodies()[b].mass;
                }
                let pose = kin.body_pose(&model, b);
                let com = pose.transform_point(&model.bodies()[b].com);
                let tran = weight(&point_jacobian(&model, &kin, b, &com));
                // A body that can only turn about its centre has no translational weight:
                // MuJoCo falls back to the rotational one.
                if tran > 1e-15 { tran } else { weight(&angular_jacobian(&model, &kin, b)) }
            })
            .collect();
        let dof = (0..model.nv())
            .map(|d| {
                let owner = model.tree().links[model.tree().dof_link[d]].body;
                if simple(owner) {
                    return 1.0 / model.bodies()[owner].mass;
                }
                let mut e = DVector::zeros(model.nv());
                e[d] = 1.0;
                factor.solve(&e)[d]
            })
            .collect();
        let tendon = model
            .tendons()
            .iter()
            .map(|t| {
                let mut jac = DVector::zeros(model.nv());
                t.apply(&model, 1.0, &mut jac);
                weight(&DMatrix::from_row_slice(1, model.nv(), jac.as_slice()))
            })
            .collect();
        Ok(InverseWeights { body, dof, tendon })
    }
}

/// The world-frame angular-velocity Jacobian (3 × nv) of `body`.
fn angular_jacobian<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> DMatrix<S> {
    let mut jac = DMatrix::zeros(3, model.nv());
    let links = &model.tree().links;
    let mut link = model.tree().body_link[body];
    while let Some(l) = link {
        for (k, col) in subspace(model, &links[l]).cols().iter().enumerate() {
            jac.set_column(links[l].dof_adr + k, &kin.world[l].motion_to_parent(col).ang);
        }
        link = links[l].parent;
    }
    jac
}

/// The world-frame linear-velocity Jacobian (3 × nv) of the point `p` moving with `body`.
fn point_jacobian<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize, p: &Vector3<S>) -> DMatrix<S> {
    let mut jac = DMatrix::zeros(3, model.nv());
    let links = &model.tree().links;
    let mut link = model.tree().body_link[body];
    while let Some(l) = link {
        for (k, col) in subspace(model, &links[l]).cols().iter().enumerate() {
            let m = kin.world[l].motion_to_parent(col);
            jac.set_column(links[l].dof_adr + k, &(m.lin + m.ang.cross(p)));
        }
        link = links[l].parent;
    }
    jac
}

fn contact_constraint<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    c: &Contact,
    weights: &InverseWeights,
) -> Gathered<S> {
    let frame = c.anchor.evaluate(model, kin, &c.tangent_ref);
    let [a, b] = c.anchor.bodies();
    let relative = point_jacobian(model, kin, b, &frame.point) - point_jacobian(model, kin, a, &frame.point);
    let directions = [frame.normal, frame.tangents[0], frame.tangents[1]];
    let jacobian = directions[..c.kind.dim()].iter().map(|d| (d.transpose() * &relative).transpose()).collect();
    let moving = |body: usize| (body != 0).then_some(body);
    Gathered {
        key: Key::Contact { geoms: c.geoms, feature: c.feature },
        kind: c.kind,
        bodies: [moving(a), moving(b)],
        material: c.material,
        jacobian,
        depth: frame.depth,
        inverse_weight: weights.body[a] + weights.body[b],
    }
}

/// The material of a joint or tendon limit: its own solref, solimp and margin, no friction.
fn limit_material(solref: [f64; 2], solimp: [f64; 5], margin: f64) -> Material {
    Material {
        friction: 0.0,
        restitution: 0.0,
        solref: SolRef::from_mjcf(solref),
        solimp: SolImp::from_mjcf(solimp),
        margin,
    }
}

/// Joint and tendon limits within their margins, as one-row unilateral constraints.
fn limits<S: Scalar>(
    model: &Model<S>,
    q: &DVector<S>,
    weights: &InverseWeights,
) -> Result<Vec<Gathered<S>>, StepError> {
    let real = |x: S| x.lane(0);
    let mut out = Vec::new();
    let mut push = |key, jacobian: DVector<S>, depth: S, material: Material, inverse_weight: f64| {
        if real(depth) > -material.margin {
            out.push(Gathered {
                key,
                kind: ConstraintKind::Limit,
                bodies: [None, None],
                material,
                jacobian: vec![jacobian],
                depth,
                inverse_weight,
            });
        }
    };
    for (j, joint) in model.joints().iter().enumerate() {
        let Some([lo, hi]) = joint.range else { continue };
        if !matches!(joint.kind(), JointKind::Hinge | JointKind::Slide) {
            return Err(StepError::Unsupported {
                what: format!("limits of the {:?} joint `{}`", joint.kind(), joint.name),
            });
        }
        let material =
            limit_material(joint.solref_limit.map(real), joint.solimp_limit.map(real), real(joint.limit_margin));
        let x = q[joint.qpos_adr()];
        for (upper, depth, sign) in [(false, lo - x, 1.0), (true, x - hi, -1.0)] {
            let mut jac = DVector::zeros(model.nv());
            jac[joint.dof_adr()] = S::from_f64(sign);
            push(Key::JointLimit { joint: j, upper }, jac, depth, material, weights.dof[joint.dof_adr()]);
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let Some([lo, hi]) = tendon.range else { continue };
        let material =
            limit_material(tendon.solref_limit.map(real), tendon.solimp_limit.map(real), real(tendon.limit_margin));
        let length = tendon.length(model, q);
        for (upper, depth, sign) in [(false, lo - length, 1.0), (true, length - hi, -1.0)] {
            let mut jac = DVector::zeros(model.nv());
            tendon.apply(model, S::from_f64(sign), &mut jac);
            push(Key::TendonLimit { tendon: t, upper }, jac, depth, material, weights.tendon[t]);
        }
    }
    Ok(out)
}

/// The acceleration at `(q, v)` with the constraint impulses of a step of `model.timestep`
/// folded in (`a = a_smooth + M⁻¹Jᵀp / dt`), and the smooth acceleration when nothing is active.
pub(crate) fn acceleration<S: Scalar>(
    model: &Model<S>,
    q: &DVector<S>,
    v: &DVector<S>,
    ctrl: &[S],
    extra_diagonal: Option<&DVector<S>>,
    state: &mut ContactState,
    info: &mut StepInfo,
) -> Result<DVector<S>, StepError> {
    let kin = forward_kinematics(model, q);
    let tau = crate::dynamics::passive_forces(model, &kin, q, v) + crate::dynamics::actuator_forces(model, q, v, ctrl);
    let smooth = forward_dynamics(model, &kin, v, &tau, extra_diagonal)?;
    if !model.enabled.constraint {
        return Ok(smooth);
    }
    let has_limits =
        model.joints().iter().any(|j| j.range.is_some()) || model.tendons().iter().any(|t| t.range.is_some());
    let has_geoms = model.bodies().iter().any(|b| !b.geoms.is_empty());
    if !(model.enabled.limit && has_limits || model.enabled.contact && has_geoms) {
        return Ok(smooth);
    }
    let weights = state.weights(model)?;
    let mut gathered = if model.enabled.limit { limits(model, q, &weights)? } else { Vec::new() };
    if model.enabled.contact && has_geoms {
        let poses: Vec<Pose<f64>> = (0..model.bodies().len())
            .map(|b| {
                let p = kin.body_pose(model, b);
                Pose::new(p.rot.map(|x| x.lane(0)), p.pos.map(|x| x.lane(0)))
            })
            .collect();
        let contacts = detect(model, &poses).map_err(|e| StepError::Unsupported { what: e.to_string() })?;
        gathered.extend(contacts.iter().map(|c| contact_constraint(model, &kin, c, &weights)));
    }
    if gathered.is_empty() {
        return Ok(smooth);
    }
    if q.iter().any(|x| x.lanes() > 1) {
        return Err(StepError::Unsupported {
            what: "constraints in batch lanes (each lane has its own contact set)".into(),
        });
    }
    let dt = model.timestep;
    let mass = mass_matrix(model, &kin);
    let with_extra = |extra: Option<&DVector<S>>| -> Result<MassFactor<S>, StepError> {
        let mut m = mass.clone();
        if let Some(extra) = extra {
            for i in 0..model.nv() {
                m[(i, i)] += extra[i];
            }
        }
        MassFactor::new(model, &m)
    };
    let rows: Vec<&DVector<S>> = gathered.iter().flat_map(|g| g.jacobian.iter()).collect();
    let m = rows.len();
    let jac = DMatrix::from_fn(m, model.nv(), |i, j| rows[i][j]);
    let solve_rows =
        |factor: &MassFactor<S>| DMatrix::from_columns(&rows.iter().map(|r| factor.solve(r)).collect::<Vec<_>>());
    // The impulses act through the mass matrix the integrator uses (with Euler's implicit
    // damping). phyz solves the problem in that same metric; MuJoCo solves it with the bare mass
    // matrix and the undamped free motion, then integrates with the damped one — reproduced
    // under compatibility.
    let minv_jt = solve_rows(&with_extra(extra_diagonal)?);
    let (delassus, v_free) = match extra_diagonal {
        Some(_) if state.config.mujoco_compat => {
            let undamped = forward_dynamics(model, &kin, v, &tau, None)?;
            (&jac * solve_rows(&with_extra(None)?), v + undamped * dt)
        }
        _ => (&jac * &minv_jt, v + &smooth * dt),
    };
    let free_velocity = &jac * &v_free;
    let velocity = &jac * v;

    let config = state.config;
    let real = |x: S| x.lane(0);
    let mut specs = Vec::with_capacity(gathered.len());
    let mut deviations = Vec::with_capacity(gathered.len());
    let mut at = 0;
    for g in &gathered {
        let (depth, v_n) = (g.depth, velocity[at]);
        let row = ContactRow::from_material(g.kind, &g.material, real(depth), real(v_n), real(dt), &config);
        specs.push(ContactRow { inverse_weight: Some(g.inverse_weight), ..row });
        deviations.push((depth - S::from_f64(real(depth)), v_n - S::from_f64(real(v_n))));
        at += g.kind.dim();
    }
    let bodies: Vec<[Option<usize>; 2]> = gathered.iter().map(|g| g.bodies).collect();
    let (problem, _) =
        ContactProblem::from_rows(delassus, free_velocity, &specs, Some(&deviations), Some(&bodies), &config);

    let mut warm = DVector::zeros(m);
    let mut at = 0;
    for g in &gathered {
        if let Some(w) = state.warm.get(&g.key) {
            for k in 0..g.kind.dim() {
                warm[at + k] = w[k];
            }
        }
        at += g.kind.dim();
    }
    let (impulses, solutions) = solve_scalar(&problem, &config, std::slice::from_ref(&warm))
        .map_err(|e| StepError::Contact { reason: e.to_string() })?;
    let solution = &solutions[0];
    let mut at = 0;
    for g in &gathered {
        let mut w = [0.0; 3];
        let dim = g.kind.dim();
        w[..dim].copy_from_slice(&solution.impulses.as_slice()[at..at + dim]);
        state.warm.insert(g.key, w);
        at += g.kind.dim();
    }
    info.contacts = gathered.iter().filter(|g| g.kind != ConstraintKind::Limit).count();
    info.limits = gathered.len() - info.contacts;
    info.iterations = info.iterations.max(solution.iterations);
    info.residual = info.residual.max(solution.residual);
    info.converged &= solution.converged;
    info.impulses = solution.impulses.iter().copied().collect();
    Ok(smooth + minv_jt * impulses / dt)
}

//! The constraint stage of a step: gather contacts and limits, assemble the problem in `S`,
//! solve it, and turn the impulses into accelerations.

use std::collections::HashMap;

use nalgebra::{DMatrix, DVector, Vector3};

use super::ties::{Motions, TieRow, tie_rows};
use super::weights::{InverseWeights, relative_jacobian};
use crate::collision::{ContactBuffer, Slot, contact_pair_material, detect_lane, pair_material};
use crate::contact::{
    ConstraintKind, ContactProblem, ContactRow, JointSpace, MIN_FRICTION, Material, NewtonWorkspace, SolImp, SolRef,
    Solution, SolverConfig, Units, Warm, solve_scalar_in,
};
use crate::dynamics::{Kinematics, MassFactor, Smooth};
use crate::error::StepError;
use crate::math::{Pose, copy_vector};
use crate::model::{Cone, Coupled, Equality, JointKind, Model, State};
use crate::scalar::{Mask, Scalar};

/// Which constraint an impulse belongs to, across steps (the warm-start key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// `edge`: 0, or which of a pyramidal cone's edges.
    /// `pair`: the explicit contact pair it comes from, if any (two pairs may name the same
    /// geoms).
    Contact {
        geoms: [usize; 2],
        feature: usize,
        edge: usize,
        pair: Option<usize>,
    },
    FrictionLoss {
        dof: usize,
    },
    TendonFriction {
        tendon: usize,
    },
    /// Row `row` of equality `index`.
    Equality {
        index: usize,
        row: usize,
    },
    JointLimit {
        joint: usize,
        upper: bool,
    },
    TendonLimit {
        tendon: usize,
        upper: bool,
    },
}

/// What the constraint stages of a step did (over all batch lanes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInfo {
    /// Contacts and limits in the last solve, summed over the batch lanes.
    pub contacts: usize,
    pub limits: usize,
    /// Largest iteration count and residual over the step's solves (one per RK4 stage and lane).
    pub iterations: usize,
    pub residual: f64,
    /// Every solve of the step converged.
    pub converged: bool,
    /// Impulses of the last solve, row by row, one lane after another (zero on the rows of a
    /// constraint absent from a lane).
    pub impulses: Vec<f64>,
}

/// The solver preset, the contact buffer's capacity and the warm-start cache a simulator keeps
/// between steps.
#[derive(Clone, Debug, Default)]
pub struct ContactState {
    pub config: SolverConfig,
    /// Contact slots a step may fill ([`ContactBuffer`]); `None`: as many as the batch needs.
    /// More contacts than slots is an error ([`StepError::ContactOverflow`]), not a lost contact.
    pub capacity: Option<usize>,
    /// One cache per batch lane.
    warm: Vec<LaneWarm>,
    /// The model's inverse weights per batch lane, with the parameters (real parts of every
    /// lane) they were computed from: recomputed whenever a parameter changes.
    weights: Option<LaneWeights>,
}

impl ContactState {
    pub fn new(config: SolverConfig) -> Self {
        ContactState { config, capacity: None, warm: Vec::new(), weights: None }
    }

    /// Copies the warm-start cache as it stands into `saved`, to put back if a step fails.
    pub(super) fn save_warm_cache(&self, saved: &mut SavedWarm) {
        saved.0.clone_from(&self.warm);
    }

    pub(super) fn restore_warm_cache(&mut self, saved: &SavedWarm) {
        self.warm.clone_from(&saved.0);
    }

    /// The inverse weights a step of `model` from `state` needs, `None` when nothing can be
    /// constrained.
    pub(super) fn weights_for_step<S: Scalar>(
        &mut self,
        model: &Model<S>,
        state: &State<S>,
    ) -> Result<Option<InverseWeights<S>>, StepError> {
        if !constrained(model) {
            return Ok(None);
        }
        let lanes = state.qpos.iter().chain(state.qvel.iter()).map(|x| x.lanes()).max().unwrap_or(1);
        self.weights(model, lanes).map(Some)
    }

    /// The model's inverse weights, one value per batch lane: computed in `S` when a number they
    /// read carries a derivative (they depend on the masses), else from each lane's `f64`
    /// weights, computed once per set of those numbers.
    fn weights<S: Scalar>(&mut self, model: &Model<S>, lanes: usize) -> Result<InverseWeights<S>, StepError> {
        let inputs = || InverseWeights::inputs(model);
        let differentiated =
            (0..S::tangent_dim()).any(|k| inputs().any(|p| (0..p.lanes()).any(|l| p.tangent(l, k) != 0.0)));
        if differentiated {
            return InverseWeights::new(model);
        }
        let lane_major = || (0..lanes).flat_map(move |l| inputs().map(move |p| p.lane(l)));
        if let Some((known, weights)) = &self.weights
            && weights.len() == lanes
            && lane_major().eq(known.iter().copied())
        {
            return Ok(InverseWeights::lift(weights));
        }
        let weights = (0..lanes).map(|l| InverseWeights::new(&model.lane(l))).collect::<Result<Vec<_>, _>>()?;
        let lifted = InverseWeights::lift(&weights);
        self.weights = Some((lane_major().collect(), weights));
        Ok(lifted)
    }
}

/// A copy of a [`ContactState`]'s warm-start cache (workspace storage).
#[derive(Clone, Debug, Default)]
pub(crate) struct SavedWarm(Vec<LaneWarm>);

/// What a lane's next solve starts from: the last solve's acceleration (Newton, as MuJoCo's
/// `qacc_warmstart`) and each constraint's impulses (the Gauss-Seidel pass).
#[derive(Clone, Debug, Default)]
pub(super) struct LaneWarm {
    acceleration: Option<DVector<f64>>,
    impulses: HashMap<Key, [f64; 6]>,
}

impl ContactState {
    /// Each lane's warm start for the gathered constraints at velocity `v`.
    fn warm_starts<S: Scalar>(&mut self, gathered: &[Gathered<S>], v: &DVector<S>, dt: S, lanes: usize) -> Vec<Warm> {
        self.warm.resize_with(lanes, LaneWarm::default);
        let rows: usize = gathered.iter().map(|g| g.kind.dim()).sum();
        self.warm
            .iter()
            .enumerate()
            .map(|(lane, cache)| {
                let mut impulses = DVector::zeros(rows);
                let mut at = 0;
                for g in gathered {
                    if let Some(w) = g.keys[lane].and_then(|key| cache.impulses.get(&key)) {
                        impulses.rows_mut(at, g.kind.dim()).copy_from_slice(&w[..g.kind.dim()]);
                    }
                    at += g.kind.dim();
                }
                let velocity = cache.acceleration.as_ref().map(|a| v.map(|x| x.lane(lane)) + a * dt.lane(lane));
                Warm { velocity, impulses: Some(impulses) }
            })
            .collect()
    }

    /// Keeps each lane's solution for the next solve.
    fn record<S: Scalar>(&mut self, gathered: &[Gathered<S>], solutions: &[Solution], v: &DVector<S>, dt: S) {
        for (lane, solution) in solutions.iter().enumerate() {
            let cache = &mut self.warm[lane];
            cache.acceleration = Some((&solution.velocity - v.map(|x| x.lane(lane))) / dt.lane(lane));
            let mut at = 0;
            for g in gathered {
                let dim = g.kind.dim();
                if let Some(key) = g.keys[lane] {
                    let mut w = [0.0; 6];
                    w[..dim].copy_from_slice(&solution.impulses.as_slice()[at..at + dim]);
                    cache.impulses.insert(key, w);
                }
                at += dim;
            }
        }
    }
}

/// Inverse weights of each batch lane, with the numbers they read (lane after lane) they came
/// from.
type LaneWeights = (Vec<f64>, Vec<InverseWeights<f64>>);

/// One constraint gathered for assembly (a contact slot or a limit), for every batch lane.
struct Gathered<S: Scalar> {
    /// The constraint's identity in each lane, `None` where it is absent.
    keys: Vec<Option<Key>>,
    kind: ConstraintKind,
    bodies: [Option<usize>; 2],
    /// The constraint's material, live: each lane's numbers with their tangents.
    material: Material<S>,
    /// Rows of the constraint Jacobian (normal first), `nv` each.
    jacobian: Vec<DVector<S>>,
    depth: S,
    /// The inverse weight the regularizer is scaled by (MuJoCo's `diagApprox`).
    inverse_weight: S,
    /// The lanes the constraint exists in.
    present: S::Mask,
    /// An equality row's violation norm over its equality's rows (what its impedance reads)
    /// and its velocity-product acceleration `J̇ v` (MuJoCo's, subtracted from the reference);
    /// `None` on every other row.
    tie: Option<(S, S)>,
}

/// A slot of the contact buffer, evaluated in `S` with each lane's anchor.
fn contact_constraint<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    slot: &Slot,
    lanes: usize,
    weights: &InverseWeights<S>,
) -> Gathered<S> {
    let lifted = slot.lift::<S>();
    let tangent_ref = match lifted.tangent_body {
        Some(body) => kin.body_pose(model, body).rot * lifted.tangent_ref,
        None => lifted.tangent_ref,
    };
    let frame = lifted.anchor.evaluate(model, kin, &tangent_ref);
    let [a, b] = lifted.anchor.bodies();
    let contacts = slot.contacts();
    let kind = contact_kind(contacts[0].condim);
    let relative = relative_jacobian(model, kin, [a, b], Some([&frame.point, &frame.point]));
    let directions = [frame.normal, frame.tangents[0], frame.tangents[1]];
    // Spin about the normal, then roll about the tangents: the relative angular velocity.
    let turning = (kind.dim() > 3).then(|| relative_jacobian(model, kin, [a, b], None));
    // A lane without a contact here evaluated another lane's anchor at its own pose, which
    // need not be finite (an upright cylinder's rim): its rows are zero, so nothing of it
    // reaches the lane's acceleration.
    let keep = |x: S| S::select(lifted.present, x, S::zero());
    let row = |d: &Vector3<S>, jac: &DMatrix<S>| {
        DVector::from_fn(jac.ncols(), |j, _| keep(d.x * jac[(0, j)] + d.y * jac[(1, j)] + d.z * jac[(2, j)]))
    };
    let linear = directions.iter().take(kind.dim().min(3)).map(|d| row(d, &relative));
    let angular = turning.iter().flat_map(|jac| directions[..kind.dim() - 3].iter().map(|d| row(d, jac)));
    let jacobian = linear.chain(angular).collect();
    let moving = |body: usize| (body != 0).then_some(body);
    Gathered {
        keys: (0..lanes)
            .map(|l| slot.get(l).map(|c| Key::Contact { geoms: c.geoms, feature: c.feature, edge: 0, pair: c.pair }))
            .collect(),
        kind,
        bodies: [moving(a), moving(b)],
        material: contact_material(model, slot, lanes),
        jacobian,
        depth: keep(frame.depth),
        inverse_weight: weights.body[a] + weights.body[b],
        present: lifted.present,
        tie: None,
    }
}

/// A slot's material. A single lane's is the live material of its pair, carrying the tangents
/// of the geoms' parameters; a batch's holds each lane's own pair's numbers (the lanes of a
/// batch carry no tangents).
fn contact_material<S: Scalar>(model: &Model<S>, slot: &Slot, lanes: usize) -> Material<S> {
    let contacts = slot.contacts();
    let geoms = contacts[0].geoms.map(|g| model.geom(g));
    if let (1, [Some(g1), Some(g2)]) = (lanes, geoms) {
        return match contacts[0].pair.and_then(|p| model.contact_pairs().get(p)) {
            Some(pair) => contact_pair_material(pair, g1, g2),
            None => pair_material(g1, g2),
        };
    }
    let own: Vec<&Material> = (0..lanes).map(|l| slot.get(l).map_or(&contacts[0].material, |c| &c.material)).collect();
    Material::from_lanes(&own)
}

/// The constraint a contact of MuJoCo's dimension `condim` is (`ModelBuilder::build` admits
/// 1, 3, 4 and 6 only).
fn contact_kind(condim: u8) -> ConstraintKind {
    match condim {
        1 => ConstraintKind::Frictionless,
        4 => ConstraintKind::Torsional,
        6 => ConstraintKind::Rolling,
        _ => ConstraintKind::Contact,
    }
}

/// MuJoCo's pyramidal cone for a frictional contact: per friction row `k`, the pair of edges
/// `n ± f_k r_k`, each a unilateral row at the contact's depth (the coefficients live, so
/// derivatives along them reach the rows).
fn pyramid_edges<S: Scalar>(g: Gathered<S>) -> Vec<Gathered<S>> {
    if !g.kind.is_cone() {
        return vec![g];
    }
    // MuJoCo holds every friction coefficient at least `mjMINMU`: a frictionless condim-3
    // contact is a nearly rigid pyramid, not a normal row. (Held, a coefficient's derivative
    // is zero: the pyramid does not move with it there.)
    let held = |f: S| f.max(S::from_f64(MIN_FRICTION));
    let material = Material { friction: held(g.material.friction), ..g.material };
    let (mu, torsion, rolling) = (material.friction, held(material.torsion), held(material.rolling));
    let coefficients = [mu, mu, torsion, rolling, rolling];
    let normal = &g.jacobian[0];
    let edges = g.jacobian[1..].iter().zip(coefficients).flat_map(|(r, f)| [normal + r * f, normal - r * f]);
    edges
        .enumerate()
        .map(|(k, row)| Gathered {
            keys: g.keys.iter().map(|key| key.map(|key| Key::edge(key, k))).collect(),
            kind: ConstraintKind::PyramidEdge,
            bodies: g.bodies,
            material,
            jacobian: vec![row],
            depth: g.depth,
            inverse_weight: g.inverse_weight,
            present: g.present,
            tie: None,
        })
        .collect()
}

impl Key {
    /// Edge `k` of a contact's pyramid.
    fn edge(self, k: usize) -> Key {
        match self {
            Key::Contact { geoms, feature, pair, .. } => Key::Contact { geoms, feature, edge: k, pair },
            other => other,
        }
    }
}

/// The material of a joint or tendon limit, a friction loss or an equality: its own solref,
/// solimp and margin, no friction.
fn own_material<S: Scalar>(solref: [S; 2], solimp: [S; 5], margin: S) -> Material<S> {
    Material {
        friction: S::zero(),
        restitution: S::zero(),
        solref: SolRef::from_mjcf(solref),
        solimp: SolImp::from_mjcf(solimp),
        margin,
        ..Material::default()
    }
}

/// The Jacobian row of one degree of freedom, `value` at `dof` and zero elsewhere.
fn unit_row<S: Scalar>(nv: usize, dof: usize, value: S) -> DVector<S> {
    let mut row = DVector::zeros(nv);
    row[dof] = value;
    row
}

/// Joint and tendon limits within their margins in some lane, as one-row unilateral
/// constraints (present in the lanes where they are within the margin).
fn limits<S: Scalar>(
    model: &Model<S>,
    q: &DVector<S>,
    lanes: usize,
    weights: &InverseWeights<S>,
) -> Result<Vec<Gathered<S>>, StepError> {
    let mut out = Vec::new();
    // The row is built only for a limit within its margin in some lane.
    let mut push = |key, row: &dyn Fn() -> DVector<S>, depth: S, margin: S, material, inverse_weight| {
        let present = depth.greater(-margin);
        if present.any() {
            out.push(Gathered {
                keys: (0..lanes).map(|l| present.lane(l).then_some(key)).collect(),
                kind: ConstraintKind::Limit,
                bodies: [None, None],
                material,
                jacobian: vec![row()],
                depth,
                inverse_weight,
                present,
                tie: None,
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
        let material = own_material(joint.solref_limit, joint.solimp_limit, joint.limit_margin);
        let x = q[joint.qpos_adr()];
        for (upper, depth, sign) in [(false, lo - x, 1.0), (true, x - hi, -1.0)] {
            let row = || unit_row(model.nv(), joint.dof_adr(), S::from_f64(sign));
            let key = Key::JointLimit { joint: j, upper };
            push(key, &row, depth, joint.limit_margin, material, weights.dof[joint.dof_adr()]);
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let Some([lo, hi]) = tendon.range else { continue };
        let material = own_material(tendon.solref_limit, tendon.solimp_limit, tendon.limit_margin);
        let length = tendon.length(model, q);
        for (upper, depth, sign) in [(false, lo - length, 1.0), (true, length - hi, -1.0)] {
            let row = || {
                let mut jac = DVector::zeros(model.nv());
                tendon.apply(model, S::from_f64(sign), &mut jac);
                jac
            };
            let key = Key::TendonLimit { tendon: t, upper };
            push(key, &row, depth, tendon.limit_margin, material, weights.tendon[t]);
        }
    }
    Ok(out)
}

/// Dry friction (MuJoCo's `frictionloss`) on each degree of freedom of a joint and on each
/// tendon's length, as one-row constraints in the lanes where it is positive: the impulse
/// bounded by the friction times the step, the target the velocity damped by `solreffriction`,
/// the impedance `solimpfriction`'s at zero.
fn friction_losses<S: Scalar>(model: &Model<S>, lanes: usize, weights: &InverseWeights<S>) -> Vec<Gathered<S>> {
    let dt = model.timestep;
    let nv = model.nv();
    let mut out = Vec::new();
    // The row is built only for a loss positive in some lane.
    let mut push = |key: Key, loss: S, solref, solimp, row: &dyn Fn() -> DVector<S>, inverse_weight: S| {
        let present = loss.greater(S::zero());
        if !present.any() {
            return;
        }
        let material = Material { friction: loss * dt, ..own_material(solref, solimp, S::zero()) };
        out.push(Gathered {
            keys: (0..lanes).map(|l| present.lane(l).then_some(key)).collect(),
            kind: ConstraintKind::FrictionLoss,
            bodies: [None, None],
            material,
            jacobian: vec![row()],
            depth: S::zero(),
            inverse_weight,
            present,
            tie: None,
        });
    };
    for joint in model.joints() {
        for dof in joint.dof_adr()..joint.dof_adr() + joint.kind().nv() {
            let row = || unit_row(nv, dof, S::one());
            let (solref, solimp) = (joint.solref_friction, joint.solimp_friction);
            push(Key::FrictionLoss { dof }, joint.frictionloss, solref, solimp, &row, weights.dof[dof]);
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let row = || {
            let mut jacobian = DVector::zeros(nv);
            tendon.apply(model, S::one(), &mut jacobian);
            jacobian
        };
        let (solref, solimp) = (tendon.solref_friction, tendon.solimp_friction);
        push(Key::TendonFriction { tendon: t }, tendon.frictionloss, solref, solimp, &row, weights.tendon[t]);
    }
    out
}

/// The model's equality constraints at positions `q` and velocity `v`, as bilateral rows: one
/// for a joint or tendon coupling — the violation `x₁ − x₁⁰ − p(x₂ − x₂⁰)` of its joint values
/// or tendon lengths, Jacobian `J₁ − p' J₂` — three for a connect and six for a weld
/// ([`super::ties`]); all in `S`, so derivatives along the polynomial, anchors and poses reach
/// the rows.
fn equalities<S: Scalar>(input: &StageInput<'_, S>) -> Vec<Gathered<S>> {
    let StageInput { model, kin, q, v, lanes, weights } = *input;
    let q0 = model.qpos0();
    let nv = model.nv();
    // A coupled object's value less its reference, Jacobian row and inverse weight.
    let joint = |j: usize| {
        let joint = &model.joints()[j];
        let jac = unit_row(nv, joint.dof_adr(), S::one());
        (q[joint.qpos_adr()] - q0[joint.qpos_adr()], jac, weights.dof[joint.dof_adr()])
    };
    let tendon = |t: usize| {
        let tendon = &model.tendons()[t];
        let mut jac = DVector::zeros(nv);
        tendon.apply(model, S::one(), &mut jac);
        (tendon.length(model, q) - tendon.length(model, &q0), jac, weights.tendon[t])
    };
    // The links' motions, found at the first connect or weld.
    let mut motions = None;
    let mut out = Vec::new();
    for (index, equality) in model.equalities().iter().enumerate().filter(|(_, e)| e.active) {
        let rows: Vec<TieRow<S>> = match equality.coupled {
            Coupled::Joints { first, second } => vec![coupling(equality, joint(first), second.map(joint))],
            Coupled::Tendons { first, second } => vec![coupling(equality, tendon(first), second.map(tendon))],
            Coupled::Connect { .. } | Coupled::Weld { .. } => {
                let motions = motions.get_or_insert_with(|| Motions::new(model, kin, v));
                tie_rows(model, kin, motions, weights, equality)
            }
        };
        let violations: Vec<S> = rows.iter().map(|r| r.violation).collect();
        let norm = norm(&violations);
        let material = own_material(equality.solref, equality.solimp, S::zero());
        out.extend(rows.into_iter().enumerate().map(|(row, r)| Gathered {
            keys: vec![Some(Key::Equality { index, row }); lanes],
            kind: ConstraintKind::Equality,
            bodies: [None, None],
            material,
            jacobian: vec![r.jacobian],
            depth: -r.violation,
            inverse_weight: r.inverse_weight,
            present: S::Mask::splat(true),
            tie: Some((norm, r.velocity_product)),
        }));
    }
    out
}

/// The row of a joint or tendon coupling from the first object's (offset, Jacobian, inverse
/// weight) and the second's.
fn coupling<S: Scalar>(
    equality: &Equality<S>,
    (x1, j1, w1): (S, DVector<S>, S),
    second: Option<(S, DVector<S>, S)>,
) -> TieRow<S> {
    let (violation, slope) = equality.violation(x1, second.as_ref().map(|s| s.0));
    let (jacobian, inverse_weight) = match &second {
        Some((_, j2, w2)) => (j1 - j2 * slope, w1 + *w2),
        None => (j1, w1),
    };
    TieRow { violation, jacobian, velocity_product: S::zero(), inverse_weight }
}

/// The Euclidean norm of `x`, with zero tangents where it is zero (it has no derivative there).
fn norm<S: Scalar>(x: &[S]) -> S {
    let squared = x.iter().fold(S::zero(), |sum, &x| sum + x * x);
    let positive = squared.greater(S::zero());
    S::select(positive, S::select(positive, squared, S::one()).sqrt(), S::zero())
}

/// Whether any constraint can be active in `model`.
fn constrained<S: Scalar>(model: &Model<S>) -> bool {
    let has_limits =
        model.joints().iter().any(|j| j.range.is_some()) || model.tendons().iter().any(|t| t.range.is_some());
    let lossy = |loss: S| loss.greater(S::zero()).any();
    let has_friction = model.enabled.frictionloss
        && (model.joints().iter().any(|j| lossy(j.frictionloss))
            || model.tendons().iter().any(|t| lossy(t.frictionloss)));
    let has_geoms = model.bodies().iter().any(|b| !b.geoms.is_empty());
    let has_equalities = model.enabled.equality && model.equalities().iter().any(|e| e.active);
    model.enabled.constraint
        && (has_equalities || has_friction || model.enabled.limit && has_limits || model.enabled.contact && has_geoms)
}

/// What the constraint stage reads at one evaluation: the model at the positions `kin` holds
/// and the velocity `v`, over `lanes` batch lanes, with the model's inverse weights.
#[derive(Clone, Copy)]
struct StageInput<'a, S: Scalar> {
    model: &'a Model<S>,
    kin: &'a Kinematics<S>,
    q: &'a DVector<S>,
    v: &'a DVector<S>,
    lanes: usize,
    weights: &'a InverseWeights<S>,
}

/// The equalities, friction losses, limits and contacts of every lane, in MuJoCo's order, the
/// contacts' cone as `config` and the model say.
fn gather<S: Scalar>(
    input: &StageInput<'_, S>,
    capacity: Option<usize>,
    config: &SolverConfig,
) -> Result<Vec<Gathered<S>>, StepError> {
    let StageInput { model, kin, q, lanes, weights, .. } = *input;
    // MuJoCo's cone as the model says under compatibility; phyz's presets solve the elliptic one.
    let pyramidal = config.mujoco_compat && model.contact.cone == Cone::Pyramidal;
    let mut gathered = if model.enabled.equality { equalities(input) } else { Vec::new() };
    if model.enabled.frictionloss {
        gathered.extend(friction_losses(model, lanes, weights));
    }
    if model.enabled.limit {
        gathered.extend(limits(model, q, lanes, weights)?);
    }
    if model.enabled.contact && model.bodies().iter().any(|b| !b.geoms.is_empty()) {
        // Detection reads each lane's poses (real parts); its contacts come back in slots.
        let found = (0..lanes)
            .map(|lane| {
                let poses: Vec<Pose<f64>> = (0..model.bodies().len())
                    .map(|b| {
                        let p = kin.body_pose(model, b);
                        Pose::new(p.rot.map(|x| x.lane(lane)), p.pos.map(|x| x.lane(lane)))
                    })
                    .collect();
                detect_lane(model, lane, &poses).map_err(|e| StepError::Unsupported { what: e.to_string() })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let buffer = ContactBuffer::new(found, capacity)?;
        let contacts = buffer.slots().map(|slot| contact_constraint(model, kin, &slot, lanes, weights));
        if pyramidal {
            gathered.extend(contacts.flat_map(pyramid_edges));
        } else {
            gathered.extend(contacts);
        }
    }
    Ok(gathered)
}

/// The problem of the gathered constraints over `joint`: each constraint's row in `S` from its
/// material, depth and pre-step velocity, whose values carry every tangent into the targets,
/// regularizer and friction.
fn assemble<S: Scalar>(
    gathered: &[Gathered<S>],
    joint: JointSpace<S>,
    v: &DVector<S>,
    dt: S,
    impratio: f64,
    config: &SolverConfig,
) -> ContactProblem<S> {
    let velocity = &joint.jacobian * v;
    let impratio = S::from_f64(impratio);
    let mut rows = Vec::with_capacity(gathered.len());
    let mut at = 0;
    for g in gathered {
        let (depth, v_n) = (g.depth, velocity[at]);
        let row = match g.tie {
            Some((norm, _)) => ContactRow::bilateral(&g.material, depth, norm, v_n, dt),
            None => ContactRow::from_material(g.kind, &g.material, depth, v_n, dt, config),
        };
        rows.push(ContactRow { inverse_weight: Some(g.inverse_weight), impratio, ..row });
        at += g.kind.dim();
    }
    let bodies: Vec<[Option<usize>; 2]> = gathered.iter().map(|g| g.bodies).collect();
    let mut problem = ContactProblem::from_rows(joint, Some(&velocity), &rows, Some(&bodies), config);
    problem.present = gathered.iter().map(|g| g.present).collect();
    // A tie's rows target the violation's true acceleration: MuJoCo 4 subtracts `J̇ v` from
    // their reference, which the velocity target takes over the step.
    let mut at = 0;
    for g in gathered {
        if let Some((_, velocity_product)) = g.tie {
            problem.target[at] -= dt * velocity_product;
        }
        at += g.kind.dim();
    }
    problem
}

/// What stays fixed over a step's acceleration evaluations: the model, the controls, and the
/// model's inverse weights (`None` when nothing can be constrained).
#[derive(Clone, Copy)]
pub(crate) struct StepInputs<'a, S: Scalar> {
    pub model: &'a Model<S>,
    pub ctrl: &'a [S],
    pub weights: Option<&'a InverseWeights<S>>,
}

/// One acceleration evaluation's storage: the smooth stages' outputs and the constraint
/// stage's.
#[derive(Clone, Debug)]
pub(crate) struct Evaluation<S: Scalar> {
    smooth: Smooth<S>,
    /// The factor of the bare mass matrix where it differs from the smooth stages' (see
    /// [`acceleration`]).
    bare: MassFactor<S>,
    /// `M⁻¹` of the smooth force under that factor.
    free: DVector<S>,
    /// The solve's storage, its post-step velocity and each lane's solution.
    newton: NewtonWorkspace,
    velocity: DVector<S>,
    solutions: Vec<Solution>,
}

impl<S: Scalar> Default for Evaluation<S> {
    fn default() -> Self {
        Evaluation {
            smooth: Smooth::default(),
            bare: MassFactor::default(),
            free: DVector::zeros(0),
            newton: NewtonWorkspace::default(),
            velocity: DVector::zeros(0),
            solutions: Vec::new(),
        }
    }
}

/// The acceleration at `(q, v)` with the constraint impulses of a step of `model.timestep`
/// folded in, and the smooth acceleration when nothing is active, written into `out`. The
/// constraint solve finds the post-step velocity `x`; the acceleration is `a_smooth + (x − x₀)/dt`.
pub(crate) fn acceleration<S: Scalar>(
    step: &StepInputs<'_, S>,
    (q, v, extra_diagonal): (&DVector<S>, &DVector<S>, Option<&DVector<S>>),
    evaluation: &mut Evaluation<S>,
    state: &mut ContactState,
    info: &mut StepInfo,
    out: &mut DVector<S>,
) -> Result<(), StepError> {
    let StepInputs { model, ctrl, weights } = *step;
    let smooth = &mut evaluation.smooth;
    let Some(weights) = weights else {
        smooth.without_mass(model, (q, v, ctrl), extra_diagonal)?;
        out.copy_from(&smooth.acceleration);
        return Ok(());
    };
    // With constraints possible, MuJoCo's order: the mass matrix and its factorization first,
    // shared by the smooth acceleration and the constraint solve.
    smooth.with_mass(model, (q, v, ctrl), extra_diagonal)?;
    let lanes = q.iter().chain(v.iter()).map(|x| x.lanes()).max().unwrap_or(1);
    let input = StageInput { model, kin: &smooth.kin, q, v, lanes, weights };
    let gathered = gather(&input, state.capacity, &state.config)?;
    out.copy_from(&smooth.acceleration);
    if gathered.is_empty() {
        (info.contacts, info.limits) = (0, 0);
        info.impulses.clear();
        return Ok(());
    }
    let dt = model.timestep;
    // phyz solves in the metric the integrator uses (with Euler's implicit damping); MuJoCo
    // solves with the bare mass matrix and the undamped free motion, then integrates the
    // constraint force with the damped one — reproduced under compatibility.
    let split = extra_diagonal.is_some() && state.config.mujoco_compat;
    let (metric, free) = if split {
        evaluation.bare.factorize(model, &smooth.mass)?;
        copy_vector(&mut evaluation.free, &smooth.force);
        evaluation.bare.solve_in_place(&mut evaluation.free);
        (smooth.mass.clone(), v + &evaluation.free * dt)
    } else {
        (smooth.factored().clone(), v + &smooth.acceleration * dt)
    };
    let rows: Vec<&DVector<S>> = gathered.iter().flat_map(|g| g.jacobian.iter()).collect();
    let jacobian = DMatrix::from_fn(rows.len(), model.nv(), |i, j| rows[i][j]);
    let config = state.config;
    let joint = JointSpace { mass: metric, jacobian, free };
    let mut problem = assemble(&gathered, joint, v, dt, model.contact.impratio, &config);
    let inertia = weights.mean_inertia.lane(0);
    problem.units = Units { scale: 1.0 / (inertia * model.nv().max(1) as f64), timestep: dt.lane(0) };
    let warm = state.warm_starts(&gathered, v, dt, lanes);
    let Evaluation { newton, velocity, solutions, .. } = evaluation;
    solve_scalar_in(&problem, &config, &warm, newton, velocity, solutions)
        .map_err(|e| StepError::Contact { reason: e.to_string() })?;
    state.record(&gathered, solutions, v, dt);
    info.record(&gathered, solutions);
    let change = &*velocity - &problem.joint.free;
    if split {
        let impulse = &problem.joint.mass * change;
        *out += smooth.factor.solve(&impulse) / dt;
    } else {
        *out += change / dt;
    }
    Ok(())
}

impl StepInfo {
    /// Back to the report of a step that has solved nothing yet (keeping the impulses'
    /// storage).
    pub(super) fn reset(&mut self) {
        let impulses = std::mem::take(&mut self.impulses);
        *self = StepInfo { converged: true, impulses, ..StepInfo::default() };
        self.impulses.clear();
    }

    /// Folds one solve (all lanes) into the step's report.
    fn record<S: Scalar>(&mut self, gathered: &[Gathered<S>], solutions: &[Solution]) {
        self.impulses.clear();
        for solution in solutions {
            self.iterations = self.iterations.max(solution.iterations);
            self.residual = self.residual.max(solution.residual);
            self.converged &= solution.converged;
            self.impulses.extend(solution.impulses.iter());
        }
        // A pyramid's contact counts once, by its first edge; friction losses are neither.
        let count = |contact: bool| -> usize {
            let keys = gathered.iter().flat_map(|g| g.keys.iter().flatten());
            keys.filter(|key| match key {
                Key::Contact { edge, .. } => contact && *edge == 0,
                Key::JointLimit { .. } | Key::TendonLimit { .. } => !contact,
                Key::FrictionLoss { .. } | Key::TendonFriction { .. } | Key::Equality { .. } => false,
            })
            .count()
        };
        self.contacts = count(true);
        self.limits = count(false);
    }
}

//! Gathering the constraints of one acceleration evaluation — equalities, friction losses,
//! limits and contacts, in MuJoCo's order — as Jacobian rows with their materials, depths and
//! inverse weights, for every batch lane, into storage kept from one evaluation to the next.

use nalgebra::{DVector, Vector3};

use super::ties::{Motions, TieRow, tie_rows};
use super::wrench::RowWrenches;
use crate::collision::{Contact, ContactBuffer, ContactFrame, Detector, Slot, contact_pair_material, pair_material};
use crate::contact::{ConstraintKind, MIN_FRICTION, Material, SolImp, SolRef, SolverConfig};
use crate::dynamics::DofRow;
use crate::dynamics::Kinematics;
use crate::dynamics::kinematics::{add_relative_rows, qpos_quat};
use crate::error::StepError;
use crate::math::{Pose, SparseRows, normalize_or_x, zero_vector};
use crate::model::InverseWeights;
use crate::model::{Cone, Coupled, Equality, JointKind, Model, TendonPath};
use crate::scalar::{Mask, Scalar};

/// Which constraint an impulse belongs to, across steps (the warm-start key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
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

impl Key {
    /// Edge `k` of a contact's pyramid.
    fn edge(self, k: usize) -> Key {
        match self {
            Key::Contact { geoms, feature, pair, .. } => Key::Contact { geoms, feature, edge: k, pair },
            other => other,
        }
    }
}

/// One gathered constraint (a contact slot, a pyramid's edge, a limit, a friction loss or an
/// equality row), for every batch lane; its keys and rows live in the [`Gather`] that holds it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gathered<S: Scalar> {
    /// Where its keys start in [`Gather`]'s list (one per lane, `None` where it is absent).
    keys: usize,
    pub kind: ConstraintKind,
    pub bodies: [Option<usize>; 2],
    /// The constraint's material, live: each lane's numbers with their tangents.
    pub material: Material<S>,
    /// Its first Jacobian row (normal first; `kind.dim()` rows) in [`Gather::jacobian`].
    row: usize,
    pub depth: S,
    /// The inverse weight the regularizer is scaled by (MuJoCo's `diagApprox`).
    pub inverse_weight: S,
    /// The lanes the constraint exists in.
    pub present: S::Mask,
    /// An equality row's violation norm over its equality's rows (what its impedance reads)
    /// and its velocity-product acceleration `J̇ v` (MuJoCo's, subtracted from the reference);
    /// `None` on every other row.
    pub tie: Option<(S, S)>,
    /// How its impulses push on its bodies ([`Gather::wrenches`]), for a contact, a pyramid's
    /// edge, or a connect's or weld's row.
    pub wrench: Option<usize>,
}

/// A contact as the constraint stage evaluated it (MuJoCo's `mjContact`).
#[derive(Clone, Copy, Debug)]
pub struct ContactPoint<S: Scalar> {
    /// The geoms (global indices, MuJoCo's geom ids), first to second, in the first batch lane
    /// that has the contact.
    pub geoms: [usize; 2],
    /// MuJoCo's contact dimension: which rows the contact has, if it has any.
    pub condim: u8,
    /// Where the contact is: the point midway between the surfaces, the normal from the first
    /// geom to the second, the tangents, and the penetration (MuJoCo's `dist` is its negative).
    pub frame: ContactFrame<S>,
    /// Its first row in the constraint Jacobian (MuJoCo's `efc_address`): a pyramid's first
    /// edge. `None` where no degree of freedom moves one geom against the other (MuJoCo's
    /// `efc_address` −1): an explicit pair's geoms on one body, on bodies welded together, or on
    /// two bodies without degrees of freedom.
    pub row: Option<usize>,
}

/// The gathered constraints of one evaluation with their keys and Jacobian rows; cleared and
/// refilled at each evaluation, keeping its storage.
#[derive(Clone, Debug)]
pub(super) struct Gather<S: Scalar> {
    pub list: Vec<Gathered<S>>,
    /// Every contact found, in detection's order: those in the list, in its order, and those
    /// without rows.
    pub contacts: Vec<ContactPoint<S>>,
    keys: Vec<Option<Key>>,
    /// Jacobian rows, each over the degrees of freedom its constraint reaches, in the list's
    /// order.
    rows: SparseRows<S>,
    /// Dense rows (`nv` numbers each) the row writers add into, zero outside
    /// [`Gather::begin_rows`]…[`Gather::commit_rows`], which reads and clears only the
    /// constraint's `columns`.
    scratch: Vec<S>,
    columns: Vec<usize>,
    nv: usize,
    lanes: usize,
    detection: Detection,
    /// How the contacts' and ties' rows push on their bodies, recorded only when
    /// `record_wrenches` asks (the acceleration-stage sensors read them; a step does not).
    pub wrenches: Vec<RowWrenches<S>>,
    pub record_wrenches: bool,
    /// Whether the last gather (or clear) recorded them: there was one, and it was asked to.
    pub recorded: bool,
    /// The model's reference positions and the links' motions, for equalities.
    q0: DVector<S>,
    motions: Motions<S>,
    /// Each limit's depth and the lanes within its margin (storage for [`limits`]).
    near: Vec<(S, S::Mask)>,
}

/// Detection's storage: one lane's body poses, the detector's lists, each lane's contacts and
/// the slots they are laid out in.
#[derive(Clone, Debug, Default)]
struct Detection {
    poses: Vec<Pose<f64>>,
    detector: Detector,
    found: Vec<Vec<Contact>>,
    buffer: ContactBuffer,
}

impl<S: Scalar> Default for Gather<S> {
    fn default() -> Self {
        Gather {
            list: Vec::new(),
            contacts: Vec::new(),
            keys: Vec::new(),
            rows: SparseRows::default(),
            scratch: Vec::new(),
            columns: Vec::new(),
            nv: 0,
            lanes: 1,
            detection: Detection::default(),
            wrenches: Vec::new(),
            record_wrenches: false,
            recorded: false,
            q0: DVector::zeros(0),
            motions: Motions::default(),
            near: Vec::new(),
        }
    }
}

impl<S: Scalar> Gather<S> {
    /// Constraint `g`'s identity in each lane.
    pub fn keys(&self, g: &Gathered<S>) -> &[Option<Key>] {
        &self.keys[g.keys..g.keys + self.lanes]
    }

    /// The contacts detection laid out in slots.
    pub(super) fn detected(&self) -> &ContactBuffer {
        &self.detection.buffer
    }

    /// The gathered constraints' Jacobian, their rows in the list's order (constraint `g`'s
    /// are `g.row..g.row + g.kind.dim()`).
    pub fn jacobian(&self) -> &SparseRows<S> {
        &self.rows
    }

    /// The number of Jacobian rows the gathered constraints have.
    pub fn row_count(&self) -> usize {
        self.list.iter().map(|g| g.kind.dim()).sum()
    }

    /// Nothing gathered, for `nv` degrees of freedom and `lanes` batch lanes.
    pub fn clear(&mut self, nv: usize, lanes: usize) {
        self.list.clear();
        self.contacts.clear();
        self.keys.clear();
        self.rows.clear(nv);
        self.wrenches.clear();
        self.recorded = self.record_wrenches;
        (self.nv, self.lanes) = (nv, lanes);
    }

    /// Appends one key per lane; returns where they start.
    fn push_keys(&mut self, keys: impl IntoIterator<Item = Option<Key>>) -> usize {
        let at = self.keys.len();
        self.keys.extend(keys);
        at
    }

    /// `count` dense zero rows for a constraint over [`Gather::columns`] (ascending) to be
    /// written into, then kept by [`Gather::commit_rows`]. A writer adds only on those columns.
    fn begin_rows(&mut self, count: usize) -> &mut [S] {
        let len = count * self.nv;
        if self.scratch.len() < len {
            self.scratch.resize(len, S::zero());
        }
        &mut self.scratch[..len]
    }

    /// Keeps the `count` rows written since [`Gather::begin_rows`] on [`Gather::columns`],
    /// clearing them from the dense rows; returns the first's index.
    fn commit_rows(&mut self, count: usize) -> usize {
        let at = self.rows.push_rows(self.columns.iter().copied(), count);
        for r in 0..count {
            let dense = &mut self.scratch[r * self.nv..(r + 1) * self.nv];
            let (columns, values) = self.rows.row_mut(at + r);
            for (&j, x) in columns.iter().zip(values) {
                *x = std::mem::replace(&mut dense[j], S::zero());
            }
        }
        at
    }

    /// Sets [`Gather::columns`] to the degrees of freedom `add` names (in any order, repeats
    /// allowed).
    fn set_columns(&mut self, add: impl FnOnce(&mut Vec<usize>)) {
        self.columns.clear();
        add(&mut self.columns);
        self.columns.sort_unstable();
        self.columns.dedup();
    }
}

/// The degrees of freedom tendon `t`'s length moves: a fixed tendon's joints', and every one
/// for a spatial tendon.
fn tendon_columns<S: Scalar>(model: &Model<S>, t: usize, out: &mut Vec<usize>) {
    match model.tendons()[t].path() {
        TendonPath::Fixed { joints, .. } => out.extend(joints.iter().map(|&j| model.joints()[j].dof_adr())),
        TendonPath::Spatial(_) => out.extend(0..model.nv()),
    }
}

/// The degrees of freedom of joint `joint`.
fn joint_columns<S: Scalar>(model: &Model<S>, joint: usize, out: &mut Vec<usize>) {
    let joint = &model.joints()[joint];
    out.extend(joint.dof_adr()..joint.dof_adr() + joint.kind().nv());
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

/// A one-row constraint of every lane `present` holds (its key in each), over the columns
/// `columns` adds, its row set by `row` on a dense zero row.
fn push_row<S: Scalar>(
    out: &mut Gather<S>,
    key: Key,
    template: Gathered<S>,
    columns: impl FnOnce(&mut Vec<usize>),
    row: impl FnOnce(&mut [S]),
) {
    let present = template.present;
    let keys = out.push_keys((0..out.lanes).map(|l| present.lane(l).then_some(key)));
    out.set_columns(columns);
    row(out.begin_rows(1));
    let at = out.commit_rows(1);
    out.list.push(Gathered { keys, row: at, ..template });
}

/// A bare one-row constraint of `kind` with `material`, present where `present` says.
fn one_row<S: Scalar>(
    kind: ConstraintKind,
    material: Material<S>,
    depth: S,
    inverse_weight: S,
    present: S::Mask,
) -> Gathered<S> {
    Gathered {
        keys: 0,
        kind,
        bodies: [None, None],
        material,
        row: 0,
        depth,
        inverse_weight,
        present,
        tie: None,
        wrench: None,
    }
}

/// Joint and tendon limits within their margins in some lane, as one-row unilateral
/// constraints (present in the lanes where they are within the margin).
fn limits<S: Scalar>(
    model: &Model<S>,
    (q, kin): (&DVector<S>, &Kinematics<S>),
    weights: &InverseWeights<S>,
    out: &mut Gather<S>,
) -> Result<(), StepError> {
    let joints = || model.joints().iter().enumerate().filter_map(|(j, joint)| joint.range.map(|r| (j, joint, r)));
    let tendons = || model.tendons().iter().enumerate().filter_map(|(t, tendon)| tendon.range.map(|r| (t, tendon, r)));
    if let Some((_, joint, _)) = joints().find(|(_, joint, _)| joint.kind() == JointKind::Free) {
        return Err(StepError::Unsupported { what: format!("limits of the free joint `{}`", joint.name) });
    }
    // Every limit's depths and the lanes near it first: a device tells which are near in one read.
    let mut near = std::mem::take(&mut out.near);
    near.clear();
    for (_, joint, [lo, hi]) in joints() {
        let depths = match joint.kind() {
            // A ball joint's one limit is on its rotation angle, the larger bound (MuJoCo's).
            JointKind::Ball => {
                let depth = ball_rotation(q, joint.qpos_adr()).0 - hi.max(lo);
                [(depth, S::Mask::splat(false)), (depth, depth.greater(-joint.limit_margin))]
            }
            _ => {
                let x = q[joint.qpos_adr()];
                [lo - x, x - hi].map(|depth| (depth, depth.greater(-joint.limit_margin)))
            }
        };
        near.extend(depths);
    }
    for (t, tendon, [lo, hi]) in tendons() {
        let length = kin.tendons.length[t];
        near.extend([lo - length, length - hi].map(|depth| (depth, depth.greater(-tendon.limit_margin))));
    }
    S::Mask::prefetch(near.iter().map(|&(_, present)| present));
    let (joint_sides, tendon_sides) = near.split_at(2 * joints().count());
    // Rows and materials are made only for a limit within its margin in some lane (most are
    // far from theirs). Each side's mask is read as prefetched: a mask combined from them would
    // be one more read from a device.
    let within = |sides: &[(S, S::Mask)]| sides[0].1.any() || sides[1].1.any();
    for ((j, joint, _), sides) in joints().zip(joint_sides.chunks_exact(2)) {
        if !within(sides) {
            continue;
        }
        let material = own_material(joint.solref_limit, joint.solimp_limit, joint.limit_margin);
        for (upper, (depth, present), sign) in [(false, sides[0], 1.0), (true, sides[1], -1.0)] {
            if present.any() {
                let (adr, limit) = (
                    joint.dof_adr(),
                    one_row(ConstraintKind::Limit, material, depth, weights.dof[joint.dof_adr()], present),
                );
                let key = Key::JointLimit { joint: j, upper };
                let columns = |c: &mut Vec<usize>| joint_columns(model, j, c);
                match joint.kind() {
                    // Against the rotation, about its axis.
                    JointKind::Ball => {
                        let axis = ball_rotation(q, joint.qpos_adr()).1;
                        push_row(out, key, limit, columns, |row| (0..3).for_each(|k| row[adr + k] = -axis[k]));
                    }
                    _ => push_row(out, key, limit, columns, |row| row[adr] = S::from_f64(sign)),
                }
            }
        }
    }
    for ((t, tendon, _), sides) in tendons().zip(tendon_sides.chunks_exact(2)) {
        if !within(sides) {
            continue;
        }
        let material = own_material(tendon.solref_limit, tendon.solimp_limit, tendon.limit_margin);
        let jacobian = kin.tendons.jacobian(model, t);
        for (upper, (depth, present), sign) in [(false, sides[0], 1.0), (true, sides[1], -1.0)] {
            if present.any() {
                let limit = one_row(ConstraintKind::Limit, material, depth, weights.tendon[t], present);
                let key = Key::TendonLimit { tendon: t, upper };
                let columns = |c: &mut Vec<usize>| tendon_columns(model, t, c);
                push_row(out, key, limit, columns, |row| jacobian.apply(model, S::from_f64(sign), row));
            }
        }
    }
    out.near = near;
    Ok(())
}

/// A ball joint's rotation angle at `q` (from the quaternion at `adr`) and its unit axis, in
/// the joint's frame, as MuJoCo's `mju_quat2Vel` and `mju_normalize3` (the x axis at no
/// rotation, where the angle's derivative is taken as zero rather than undefined).
fn ball_rotation<S: Scalar>(q: &DVector<S>, adr: usize) -> (S, Vector3<S>) {
    let rotation = qpos_quat(q, adr).to_rotation_vector();
    let squared = rotation.dot(&rotation);
    let still = squared.less(S::from_f64(1e-30));
    let angle = S::select(still, S::zero(), S::select(still, S::one(), squared).sqrt());
    (angle, normalize_or_x(rotation))
}

/// Dry friction (MuJoCo's `frictionloss`) on each degree of freedom of a joint and on each
/// tendon's length, as one-row constraints in the lanes where it is positive: the impulse
/// bounded by the friction times the step, the target the velocity damped by `solreffriction`,
/// the impedance `solimpfriction`'s at zero.
fn friction_losses<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, weights: &InverseWeights<S>, out: &mut Gather<S>) {
    let dt = model.timestep;
    // The row is built only for a loss positive in some lane.
    let loss = |loss: S, solref, solimp, inverse_weight| {
        let present = loss.greater(S::zero());
        present.any().then(|| {
            let material = Material { friction: loss * dt, ..own_material(solref, solimp, S::zero()) };
            one_row(ConstraintKind::FrictionLoss, material, S::zero(), inverse_weight, present)
        })
    };
    for joint in model.joints() {
        for dof in joint.dof_adr()..joint.dof_adr() + joint.kind().nv() {
            let (solref, solimp) = (joint.solref_friction, joint.solimp_friction);
            if let Some(g) = loss(joint.frictionloss, solref, solimp, weights.dof[dof]) {
                push_row(out, Key::FrictionLoss { dof }, g, |c| c.push(dof), |row| row[dof] = S::one());
            }
        }
    }
    for (t, tendon) in model.tendons().iter().enumerate() {
        let (solref, solimp) = (tendon.solref_friction, tendon.solimp_friction);
        if let Some(g) = loss(tendon.frictionloss, solref, solimp, weights.tendon[t]) {
            let jacobian = kin.tendons.jacobian(model, t);
            let columns = |c: &mut Vec<usize>| tendon_columns(model, t, c);
            push_row(out, Key::TendonFriction { tendon: t }, g, columns, |row| jacobian.apply(model, S::one(), row));
        }
    }
}

/// The model's equality constraints at positions `q` and velocity `v`, as bilateral rows: one
/// for a joint or tendon coupling — the violation `x₁ − x₁⁰ − p(x₂ − x₂⁰)` of its joint values
/// or tendon lengths, Jacobian `J₁ − p' J₂` — three for a connect and six for a weld
/// ([`super::ties`]); all in `S`, so derivatives along the polynomial, anchors and poses reach
/// the rows.
fn equalities<S: Scalar>(input: &StageInput<'_, S>, out: &mut Gather<S>) {
    let StageInput { model, kin, q, v, .. } = *input;
    let weights = &model.constants().weights;
    if !model.equalities().iter().any(|e| e.active) {
        return;
    }
    zero_vector(&mut out.q0, model.nq());
    model.qpos0_into(&mut out.q0);
    let nv = model.nv();
    // The links' motions, found at the first connect or weld.
    let mut moving = false;
    for (index, equality) in model.equalities().iter().enumerate().filter(|(_, e)| e.active) {
        let count = match equality.coupled {
            Coupled::Joints { .. } | Coupled::Tendons { .. } => 1,
            Coupled::Connect { .. } => 3,
            Coupled::Weld { .. } => 6,
        };
        out.set_columns(|c| match equality.coupled {
            Coupled::Joints { first, second } => {
                [Some(first), second].into_iter().flatten().for_each(|j| joint_columns(model, j, c));
            }
            Coupled::Tendons { first, second } => {
                [Some(first), second].into_iter().flatten().for_each(|t| tendon_columns(model, t, c));
            }
            Coupled::Connect { bodies } | Coupled::Weld { bodies } => model.tree().chains(bodies, c),
        });
        out.begin_rows(count);
        let jacobian = &mut out.scratch[..count * nv];
        let coupled = |object| Coupling { object, model, kin, q, q0: &out.q0, weights };
        let (ties, ends) = match equality.coupled {
            Coupled::Joints { first, second } => {
                let (first, second) = (coupled(Object::Joint(first)), second.map(|j| coupled(Object::Joint(j))));
                (coupling(equality, first, second, jacobian), None)
            }
            Coupled::Tendons { first, second } => {
                let (first, second) = (coupled(Object::Tendon(first)), second.map(|t| coupled(Object::Tendon(t))));
                (coupling(equality, first, second, jacobian), None)
            }
            Coupled::Connect { bodies } | Coupled::Weld { bodies } => {
                if !moving {
                    out.motions.update(model, kin, v);
                    moving = true;
                }
                let weld = matches!(equality.coupled, Coupled::Weld { .. });
                let (ties, ends) = tie_rows(model, kin, &out.motions, weights, equality, (bodies, weld), jacobian);
                (ties, Some(ends))
            }
        };
        let at = out.commit_rows(count);
        let violations = ties.map(|t| t.violation);
        let norm = norm(&violations[..count]);
        let material = own_material(equality.solref, equality.solimp, S::zero());
        for (row, tie) in ties[..count].iter().enumerate() {
            let keys = out.push_keys((0..out.lanes).map(|_| Some(Key::Equality { index, row })));
            let present = S::Mask::splat(true);
            let bare = one_row(ConstraintKind::Equality, material, -tie.violation, tie.inverse_weight, present);
            let wrench = ends.filter(|_| out.record_wrenches).map(|ends| {
                out.wrenches.push(RowWrenches::tie(&ends, row));
                out.wrenches.len() - 1
            });
            out.list.push(Gathered { keys, row: at + row, tie: Some((norm, tie.velocity_product)), wrench, ..bare });
        }
    }
}

/// What a joint or tendon coupling couples.
#[derive(Clone, Copy)]
enum Object {
    Joint(usize),
    Tendon(usize),
}

/// One coupled joint value or tendon length at positions `q` (whose kinematics `kin` holds),
/// with the model's reference positions `q0` and inverse weights (which hold the tendons'
/// reference lengths).
struct Coupling<'a, S: Scalar> {
    object: Object,
    model: &'a Model<S>,
    kin: &'a Kinematics<S>,
    q: &'a DVector<S>,
    q0: &'a DVector<S>,
    weights: &'a InverseWeights<S>,
}

impl<S: Scalar> Coupling<'_, S> {
    /// The value less its reference.
    fn offset(&self) -> S {
        match self.object {
            Object::Joint(j) => {
                let adr = self.model.joints()[j].qpos_adr();
                self.q[adr] - self.q0[adr]
            }
            Object::Tendon(t) => self.kin.tendons.length[t] - self.weights.tendon_length0[t],
        }
    }

    fn inverse_weight(&self) -> S {
        match self.object {
            Object::Joint(j) => self.weights.dof[self.model.joints()[j].dof_adr()],
            Object::Tendon(t) => self.weights.tendon[t],
        }
    }

    /// Adds `scale` times the value's Jacobian to `row`.
    fn add_row(&self, scale: S, row: &mut [S]) {
        match self.object {
            Object::Joint(j) => row[self.model.joints()[j].dof_adr()] += scale,
            Object::Tendon(t) => self.kin.tendons.jacobian(self.model, t).apply(self.model, scale, row),
        }
    }
}

/// The row of a joint or tendon coupling of `first` to `second` (the first alone: held at its
/// reference), its Jacobian `J₁ − p' J₂` added to `row`: a tie's first row.
fn coupling<S: Scalar>(
    equality: &Equality<S>,
    first: Coupling<'_, S>,
    second: Option<Coupling<'_, S>>,
    row: &mut [S],
) -> [TieRow<S>; 6] {
    let (violation, slope) = equality.violation(first.offset(), second.as_ref().map(Coupling::offset));
    first.add_row(S::one(), row);
    let mut inverse_weight = first.inverse_weight();
    if let Some(second) = &second {
        second.add_row(-slope, row);
        inverse_weight += second.inverse_weight();
    }
    let mut ties = [TieRow { violation: S::zero(), velocity_product: S::zero(), inverse_weight: S::zero() }; 6];
    ties[0] = TieRow { violation, velocity_product: S::zero(), inverse_weight };
    ties
}

/// The Euclidean norm of `x`, with zero tangents where it is zero (it has no derivative there).
fn norm<S: Scalar>(x: &[S]) -> S {
    let squared = x.iter().fold(S::zero(), |sum, &x| sum + x * x);
    let positive = squared.greater(S::zero());
    S::select(positive, S::select(positive, squared, S::one()).sqrt(), S::zero())
}

/// Slot `slot`'s contact: its frame in `S`, recorded in [`Gather::contacts`], and its
/// constraint with its rows, or `None` where no degree of freedom moves one geom against the
/// other (two geoms of one body, or of bodies welded together: an explicit pair's), which
/// MuJoCo keeps in its contacts without constraint rows.
fn contact_constraint<S: Scalar>(input: &StageInput<'_, S>, slot: &Slot, out: &mut Gather<S>) -> Option<Gathered<S>> {
    let StageInput { model, kin, lanes, .. } = *input;
    let weights = &model.constants().weights;
    let lifted = slot.lift::<S>();
    let tangent_ref = match lifted.tangent_body {
        Some(body) => kin.body_pose(model, body).rot * lifted.tangent_ref,
        None => lifted.tangent_ref,
    };
    let frame = lifted.anchor.evaluate(model, kin, &tangent_ref);
    let first = slot.first();
    // Turned round where the detector pinned the pair the other way: the normal from the first
    // geom to the second (the first tangent is the reference's projection either way).
    let (frame, [a, b]) = match (first.flipped, lifted.anchor.bodies()) {
        (false, bodies) => (frame, bodies),
        (true, [a, b]) => {
            let [t1, t2] = frame.tangents;
            (ContactFrame { normal: -frame.normal, tangents: [t1, -t2], ..frame }, [b, a])
        }
    };
    // A lane without a contact here evaluated another lane's anchor at its own pose, which
    // need not be finite (an upright cylinder's rim): its rows are zero, so nothing of it
    // reaches the lane's acceleration.
    let keep = |x: S| S::select(lifted.present, x, S::zero());
    let [normal, t1, t2] = [frame.normal, frame.tangents[0], frame.tangents[1]].map(|d| d.map(keep));
    let kept = ContactFrame { point: frame.point.map(keep), normal, tangents: [t1, t2], depth: keep(frame.depth) };
    let contact = ContactPoint { geoms: first.geoms, condim: first.condim, frame: kept, row: None };
    // The same chain of degrees of freedom behind both geoms: they cannot move apart.
    let tree = model.tree();
    if tree.body_last_dof[a] == tree.body_last_dof[b] {
        out.contacts.push(contact);
        return None;
    }
    let kind = contact_kind(first.condim);
    let (dim, nv) = (kind.dim(), model.nv());
    let directions = [frame.normal, frame.tangents[0], frame.tangents[1]];
    let keys = out.push_keys(
        (0..lanes)
            .map(|l| slot.get(l).map(|c| Key::Contact { geoms: c.geoms, feature: c.feature, edge: 0, pair: c.pair })),
    );
    out.set_columns(|c| tree.chains([a, b], c));
    let (linear, angular) = out.begin_rows(dim).split_at_mut(dim.min(3) * nv);
    add_relative_rows(model, kin, [a, b], Some([&frame.point, &frame.point]), &directions[..dim.min(3)], linear);
    // Spin about the normal, then roll about the tangents: the relative angular velocity.
    add_relative_rows(model, kin, [a, b], None, &directions[..dim.saturating_sub(3)], angular);
    let row = out.commit_rows(dim);
    for r in row..row + dim {
        out.rows.row_mut(r).1.iter_mut().for_each(|x| *x = keep(*x));
    }
    let wrench = out.record_wrenches.then(|| {
        out.wrenches.push(RowWrenches::contact([a, b], kept.point, &[normal, t1, t2], dim));
        out.wrenches.len() - 1
    });
    out.contacts.push(ContactPoint { row: Some(row), ..contact });
    let moving = |body: usize| (body != 0).then_some(body);
    Some(Gathered {
        keys,
        kind,
        bodies: [moving(a), moving(b)],
        material: contact_material(model, slot, lanes),
        row,
        depth: kept.depth,
        inverse_weight: weights.body[a] + weights.body[b],
        present: lifted.present,
        tie: None,
        wrench,
    })
}

/// A slot's material, live in the model's parameters, so that derivatives along the geoms' and
/// the explicit pairs' numbers reach every lane's contact: each lane's own pair's material, the
/// lanes told apart by masks where a batch holds different pairs in one slot.
fn contact_material<S: Scalar>(model: &Model<S>, slot: &Slot, lanes: usize) -> Material<S> {
    let live = |c: &Contact| -> Option<Material<S>> {
        let [Some(g1), Some(g2)] = c.geoms.map(|g| model.geom(g)) else { return None };
        Some(match c.pair.and_then(|p| model.contact_pairs().get(p)) {
            Some(pair) => contact_pair_material(pair, g1, g2),
            None => pair_material(g1, g2),
        })
    };
    let key = |c: &Contact| (c.geoms, c.pair);
    let first = slot.first();
    let Some(mut material) = live(first) else {
        // Geoms the model does not hold (never, for contacts detection made): the numbers
        // detection gave each lane.
        let own: Vec<&Material> = (0..lanes).map(|l| slot.get(l).map_or(&first.material, |c| &c.material)).collect();
        return Material::from_lanes(&own);
    };
    if lanes == 1 {
        return material;
    }
    let mut combined = vec![key(first)];
    for contact in (0..lanes).filter_map(|l| slot.get(l)) {
        if combined.contains(&key(contact)) {
            continue;
        }
        combined.push(key(contact));
        let Some(own) = live(contact) else { continue };
        let lanes: Vec<bool> = (0..lanes).map(|l| slot.get(l).is_some_and(|c| key(c) == key(contact))).collect();
        material = Material::select(S::Mask::from_lanes(&lanes), &own, &material);
    }
    material
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

/// MuJoCo's pyramidal cone for a frictional contact `g`: per friction row `k`, the pair of
/// edges `n ± f_k r_k`, each a unilateral row at the contact's depth (the coefficients live, so
/// derivatives along them reach the rows), in place of the contact.
fn push_pyramid<S: Scalar>(out: &mut Gather<S>, g: Gathered<S>) {
    if !g.kind.is_cone() {
        out.list.push(g);
        return;
    }
    // MuJoCo holds every friction coefficient at least `mjMINMU`: a frictionless condim-3
    // contact is a nearly rigid pyramid, not a normal row. (Held, a coefficient's derivative
    // is zero: the pyramid does not move with it there.)
    let held = |f: S| f.max(S::from_f64(MIN_FRICTION));
    let material = Material { friction: held(g.material.friction), ..g.material };
    let (mu, torsion, rolling) = (material.friction, held(material.torsion), held(material.rolling));
    let coefficients = [mu, mu, torsion, rolling, rolling];
    for (k, &f) in coefficients.iter().enumerate().take(g.kind.dim() - 1) {
        for (side, sign) in [(0, S::one()), (1, -S::one())] {
            let edge = 2 * k + side;
            let keys = out.keys.len();
            for l in 0..out.lanes {
                let key = out.keys[g.keys + l].map(|key| key.edge(edge));
                out.keys.push(key);
            }
            let row = out.rows.push_combination(g.row, g.row + 1 + k, sign * f);
            let wrench = g.wrench.map(|w| {
                out.wrenches.push(out.wrenches[w].edge(k, sign * f));
                out.wrenches.len() - 1
            });
            out.list.push(Gathered { keys, kind: ConstraintKind::PyramidEdge, material, row, wrench, ..g });
        }
    }
    // The edges replace the contact's own rows (the last ones before them).
    let dim = g.kind.dim();
    out.rows.remove_rows(g.row..g.row + dim);
    let edges = out.list.len() - 2 * (dim - 1)..;
    out.list[edges].iter_mut().for_each(|edge| edge.row -= dim);
}

/// Whether any constraint can be active in `model`.
pub(super) fn constrained<S: Scalar>(model: &Model<S>) -> bool {
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
/// and the velocity `v`, over `lanes` batch lanes.
#[derive(Clone, Copy)]
pub(super) struct StageInput<'a, S: Scalar> {
    pub model: &'a Model<S>,
    pub kin: &'a Kinematics<S>,
    pub q: &'a DVector<S>,
    pub v: &'a DVector<S>,
    pub lanes: usize,
    /// The contacts, where they were already found at these poses' real parts (which are all
    /// detection reads): taken instead of detecting again.
    pub detected: Option<&'a ContactBuffer>,
}

/// The equalities, friction losses, limits and contacts of every lane, in MuJoCo's order, the
/// contacts' cone as `config` and the model say, into `out`.
pub(super) fn gather<S: Scalar>(
    input: &StageInput<'_, S>,
    capacity: Option<usize>,
    config: &SolverConfig,
    out: &mut Gather<S>,
) -> Result<(), StepError> {
    let StageInput { model, kin, q, lanes, .. } = *input;
    let weights = &model.constants().weights;
    out.clear(model.nv(), lanes);
    // MuJoCo's cone as the model says under compatibility; phyz's presets solve the elliptic one.
    let pyramidal = config.mujoco_compat && model.contact.cone == Cone::Pyramidal;
    if model.enabled.equality {
        equalities(input, out);
    }
    if model.enabled.frictionloss {
        friction_losses(model, kin, weights, out);
    }
    if model.enabled.limit {
        limits(model, (q, kin), weights, out)?;
    }
    if model.enabled.contact && model.bodies().iter().any(|b| !b.geoms.is_empty()) {
        // Detection reads each lane's poses (real parts); its contacts come back in slots.
        let mut detection = std::mem::take(&mut out.detection);
        let detected = match input.detected {
            Some(found) => {
                detection.buffer.clone_from(found);
                Ok(())
            }
            None => detection.detect(model, kin, lanes, capacity),
        };
        if let Err(error) = detected {
            out.detection = detection;
            return Err(error);
        }
        for slot in detection.buffer.slots() {
            match contact_constraint(input, &slot, out) {
                Some(contact) if pyramidal => push_pyramid(out, contact),
                Some(contact) => out.list.push(contact),
                None => {}
            }
        }
        out.detection = detection;
    }
    Ok(())
}

impl Detection {
    /// The contacts of every lane at the poses `kin` holds, laid out in at most `capacity` slots.
    fn detect<S: Scalar>(
        &mut self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        lanes: usize,
        capacity: Option<usize>,
    ) -> Result<(), StepError> {
        self.found.resize_with(lanes, Vec::new);
        // Every lane's poses are read: in one transfer where they live on a device.
        let poses = (0..model.bodies().len()).map(|b| kin.body_pose(model, b));
        S::prefetch(poses.flat_map(|p| (0..9).map(move |i| p.rot[i]).chain((0..3).map(move |i| p.pos[i]))));
        for (lane, contacts) in self.found.iter_mut().enumerate() {
            self.poses.clear();
            self.poses.extend((0..model.bodies().len()).map(|b| {
                let p = kin.body_pose(model, b);
                Pose::new(p.rot.map(|x| x.lane(lane)), p.pos.map(|x| x.lane(lane)))
            }));
            self.detector
                .detect_lane(model, lane, &self.poses, contacts)
                .map_err(|e| StepError::Unsupported { what: e.to_string() })?;
        }
        self.buffer.fill(&self.found[..lanes], capacity)?;
        Ok(())
    }
}

//! One constraint's physics: what a contact or limit asks of the solve.

use super::config::{Onset, SolverConfig};
use crate::Scalar;
use crate::model::material::{Material, SolRef, smoothstep};

/// The impedance an impacting contact is driven to: nearly rigid, so the rebound is the
/// restitution's and not the soft model's, but not exactly rigid, so a flat landing (a rank-
/// deficient manifold) stays conditioned.
pub const IMPACT_IMPEDANCE: f64 = 0.999;

/// MuJoCo's smallest friction coefficient (`mjMINMU`): a contact's torsional and rolling
/// friction, and every coefficient of a MuJoCo-compatible cone, are held at least this, so
/// that the regularizer `R_j = R_1 μ²/f_j²` of a spin or roll row stays finite.
pub const MIN_FRICTION: f64 = 1e-5;

/// The shape of a constraint in the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstraintKind {
    /// A contact frame `[n, t1, t2]` with Coulomb friction (condim 3).
    Contact,
    /// A contact with torsional friction too (condim 4): `[n, t1, t2, spin]`, the last row the
    /// relative angular velocity about the normal.
    Torsional,
    /// A contact with torsional and rolling friction (condim 6): `[n, t1, t2, spin, roll1,
    /// roll2]`, the last two the relative angular velocity about the tangents.
    Rolling,
    /// A frictionless contact: one normal row (condim 1).
    Frictionless,
    /// A joint or tendon limit: one unilateral row.
    Limit,
    /// One edge `n ± f_k r_k` of MuJoCo's pyramidal friction cone (`r_k` a tangent, spin or
    /// roll row, `f_k` its friction coefficient): one unilateral row at its
    /// contact's depth.
    PyramidEdge,
    /// A degree of freedom's dry friction (MuJoCo's `frictionloss`): one row whose impulse is
    /// bounded by the friction times the step, both ways.
    FrictionLoss,
    /// An equality constraint's row: bilateral, its `depth` the violation with the sign
    /// reversed.
    Equality,
}

impl ConstraintKind {
    /// Whether the constraint is a collision (or a limit), with impacts and restitution in
    /// phyz's presets.
    pub const fn collides(self) -> bool {
        !matches!(self, ConstraintKind::FrictionLoss | ConstraintKind::Equality)
    }

    /// Whether the constraint is a contact with a friction cone over its rows after the first.
    pub const fn is_cone(self) -> bool {
        matches!(self, ConstraintKind::Contact | ConstraintKind::Torsional | ConstraintKind::Rolling)
    }

    /// Whether a constraint of this kind holds its sliding friction at [`MIN_FRICTION`] at
    /// least: MuJoCo holds every coefficient there (`mujoco_compat`, cones and pyramid edges);
    /// phyz's presets keep a frictionless condim-3 contact a normal row, but a contact resisting
    /// spin or roll needs its cone even without sliding friction.
    pub const fn floors_friction(self, mujoco_compat: bool) -> bool {
        (mujoco_compat && (self.is_cone() || matches!(self, ConstraintKind::PyramidEdge)))
            || matches!(self, ConstraintKind::Torsional | ConstraintKind::Rolling)
    }

    /// Rows the constraint occupies.
    pub const fn dim(self) -> usize {
        match self {
            ConstraintKind::Contact => 3,
            ConstraintKind::Torsional => 4,
            ConstraintKind::Rolling => 6,
            ConstraintKind::Frictionless
            | ConstraintKind::Limit
            | ConstraintKind::PyramidEdge
            | ConstraintKind::FrictionLoss
            | ConstraintKind::Equality => 1,
        }
    }
}

/// What one constraint contributes to the problem, in physical terms, in the step's scalar: a
/// row built from dual-number inputs (depth, velocity, material, timestep) carries their
/// derivatives in its values, so nothing else tracks how the row moves with them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactRow<S = f64> {
    pub kind: ConstraintKind,
    /// Friction coefficient (ignored without friction rows); a friction loss's impulse bound.
    pub mu: S,
    /// The torsional and rolling friction coefficients (lengths: a moment per unit normal
    /// force), read by the rows a `Torsional` or `Rolling` contact has beyond its tangents.
    pub twist: [S; 2],
    /// Target normal velocity after the step: the solref reference response (penetration
    /// recovery) and restitution's rebound.
    pub bias: S,
    /// Impedance `d` at this depth (an equality row's: at its equality's violation norm).
    pub impedance: S,
    /// How much of an impact this is, in `[0, 1]` (the restitution ramp alone).
    pub impact: S,
    /// The fraction of the pre-step tangential velocity the friction rows target: zero (stiction)
    /// in phyz's presets, MuJoCo's damped reference `1 − dt·B` under compatibility.
    pub friction_reference: S,
    /// The inertia scale the regularizer multiplies (MuJoCo's `diagApprox`: the constraint's
    /// inverse weight at the reference pose); `None` uses the problem's own `A_nn`.
    pub inverse_weight: Option<S>,
    /// MuJoCo's `impratio`: under compatibility a contact's friction regularizer is its normal
    /// one divided by this (1 unless the model says otherwise).
    pub impratio: S,
}

impl<S: Scalar> ContactRow<S> {
    /// A rigid, frictionless, unbiased row of `kind` (hand-built problems start here).
    pub fn rigid(kind: ConstraintKind) -> Self {
        let zero = S::zero();
        ContactRow {
            kind,
            mu: zero,
            twist: [zero; 2],
            bias: zero,
            impedance: S::one(),
            impact: zero,
            friction_reference: zero,
            inverse_weight: None,
            impratio: S::one(),
        }
    }

    /// A row from a (pair-combined) material at signed `depth`, with the pre-step normal velocity
    /// `v_n` (positive separating), for a step `dt`.
    ///
    /// The bias is MuJoCo's reference dynamics in impulse form: the post-step normal velocity
    /// target `v_n + dt·a_ref` with `a_ref = −B v_n + K d·depth⁺`, so a body under a steady load
    /// settles at MuJoCo's depth for the same solref/solimp in every preset; under
    /// [`Onset::Touch`] a new contact's impedance grows from its touch. An impact (approach
    /// faster than the restitution threshold) blends towards a rigid rebound at `−e v_n`.
    pub fn from_material(
        kind: ConstraintKind,
        material: &Material<S>,
        depth: S,
        v_n: S,
        dt: S,
        config: &SolverConfig,
    ) -> Self {
        if kind == ConstraintKind::Equality {
            return Self::bilateral(material, depth, depth.abs(), v_n, dt);
        }
        let zero = S::zero();
        // MuJoCo measures the violation from the margin surface and has no taper; phyz measures
        // it from the surface and tapers the impedance across the margin band.
        let (violation, d) = if config.mujoco_compat {
            let violation = depth + material.margin;
            (violation, material.solimp.impedance(violation.max(zero)))
        } else {
            (depth, material.impedance_at(depth))
        };
        let (k, b) = material.solref.stiffness_damping(material.solimp.dmax, dt);
        let approach = (-v_n).max(zero);
        let pressed = violation.max(zero);
        // From the touch, a contact (or limit) pressed for part of its first step acts for that
        // part: the travel since it began to act (at the margin surface, where phyz's taper
        // starts too) over the step's, `travel / (approach · dt)`, scales its impedance (held at
        // 1 once the contact is as deep as a step's approach). A friction loss has no touch.
        let d = match config.onset {
            Onset::Touch if kind.collides() => {
                let travel = (depth + material.margin).max(zero);
                d * (travel / (approach * dt).max(S::from_f64(f64::MIN_POSITIVE))).min(S::one())
            }
            _ => d,
        };
        let reference = v_n + dt * (-b * v_n + k * d * pressed);
        let threshold = S::from_f64(config.restitution_threshold);
        // MuJoCo has no impacts: its soft model is the whole response under compatibility; and
        // a friction loss does not collide.
        let impact = if config.mujoco_compat || !kind.collides() {
            zero
        } else if config.restitution_threshold > 0.0 {
            smoothstep((approach - threshold) / threshold)
        } else {
            S::one()
        };
        let e = if kind == ConstraintKind::Limit { zero } else { material.restitution };
        let restitution = e * impact;
        let floor = S::from_f64(MIN_FRICTION);
        ContactRow {
            kind,
            mu: if kind.floors_friction(config.mujoco_compat) {
                material.friction.max(floor)
            } else {
                material.friction
            },
            twist: [material.torsion.max(floor), material.rolling.max(floor)],
            bias: (S::one() - impact) * reference + restitution * approach,
            impedance: d,
            impact,
            friction_reference: if config.mujoco_compat {
                S::one() - dt * friction_damping(material, b, dt)
            } else {
                zero
            },
            inverse_weight: None,
            impratio: S::one(),
        }
    }

    /// A row of an equality constraint, MuJoCo's in every preset: bilateral, pulled back from
    /// either side by the reference dynamics `a_ref = −B v + K d·depth`, with the impedance `d`
    /// read at `norm`, the norm of the equality's whole violation (its one, three or six rows:
    /// a connect's or weld's rows share one impedance).
    pub fn bilateral(material: &Material<S>, depth: S, norm: S, v: S, dt: S) -> Self {
        let d = material.solimp.impedance(norm);
        let (k, b) = material.solref.stiffness_damping(material.solimp.dmax, dt);
        ContactRow {
            bias: v + dt * (-b * v + k * d * depth),
            impedance: d,
            ..ContactRow::rigid(ConstraintKind::Equality)
        }
    }

    /// The impedance the regularizer uses: `d` at rest, [`IMPACT_IMPEDANCE`] in an impact.
    pub fn effective_impedance(&self) -> S {
        let gap = (S::from_f64(IMPACT_IMPEDANCE) - self.impedance).max(S::zero());
        self.impedance + self.impact * gap
    }
}

/// The damping `B` of an elliptic cone's friction rows: `solreffriction`'s where it is set (not
/// `[0, 0]`, and not of mixed sign, which MuJoCo replaces by `[0, 0]`), else the normal row's `b`.
fn friction_damping<S: Scalar>(material: &Material<S>, b: S, dt: S) -> S {
    let [f0, f1] = material.solreffriction;
    let (zero, positive) = (S::zero(), [f0.greater(S::zero()), f1.greater(S::zero())]);
    let mixed = (positive[0] & !positive[1]) | (!positive[0] & positive[1]);
    let set = (f0.abs().greater(zero) | f1.abs().greater(zero)) & !mixed;
    let (_, own) = SolRef(material.solreffriction).stiffness_damping(material.solimp.dmax, dt);
    S::select(set, own, b)
}

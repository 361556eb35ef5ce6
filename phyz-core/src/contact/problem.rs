//! The assembled problem the solver sees:
//! `minimize ½ fᵀ(A + R)f + fᵀ(b − target)` over impulses `f`, each contact's in its friction cone.

use nalgebra::{DMatrix, DVector};

use super::config::SolverConfig;
use super::row::{ConstraintKind, ContactRow};
use crate::Scalar;

/// The structure of one constraint: its shape and the moving bodies it acts between (`None`
/// for the world), which `Coupling::PerBody` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub kind: ConstraintKind,
    pub bodies: [Option<usize>; 2],
}

impl Constraint {
    pub fn new(kind: ConstraintKind) -> Self {
        Constraint { kind, bodies: [None, None] }
    }

    /// True when both constraints act on a common moving body.
    pub(crate) fn shares_body(&self, other: &Constraint) -> bool {
        self.bodies.iter().flatten().any(|b| other.bodies.contains(&Some(*b)))
    }
}

/// The convex contact problem, in any scalar (its data can carry derivatives or batch lanes;
/// the solve reads real parts).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactProblem<S> {
    pub constraints: Vec<Constraint>,
    /// `A = J M⁻¹ Jᵀ`, one row and column per constraint row.
    pub delassus: DMatrix<S>,
    /// `b = J v_free`: the constraint-space velocity without impulses.
    pub free_velocity: DVector<S>,
    /// The velocity each row should reach: the separating target on normal and limit rows,
    /// zero on friction rows.
    pub target: DVector<S>,
    /// The diagonal regularizer `R`.
    pub regularizer: DVector<S>,
    /// Friction coefficient per constraint.
    pub mu: Vec<S>,
}

impl<S: Scalar> ContactProblem<S> {
    /// Number of constraint rows.
    pub fn rows(&self) -> usize {
        self.free_velocity.len()
    }

    /// First row of each constraint.
    pub fn offsets(&self) -> Vec<usize> {
        self.constraints
            .iter()
            .scan(0, |at, c| {
                let start = *at;
                *at += c.kind.dim();
                Some(start)
            })
            .collect()
    }

    /// The real parts of batch lane `lane`.
    pub fn lane(&self, lane: usize) -> ContactProblem<f64> {
        let re = |x: &S| x.lane(lane);
        ContactProblem {
            constraints: self.constraints.clone(),
            delassus: self.delassus.map(|x| re(&x)),
            free_velocity: self.free_velocity.map(|x| re(&x)),
            target: self.target.map(|x| re(&x)),
            regularizer: self.regularizer.map(|x| re(&x)),
            mu: self.mu.iter().map(re).collect(),
        }
    }
}

/// How the regularizer and targets of a row depend on its depth, for the depth sensitivity.
#[derive(Clone, Debug, PartialEq)]
pub struct DepthDerivatives {
    /// `dR/ddepth` and `d(target)/ddepth`, per problem row.
    pub regularizer: DVector<f64>,
    pub target: DVector<f64>,
}

impl ContactProblem<f64> {
    /// Assembles the problem from `A`, `b` and the constraints' rows under `config`, with the
    /// regularizer `R = (1 − d)/d · A_nn` on normal and limit rows and the floor
    /// `config.regularization · A_ii` alone on friction rows — so that stiction is exact to that
    /// relative floor — unless `config.mujoco_compat` puts the normal row's `R` on them too, as
    /// MuJoCo does. Also returns how `R` and the targets move with each constraint's depth.
    pub fn from_rows(
        delassus: DMatrix<f64>,
        free_velocity: DVector<f64>,
        rows: &[ContactRow],
        bodies: Option<&[[Option<usize>; 2]]>,
        config: &SolverConfig,
    ) -> (Self, DepthDerivatives) {
        let m = free_velocity.len();
        let mut regularizer = DVector::zeros(m);
        let mut target = DVector::zeros(m);
        let mut dr = DVector::zeros(m);
        let mut dtarget = DVector::zeros(m);
        let mut at = 0;
        for row in rows {
            let d_raw = row.effective_impedance();
            let d = d_raw.clamp(1e-6, 1.0);
            let a_nn = delassus[(at, at)];
            let live = (1.0 - d) / d * a_nn;
            let floor = config.regularization * a_nn;
            let normal = live.max(floor);
            // dR/ddepth: only the resting share of the impedance moves with depth, and not where
            // a clamp or the floor binds.
            let moving = d_raw > 1e-6 && d_raw < 1.0 && live > floor;
            let dnormal = if moving { -a_nn * (1.0 - row.impact) * row.dimpedance_ddepth / (d * d) } else { 0.0 };
            regularizer[at] = normal;
            target[at] = row.bias;
            dr[at] = dnormal;
            dtarget[at] = row.dbias_ddepth;
            if row.kind == ConstraintKind::Contact {
                for k in 1..3 {
                    let compat = config.mujoco_compat;
                    regularizer[at + k] =
                        if compat { normal } else { config.regularization * delassus[(at + k, at + k)] };
                    dr[at + k] = if compat { dnormal } else { 0.0 };
                }
            }
            at += row.kind.dim();
        }
        let constraints = rows
            .iter()
            .enumerate()
            .map(|(i, r)| Constraint {
                kind: r.kind,
                bodies: bodies.and_then(|b| b.get(i).copied()).unwrap_or([None, None]),
            })
            .collect();
        let problem = ContactProblem {
            constraints,
            delassus,
            free_velocity,
            target,
            regularizer,
            mu: rows.iter().map(|r| r.mu).collect(),
        };
        (problem, DepthDerivatives { regularizer: dr, target: dtarget })
    }
}

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

    /// Each constraint with its first row and its friction coefficient.
    pub fn each(&self) -> impl Iterator<Item = (&Constraint, usize, S)> + '_ {
        self.constraints.iter().zip(self.offsets()).zip(&self.mu).map(|((c, at), &mu)| (c, at, mu))
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

/// How far the live state has moved from the one a row was built at: `(depth − row.depth,
/// v_n − v_n at the row)`, zero in real parts, carrying the state's tangents.
pub type RowDeviation<S> = (S, S);

impl<S: Scalar> ContactProblem<S> {
    /// Assembles the problem from `A`, `b` and the constraints' rows under `config`, with the
    /// regularizer `R = (1 − d)/d · w` on normal and limit rows (`w` the row's inverse weight,
    /// MuJoCo's `diagApprox`, or else `A_nn`) and the floor `config.regularization · w` alone on
    /// friction rows — so that stiction is exact to that relative floor, and a friction direction
    /// nothing can move (a planar model's out-of-plane tangent) still has a definite block — unless `config.mujoco_compat` puts the normal row's `R` on them too, as
    /// MuJoCo does. Also returns how `R` and the targets move with each constraint's depth.
    ///
    /// Rows are built in `f64` at the real state; `deviations` (one per row) carry the live
    /// depth and normal velocity's tangents into the targets and the regularizer to first order,
    /// which is exact for dual numbers.
    pub fn from_rows(
        delassus: DMatrix<S>,
        free_velocity: DVector<S>,
        rows: &[ContactRow],
        deviations: Option<&[RowDeviation<S>]>,
        bodies: Option<&[[Option<usize>; 2]]>,
        config: &SolverConfig,
    ) -> (Self, DepthDerivatives) {
        let m = free_velocity.len();
        let c = S::from_f64;
        let mut regularizer = DVector::zeros(m);
        let mut target = DVector::zeros(m);
        let mut dr = DVector::zeros(m);
        let mut dtarget = DVector::zeros(m);
        let mut at = 0;
        for (i, row) in rows.iter().enumerate() {
            let (ddepth, dvn) = deviations.map_or((S::zero(), S::zero()), |d| d[i]);
            let d_raw = row.effective_impedance();
            let d = d_raw.clamp(1e-6, 1.0);
            let moving = d_raw > 1e-6 && d_raw < 1.0;
            let impact_gap = (crate::contact::IMPACT_IMPEDANCE - row.impedance).max(0.0);
            let slope_depth = if moving { (1.0 - row.impact) * row.dimpedance_ddepth } else { 0.0 };
            let slope_vn = if moving { impact_gap * row.dimpact_dvn } else { 0.0 };
            let d_live = c(d) + ddepth * c(slope_depth) + dvn * c(slope_vn);
            let a_nn = row.inverse_weight.map_or(delassus[(at, at)], c);
            let live = (S::one() - d_live) / d_live * a_nn;
            let floor = a_nn * c(config.regularization);
            let live_binds = live.greater(floor);
            let normal = S::select(live_binds, live, floor);
            let a_nn_re = a_nn.lane(0);
            let binds_re = (1.0 - d) / d * a_nn_re > config.regularization * a_nn_re;
            let dnormal = if binds_re { -a_nn_re * slope_depth / (d * d) } else { 0.0 };
            regularizer[at] = normal;
            target[at] = c(row.bias) + ddepth * c(row.dbias_ddepth) + dvn * c(row.dbias_dvn);
            dr[at] = dnormal;
            dtarget[at] = row.dbias_ddepth;
            if row.kind == ConstraintKind::Contact {
                for k in 1..3 {
                    let compat = config.mujoco_compat;
                    regularizer[at + k] = if compat { normal } else { floor };
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
            mu: rows.iter().map(|r| c(r.mu)).collect(),
        };
        (problem, DepthDerivatives { regularizer: dr, target: dtarget })
    }
}

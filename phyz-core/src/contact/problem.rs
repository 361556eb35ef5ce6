//! The assembled problem the solver sees:
//! `minimize ½ fᵀ(A + R)f + fᵀ(b − target)` over impulses `f`, each contact's in its friction cone.

use nalgebra::{DMatrix, DVector};

use super::config::SolverConfig;
use super::row::{ConstraintKind, ContactRow};
use crate::Scalar;
use crate::scalar::Mask;

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
pub struct ContactProblem<S: Scalar> {
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
    /// Per constraint, the batch lanes it exists in (a masked slot of a contact buffer is absent
    /// from the lanes that found nothing there): each lane solves its own constraints only.
    pub present: Vec<S::Mask>,
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

    /// The real parts of batch lane `lane`, the constraints absent from it left out, with the
    /// rows of `self` the lane's rows come from.
    pub fn lane(&self, lane: usize) -> (ContactProblem<f64>, Vec<usize>) {
        let re = |x: &S| x.lane(lane);
        let kept: Vec<usize> = (0..self.constraints.len()).filter(|&c| self.present[c].lane(lane)).collect();
        let offsets = self.offsets();
        let rows: Vec<usize> =
            kept.iter().flat_map(|&c| offsets[c]..offsets[c] + self.constraints[c].kind.dim()).collect();
        let problem = ContactProblem {
            constraints: kept.iter().map(|&c| self.constraints[c]).collect(),
            delassus: DMatrix::from_fn(rows.len(), rows.len(), |i, j| re(&self.delassus[(rows[i], rows[j])])),
            free_velocity: DVector::from_fn(rows.len(), |i, _| re(&self.free_velocity[rows[i]])),
            target: DVector::from_fn(rows.len(), |i, _| re(&self.target[rows[i]])),
            regularizer: DVector::from_fn(rows.len(), |i, _| re(&self.regularizer[rows[i]])),
            mu: kept.iter().map(|&c| re(&self.mu[c])).collect(),
            present: vec![true; kept.len()],
        };
        (problem, rows)
    }
}

/// How the regularizer and targets of a row depend on its depth, for the depth sensitivity.
#[derive(Clone, Debug, PartialEq)]
pub struct DepthDerivatives {
    /// `dR/ddepth` and `d(target)/ddepth`, per problem row.
    pub regularizer: DVector<f64>,
    pub target: DVector<f64>,
}

/// How far the live values have moved from those a row was built from: zero in real parts,
/// carrying the tangents of the state and the model parameters into the problem to first order
/// (exact for dual numbers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowDeviation<S> {
    /// Of the depth and the pre-step normal velocity.
    pub depth: S,
    pub normal_velocity: S,
    /// Of the combined friction coefficient and restitution.
    pub friction: S,
    pub restitution: S,
    /// Of the inverse weight the regularizer is scaled by.
    pub inverse_weight: S,
}

impl<S: Scalar> RowDeviation<S> {
    /// No deviation: the row's values are the live ones.
    pub fn zero() -> Self {
        RowDeviation {
            depth: S::zero(),
            normal_velocity: S::zero(),
            friction: S::zero(),
            restitution: S::zero(),
            inverse_weight: S::zero(),
        }
    }
}

impl<S: Scalar> ContactProblem<S> {
    /// Assembles the problem from `A`, `b` and the constraints' rows under `config`, with the
    /// regularizer `R = (1 − d)/d · w` on normal and limit rows (`w` the row's inverse weight,
    /// MuJoCo's `diagApprox`, or else `A_nn`) and the floor `config.regularization · w` alone on
    /// friction rows — so that stiction is exact to that relative floor, and a friction direction
    /// nothing can move (a planar model's out-of-plane tangent) still has a definite block — unless `config.mujoco_compat` puts the normal row's `R` on them too, as
    /// MuJoCo does. Also returns how `R` and the targets move with each constraint's depth.
    ///
    /// Rows are built in `f64` at the real state, one per batch lane (`rows[c][lane]`; a single
    /// row, or a bare [`ContactRow`], serves every lane); `deviations` (one per constraint) carry the
    /// tangents of the live depth, normal velocity, friction, restitution and inverse weight into
    /// the targets, the regularizer and μ to first order, which is exact for dual numbers. Every constraint is present in every lane. The depth derivatives are
    /// lane 0's.
    pub fn from_rows<R: AsRef<[ContactRow]>>(
        delassus: DMatrix<S>,
        free_velocity: DVector<S>,
        rows: &[R],
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
        for (i, lanes) in rows.iter().map(AsRef::as_ref).enumerate() {
            let lift = |f: &dyn Fn(&ContactRow) -> f64| match lanes {
                [row] => c(f(row)),
                _ => S::from_lanes(&lanes.iter().map(f).collect::<Vec<_>>()),
            };
            let deviation = deviations.map_or(RowDeviation::zero(), |d| d[i]);
            let (ddepth, dvn) = (deviation.depth, deviation.normal_velocity);
            // Per lane: the impedance, and how it moves with depth and normal velocity.
            let impedance = |r: &ContactRow| r.effective_impedance().clamp(1e-6, 1.0);
            let moving = |r: &ContactRow| {
                let d = r.effective_impedance();
                d > 1e-6 && d < 1.0
            };
            let slope_depth = |r: &ContactRow| if moving(r) { (1.0 - r.impact) * r.dimpedance_ddepth } else { 0.0 };
            let slope_vn = |r: &ContactRow| {
                let impact_gap = (crate::contact::IMPACT_IMPEDANCE - r.impedance).max(0.0);
                if moving(r) { impact_gap * r.dimpact_dvn } else { 0.0 }
            };
            let d_live = lift(&impedance) + ddepth * lift(&slope_depth) + dvn * lift(&slope_vn);
            let a_nn = match lanes.iter().map(|r| r.inverse_weight).collect::<Option<Vec<f64>>>() {
                Some(weights) => S::from_lanes(&weights) + deviation.inverse_weight,
                None => delassus[(at, at)],
            };
            let live = (S::one() - d_live) / d_live * a_nn;
            let floor = a_nn * c(config.regularization);
            let normal = S::select(live.greater(floor), live, floor);
            let row = &lanes[0];
            let (d, a_nn_re) = (impedance(row), a_nn.lane(0));
            let binds_re = (1.0 - d) / d * a_nn_re > config.regularization * a_nn_re;
            let dnormal = if binds_re { -a_nn_re * slope_depth(row) / (d * d) } else { 0.0 };
            regularizer[at] = normal;
            target[at] = lift(&|r| r.bias)
                + ddepth * lift(&|r| r.dbias_ddepth)
                + dvn * lift(&|r| r.dbias_dvn)
                + deviation.restitution * lift(&|r| r.dbias_drestitution);
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
                kind: r.as_ref()[0].kind,
                bodies: bodies.and_then(|b| b.get(i).copied()).unwrap_or([None, None]),
            })
            .collect();
        let problem = ContactProblem {
            constraints,
            delassus,
            free_velocity,
            target,
            regularizer,
            mu: rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let friction = deviations.map_or(S::zero(), |d| d[i].friction);
                    S::from_lanes(&r.as_ref().iter().map(|r| r.mu).collect::<Vec<_>>()) + friction
                })
                .collect(),
            present: vec![S::Mask::splat(true); rows.len()],
        };
        (problem, DepthDerivatives { regularizer: dr, target: dtarget })
    }
}

//! Tendons: fixed ones, linear combinations of joint coordinates, and spatial ones, strings
//! through sites that wrap around spheres and cylinders; with springs, dampers and limits.

use nalgebra::Vector3;

use super::{Model, Shape};
use crate::math::{Pose, WrapShape, wrap};
use crate::{Mask, Scalar};

/// A tendon (MJCF `<tendon><fixed>` or `<tendon><spatial>`) of length `L`. Its spring pulls `L`
/// into `[spring_length[0], spring_length[1]]` (a dead band, MuJoCo's two-value
/// `springlength`), its damper resists `L̇`, and each force reaches the joints through the
/// tendon's Jacobian `∂L/∂q`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tendon<S> {
    pub name: String,
    pub(crate) path: TendonPath<S>,
    pub stiffness: S,
    pub damping: S,
    /// MuJoCo 4's quadratic and cubic terms of the spring and of the damper.
    pub stiffness_poly: [S; 2],
    pub damping_poly: [S; 2],
    pub spring_length: [S; 2],
    /// Length limits, enforced by the constraint solver.
    pub range: Option<[S; 2]>,
    pub limit_margin: S,
    pub solref_limit: [S; 2],
    pub solimp_limit: [S; 5],
    /// Dry friction on the length (MuJoCo's tendon `frictionloss`), with its reference and
    /// impedance.
    pub frictionloss: S,
    pub solref_friction: [S; 2],
    pub solimp_friction: [S; 5],
    /// Bounds on the total force of the actuators pulling on the tendon (MuJoCo's
    /// `actuatorfrcrange`): outside them, each one's force is scaled by the same factor.
    pub actuator_force_range: Option<[S; 2]>,
}

/// What a tendon's length is made of.
#[derive(Clone, Debug, PartialEq)]
pub enum TendonPath<S> {
    /// `L = Σ coefs_k · q_{joints_k}` over hinge and slide joints (by index).
    Fixed { joints: Vec<usize>, coefs: Vec<S> },
    /// A string through its points in order; its length is the sum of its straight pieces and
    /// its arcs on wrapping obstacles, each divided by the divisor of the pulley before it.
    Spatial(Vec<PathPoint<S>>),
}

/// One element of a spatial tendon's path.
#[derive(Clone, Debug, PartialEq)]
pub enum PathPoint<S> {
    /// A site, as (body, index among its sites).
    Site { body: usize, site: usize },
    /// A sphere or cylinder geom (body, index among its geoms) the string wraps around when
    /// it would pass through it, on the side of the site `side` if there is one.
    Wrap { body: usize, geom: usize, side: Option<(usize, usize)> },
    /// A pulley: the branches after it count `1 / divisor` of their length.
    Pulley { divisor: S },
}

/// One piece of a spatial tendon's path at a configuration: from a point moving with one body
/// to a point moving with another, with its length (a straight piece's is the distance; an arc
/// on an obstacle, between two points of the obstacle's body, its length on the surface). Only
/// the lanes of `on` have the piece (a string wraps in some lanes and not in others).
#[derive(Clone, Copy, Debug)]
pub struct Piece<S: Scalar> {
    pub from: (usize, Vector3<S>),
    pub to: (usize, Vector3<S>),
    pub length: S,
    pub on: S::Mask,
    pub divisor: S,
}

impl<S: Scalar> Piece<S> {
    /// What the piece adds to the tendon's length: its length over the divisor, where it is on.
    pub fn contribution(&self) -> S {
        S::select(self.on, self.length, S::zero()) / self.divisor
    }
}

impl<S: Scalar> Tendon<S> {
    /// What the tendon's length is made of.
    pub fn path(&self) -> &TendonPath<S> {
        &self.path
    }

    /// How far `length` lies outside the spring's dead band (negative below it).
    pub fn stretch(&self, length: S) -> S {
        let [lo, hi] = self.spring_length;
        S::select(length.greater(hi), length - hi, S::select(length.less(lo), length - lo, S::zero()))
    }

    /// Calls `piece` with every piece of a spatial tendon's path (none for a fixed tendon),
    /// with the bodies' world poses from `pose`, as MuJoCo's `mj_tendon` walks it: site to
    /// site, or site to site around a wrapping geom (the straight piece in the lanes where the
    /// string misses it; two tangents and the arc where it wraps).
    pub fn walk(&self, model: &Model<S>, pose: impl Fn(usize) -> Pose<S>, mut piece: impl FnMut(Piece<S>)) {
        let TendonPath::Spatial(points) = &self.path else { return };
        let site = |body: usize, site: usize| pose(body).transform_point(&model.bodies()[body].sites[site].pos);
        let all = S::Mask::splat(true);
        let mut divisor = S::one();
        let mut j = 0;
        while j + 1 < points.len() {
            match (&points[j], &points[j + 1], points.get(j + 2)) {
                (&PathPoint::Pulley { divisor: d }, ..) => divisor = d,
                (_, PathPoint::Pulley { .. }, _) => {}
                (&PathPoint::Site { body: b0, site: s0 }, &PathPoint::Site { body: b1, site: s1 }, _) => {
                    let (from, to) = ((b0, site(b0, s0)), (b1, site(b1, s1)));
                    piece(Piece { from, to, length: crate::math::norm(&(to.1 - from.1)), on: all, divisor });
                }
                (
                    &PathPoint::Site { body: b0, site: s0 },
                    &PathPoint::Wrap { body, geom, side },
                    Some(&PathPoint::Site { body: b1, site: s1 }),
                ) => {
                    let (x0, x1) = (site(b0, s0), site(b1, s1));
                    let g = &model.bodies()[body].geoms[geom];
                    let frame = pose(body).compose(&Pose::from_quat(&g.quat, g.pos));
                    let (radius, shape) = match g.shape {
                        Shape::Cylinder { radius, .. } => (radius, WrapShape::Cylinder),
                        Shape::Sphere { radius } => (radius, WrapShape::Sphere),
                        // The model's checks allow only spheres and cylinders here.
                        _ => (S::zero(), WrapShape::Sphere),
                    };
                    let side = side.map(|(b, k)| site(b, k));
                    let w = wrap([&x0, &x1], &frame, radius, shape, side.as_ref());
                    let [t0, t1] = w.points;
                    let distance = |a: &Vector3<S>, b: &Vector3<S>| crate::math::norm(&(b - a));
                    let on = w.wraps;
                    piece(Piece { from: (b0, x0), to: (b1, x1), length: distance(&x0, &x1), on: !on, divisor });
                    piece(Piece { from: (b0, x0), to: (body, t0), length: distance(&x0, &t0), on, divisor });
                    piece(Piece { from: (body, t0), to: (body, t1), length: w.arc, on, divisor });
                    piece(Piece { from: (body, t1), to: (b1, x1), length: distance(&t1, &x1), on, divisor });
                    j += 1;
                }
                // The model's checks leave no other sequence.
                _ => {}
            }
            j += 1;
        }
    }

    /// The tendon's length, with the bodies' world poses from `pose` and joint positions `qpos`.
    pub fn length(&self, model: &Model<S>, qpos: &nalgebra::DVector<S>, pose: impl Fn(usize) -> Pose<S>) -> S {
        match &self.path {
            TendonPath::Fixed { joints, coefs } => {
                joints.iter().zip(coefs).fold(S::zero(), |sum, (&j, &c)| sum + c * qpos[model.joints()[j].qpos_adr()])
            }
            TendonPath::Spatial(_) => {
                let mut length = S::zero();
                self.walk(model, pose, |p| length += p.contribution());
                length
            }
        }
    }

    /// The same path in its structure (joints, sites, geoms, pulleys) as `other`'s.
    pub(crate) fn same_path<T: Scalar>(&self, other: &Tendon<T>) -> bool {
        match (&self.path, &other.path) {
            (TendonPath::Fixed { joints: a, .. }, TendonPath::Fixed { joints: b, .. }) => a == b,
            (TendonPath::Spatial(a), TendonPath::Spatial(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|pair| match pair {
                        (PathPoint::Pulley { .. }, PathPoint::Pulley { .. }) => true,
                        (PathPoint::Site { body, site }, PathPoint::Site { body: b, site: s }) => {
                            (body, site) == (b, s)
                        }
                        (PathPoint::Wrap { body, geom, side }, PathPoint::Wrap { body: b, geom: g, side: s }) => {
                            (body, geom, side) == (b, g, s)
                        }
                        _ => false,
                    })
            }
            _ => false,
        }
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Tendon<T> {
        Tendon {
            name: self.name.clone(),
            path: match &self.path {
                TendonPath::Fixed { joints, coefs } => {
                    TendonPath::Fixed { joints: joints.clone(), coefs: coefs.iter().map(|&c| f(c)).collect() }
                }
                TendonPath::Spatial(points) => TendonPath::Spatial(
                    points
                        .iter()
                        .map(|p| match *p {
                            PathPoint::Site { body, site } => PathPoint::Site { body, site },
                            PathPoint::Wrap { body, geom, side } => PathPoint::Wrap { body, geom, side },
                            PathPoint::Pulley { divisor } => PathPoint::Pulley { divisor: f(divisor) },
                        })
                        .collect(),
                ),
            },
            stiffness: f(self.stiffness),
            damping: f(self.damping),
            stiffness_poly: self.stiffness_poly.map(&mut *f),
            damping_poly: self.damping_poly.map(&mut *f),
            spring_length: self.spring_length.map(&mut *f),
            range: self.range.map(|r| r.map(&mut *f)),
            limit_margin: f(self.limit_margin),
            solref_limit: self.solref_limit.map(&mut *f),
            solimp_limit: self.solimp_limit.map(&mut *f),
            frictionloss: f(self.frictionloss),
            solref_friction: self.solref_friction.map(&mut *f),
            solimp_friction: self.solimp_friction.map(&mut *f),
            actuator_force_range: self.actuator_force_range.map(|r| r.map(&mut *f)),
        }
    }
}

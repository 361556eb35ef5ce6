//! Mass properties of geoms and of the bodies they make up, with MuJoCo's formulas.

use std::f64::consts::PI;

use nalgebra::{Matrix3, Vector3};

use crate::math::Quat;
use crate::model::Shape;

/// A geom's volume and principal moments of inertia per unit mass, in its own frame; `None`
/// for shapes without volume (planes).
fn unit_inertia(shape: &Shape<f64>) -> Option<(f64, Vector3<f64>)> {
    match *shape {
        Shape::Plane => None,
        Shape::Mesh { ref hull } => Some((hull.volume, hull.inertia_per_mass)),
        Shape::Sphere { radius: r } => Some((4.0 / 3.0 * PI * r.powi(3), Vector3::repeat(0.4 * r * r))),
        Shape::Capsule { radius: r, half_length: hl } => {
            let h = 2.0 * hl;
            let sphere_volume = 4.0 / 3.0 * PI * r.powi(3);
            let cylinder_volume = PI * r * r * h;
            let volume = sphere_volume + cylinder_volume;
            // Two hemispheres (one sphere's mass) shifted from the middle by the parallel axis
            // theorem, plus the cylinder.
            let (ms, mc) = (sphere_volume / volume, cylinder_volume / volume);
            let across = mc * (3.0 * r * r + h * h) / 12.0 + ms * (0.4 * r * r + h * (3.0 * r + 2.0 * h) / 8.0);
            let along = mc * r * r / 2.0 + ms * 0.4 * r * r;
            Some((volume, Vector3::new(across, across, along)))
        }
        Shape::Cylinder { radius: r, half_length: hl } => {
            let h = 2.0 * hl;
            let across = (3.0 * r * r + h * h) / 12.0;
            Some((PI * r * r * h, Vector3::new(across, across, r * r / 2.0)))
        }
        Shape::Box { half_extents: e } => Some(box_inertia(&e)),
        // As MuJoCo: a box as wide as the field, as tall as a quarter of its top and half its
        // base.
        Shape::HeightField { ref field } => {
            let [x, y, top, base] = field.size;
            Some(box_inertia(&Vector3::new(x, y, 0.25 * top + 0.5 * base)))
        }
        Shape::Ellipsoid { radii: r } => {
            let (a, b, c) = (r.x * r.x, r.y * r.y, r.z * r.z);
            Some((4.0 / 3.0 * PI * r.x * r.y * r.z, Vector3::new(b + c, a + c, a + b) / 5.0))
        }
    }
}

/// A box's volume and principal moments per unit mass, from its half-extents `e`.
fn box_inertia(e: &Vector3<f64>) -> (f64, Vector3<f64>) {
    let (a, b, c) = (e.x * e.x, e.y * e.y, e.z * e.z);
    (8.0 * e.x * e.y * e.z, Vector3::new(b + c, a + c, a + b) / 3.0)
}

/// Mass and principal inertia of a geom from its `mass` (if given) or `density`.
pub(super) fn geom_mass(shape: &Shape<f64>, density: f64, mass: Option<f64>) -> Option<(f64, Vector3<f64>)> {
    let (volume, per_mass) = unit_inertia(shape)?;
    let m = mass.unwrap_or(density * volume);
    Some((m, per_mass * m))
}

/// A part of a body: mass, principal moments, and the pose of the principal frame.
pub(super) struct Part {
    pub(super) mass: f64,
    pub(super) inertia: Vector3<f64>,
    pub(super) pos: Vector3<f64>,
    pub(super) quat: Quat<f64>,
}

impl Part {
    /// The part placed in its holder's frame by `placement` (the `<frame>`s around it).
    pub(super) fn placed(self, placement: &super::frame::Placement) -> Part {
        let (pos, quat) = placement.place(self.pos, self.quat);
        Part { pos, quat, ..self }
    }
}

/// Total mass, centre of mass, and inertia about it (body axes) of a set of parts.
pub(super) fn combine(parts: &[Part]) -> (f64, Vector3<f64>, Matrix3<f64>) {
    let mass: f64 = parts.iter().map(|p| p.mass).sum();
    if mass <= 0.0 {
        return (0.0, Vector3::zeros(), Matrix3::zeros());
    }
    let com = parts.iter().fold(Vector3::zeros(), |c, p| c + p.pos * p.mass) / mass;
    let inertia = parts.iter().fold(Matrix3::zeros(), |acc, p| {
        let r = p.quat.to_rotation_matrix();
        let d = p.pos - com;
        acc + r * Matrix3::from_diagonal(&p.inertia) * r.transpose()
            + (Matrix3::identity() * d.dot(&d) - d * d.transpose()) * p.mass
    });
    (mass, com, inertia)
}

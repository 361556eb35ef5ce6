//! Sphere against cylinder, deciding as MuJoCo does (`mjc_SphereCylinder`): by where the
//! sphere's centre lies in the cylinder's frame, beside the side (a sphere of the cylinder's
//! radius on the axis, sliding along it), over a cap (the cap's plane), or past the rim (the
//! rim point nearest the centre); a centre inside the cylinder leaves by the nearer of the
//! side and the cap; a centre on the axis leaves as coincident spheres do ([`sphere_pair`]).

use nalgebra::Vector3;

use super::anchor::Anchor;
use super::detect::{Found, Placed, sphere_pair};

/// The contact of a sphere of `radius` and a cylinder of `cylinder_radius` and half-length
/// `half_length` (its normal from the sphere to the cylinder, or from a cap to the sphere).
pub(super) fn contact(
    sphere: &Placed,
    radius: f64,
    cylinder: &Placed,
    cylinder_radius: f64,
    half_length: f64,
) -> Found {
    let axis = cylinder.world.rot * Vector3::z();
    let axis_on_body = cylinder.local.rot * Vector3::z();
    let offset = sphere.world.pos - cylinder.world.pos;
    let along = axis.dot(&offset);
    let across = offset - axis * along;
    let across_squared = across.norm_squared();
    let mut side = along.abs() < half_length;
    let mut cap = across_squared < cylinder_radius * cylinder_radius;
    if side && cap {
        // Inside: out through the nearer surface.
        let (to_cap, to_side) = (half_length - along.abs(), cylinder_radius - across_squared.sqrt());
        if to_cap < to_side {
            side = false;
        } else {
            cap = false;
        }
    }
    let sphere_centre = (sphere.local.pos, sphere.world.pos);
    if side {
        // The axis point beside the centre, as a sphere of the cylinder's radius.
        let on_axis = (cylinder.local.pos + axis_on_body * along, cylinder.world.pos + axis * along);
        let centres = ([sphere_centre.0, on_axis.0], [None, Some(axis_on_body)]);
        return sphere_pair([sphere, cylinder], centres, [sphere_centre.1, on_axis.1], [radius, cylinder_radius], 0);
    }
    let sign = if along > 0.0 { 1.0 } else { -1.0 };
    if cap {
        let normal = axis * sign;
        let origin = cylinder.world.pos + normal * half_length;
        let depth = radius - (sphere.world.pos - origin).dot(&normal);
        let anchor = Anchor::Plane {
            a: cylinder.body,
            normal: axis_on_body * sign,
            origin: cylinder.local.pos + axis_on_body * (sign * half_length),
            b: sphere.body,
            center: sphere.local.pos,
            radius,
        };
        return Found { feature: 0, anchor, depth, normal, tangent: None };
    }
    // The rim point nearest the centre, a point on the cylinder.
    let outward = across / across_squared.sqrt();
    let rim = outward * cylinder_radius + axis * (sign * half_length);
    let body_rot = cylinder.world.rot * cylinder.local.rot.transpose();
    let rim_on_body = cylinder.local.pos + body_rot.transpose() * rim;
    let centres = ([sphere_centre.0, rim_on_body], [None, None]);
    sphere_pair([sphere, cylinder], centres, [sphere_centre.1, cylinder.world.pos + rim], [radius, 0.0], 0)
}

//! Whether a ray meets a site's zone (MuJoCo's `mju_rayGeom` as a touch sensor uses it): on
//! real parts, in the zone's own frame.

use nalgebra::Vector3;
use parry3d_f64::math::Vector;
use parry3d_f64::query::{Ray, RayCast};
use parry3d_f64::shape::{Ball, Capsule, Cuboid, Cylinder};

use crate::model::SiteZone;

/// Whether the ray from `origin` along `direction` (both in the zone's frame) meets `zone`;
/// a ray that starts inside it does.
pub fn ray_hits_zone(origin: &Vector3<f64>, direction: &Vector3<f64>, zone: &SiteZone) -> bool {
    let ray = |o: Vector3<f64>, d: Vector3<f64>| Ray::new(Vector::new(o.x, o.y, o.z), Vector::new(d.x, d.y, d.z));
    let (o, d) = (*origin, *direction);
    let hit = |shape: &dyn RayCast, ray: Ray| shape.cast_local_ray(&ray, f64::MAX, true).is_some();
    match *zone {
        SiteZone::Sphere { radius } => hit(&Ball::new(radius), ray(o, d)),
        SiteZone::Capsule { radius, half_length } => hit(&Capsule::new_z(half_length, radius), ray(o, d)),
        // parry's cylinder stands along y; the zone's along z.
        SiteZone::Cylinder { radius, half_length } => {
            let swap = |v: Vector3<f64>| Vector3::new(v.x, v.z, v.y);
            hit(&Cylinder::new(half_length, radius), ray(swap(o), swap(d)))
        }
        SiteZone::Box { half_extents: [x, y, z] } => hit(&Cuboid::new(Vector::new(x, y, z)), ray(o, d)),
        // Scaled to the unit sphere, the ray meets it where it met the ellipsoid.
        SiteZone::Ellipsoid { radii } => {
            let scale = |v: Vector3<f64>| Vector3::new(v.x / radii[0], v.y / radii[1], v.z / radii[2]);
            radii.iter().all(|&r| r > 0.0) && hit(&Ball::new(1.0), ray(scale(o), scale(d)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rays_meet_zones_ahead_and_from_inside() {
        let zones = [
            SiteZone::Sphere { radius: 0.5 },
            SiteZone::Capsule { radius: 0.2, half_length: 0.4 },
            SiteZone::Cylinder { radius: 0.3, half_length: 0.6 },
            SiteZone::Box { half_extents: [0.3, 0.2, 0.5] },
            SiteZone::Ellipsoid { radii: [0.3, 0.2, 0.5] },
        ];
        for zone in &zones {
            let z = Vector3::z();
            assert!(ray_hits_zone(&Vector3::new(0.0, 0.0, -2.0), &z, zone), "{zone:?}: ahead");
            assert!(!ray_hits_zone(&Vector3::new(0.0, 0.0, -2.0), &-z, zone), "{zone:?}: behind");
            assert!(ray_hits_zone(&Vector3::new(0.0, 0.0, 0.1), &-z, zone), "{zone:?}: from inside");
            assert!(!ray_hits_zone(&Vector3::new(2.0, 0.0, -2.0), &z, zone), "{zone:?}: beside");
        }
        // A cylinder's axis is z: a ray along z beside its radius but within its height misses.
        let cylinder = SiteZone::Cylinder { radius: 0.3, half_length: 0.6 };
        assert!(!ray_hits_zone(&Vector3::new(0.4, 0.0, -2.0), &Vector3::z(), &cylinder));
        assert!(ray_hits_zone(&Vector3::new(0.0, 0.0, -0.5), &Vector3::x(), &cylinder));
    }
}

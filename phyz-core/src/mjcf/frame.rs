//! Orientations as MJCF writes them: `quat`, `axisangle`, `euler`, `xyaxes`, `zaxis`, the
//! frame a `fromto` segment defines, and where a `<frame>` places what it holds.

use nalgebra::{Matrix3, Vector3};

use super::element::Element;
use super::error::MjcfError;
use crate::math::Quat;

/// The `<compiler>` settings that change how angles and orientations read.
#[derive(Clone, Debug)]
pub(super) struct AngleSettings {
    pub(super) degrees: bool,
    /// Three of `xyzXYZ`: lower case rotates about the moving axes, upper case about fixed axes.
    pub(super) euler_seq: [u8; 3],
}

impl AngleSettings {
    /// An angle as written, in radians.
    pub(super) fn angle(&self, value: f64) -> f64 {
        if self.degrees { value.to_radians() } else { value }
    }
}

/// The rotation that takes the z axis to the direction of `v` (MuJoCo's `mju_quatZ2Vec`).
pub(super) fn z_to(v: &Vector3<f64>) -> Quat<f64> {
    let n = v.norm();
    let dir = if n > 0.0 { v / n } else { Vector3::z() };
    let axis = Vector3::z().cross(&dir);
    let s = axis.norm();
    if s < 1e-15 {
        return if dir.z < 0.0 { Quat::new(0.0, 1.0, 0.0, 0.0) } else { Quat::identity() };
    }
    Quat::from_axis_angle(&(axis / s), s.atan2(dir.z))
}

/// Where a `<frame>` (or several nested) puts the elements inside it, in the frame of the
/// body (or world) that holds them: MuJoCo composes the frame's pose with each element's.
#[derive(Clone, Copy, Debug)]
pub(super) struct Placement {
    pos: Vector3<f64>,
    quat: Quat<f64>,
}

impl Placement {
    pub(super) fn identity() -> Self {
        Placement { pos: Vector3::zeros(), quat: Quat::identity() }
    }

    /// This placement followed by a frame at `pos`, `quat` within it.
    pub(super) fn then(&self, pos: Vector3<f64>, quat: Quat<f64>) -> Self {
        let (pos, quat) = self.place(pos, quat);
        Placement { pos, quat }
    }

    /// A pose given inside the frame, in the holder's frame.
    pub(super) fn place(&self, pos: Vector3<f64>, quat: Quat<f64>) -> (Vector3<f64>, Quat<f64>) {
        (self.pos + self.quat.rotate(&pos), self.quat * quat)
    }

    /// A direction given inside the frame, in the holder's frame.
    pub(super) fn turn(&self, v: &Vector3<f64>) -> Vector3<f64> {
        self.quat.rotate(v)
    }
}

/// The orientation an element specifies, if any (at most one specifier may be given).
pub(super) fn orientation(el: &Element<'_, '_>, settings: &AngleSettings) -> Result<Option<Quat<f64>>, MjcfError> {
    let given: Vec<&str> =
        ["quat", "axisangle", "euler", "xyaxes", "zaxis"].into_iter().filter(|a| el.has(a)).collect();
    if given.len() > 1 {
        return Err(el.invalid(format!("more than one orientation: {}", given.join(", "))));
    }
    let Some(&which) = given.first() else { return Ok(None) };
    let q = match which {
        "quat" => {
            let [w, x, y, z] = el.array::<4>("quat")?.unwrap_or([1.0, 0.0, 0.0, 0.0]);
            let q = Quat::new(w, x, y, z);
            if q.norm_squared() == 0.0 {
                return Err(el.invalid("quat has zero length"));
            }
            q.normalize()
        }
        "axisangle" => {
            let [x, y, z, angle] = el.array::<4>("axisangle")?.unwrap_or([0.0, 0.0, 1.0, 0.0]);
            let axis = Vector3::new(x, y, z);
            if axis.norm() == 0.0 {
                return Err(el.invalid("axisangle has a zero axis"));
            }
            Quat::from_axis_angle(&axis.normalize(), settings.angle(angle))
        }
        "euler" => euler_quat(&Vector3::from(el.array::<3>("euler")?.unwrap_or([0.0; 3])), settings),
        "xyaxes" => {
            let [a, b, c, d, e, f] = el.array::<6>("xyaxes")?.unwrap_or([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
            let x = Vector3::new(a, b, c);
            let y = Vector3::new(d, e, f);
            let x = x.try_normalize(0.0).ok_or_else(|| el.invalid("xyaxes: zero x axis"))?;
            let y = (y - x * x.dot(&y)).try_normalize(0.0).ok_or_else(|| el.invalid("xyaxes: y axis parallel to x"))?;
            let z = x.cross(&y);
            Quat::from_rotation_matrix(&Matrix3::from_columns(&[x, y, z]))
        }
        _ => {
            let [x, y, z] = el.array::<3>("zaxis")?.unwrap_or([0.0, 0.0, 1.0]);
            let v = Vector3::new(x, y, z);
            if v.norm() == 0.0 {
                return Err(el.invalid("zaxis has zero length"));
            }
            z_to(&v)
        }
    };
    Ok(Some(q))
}

/// The orientation of Euler angles `angles`, in the compiler's unit and sequence (a lowercase
/// axis turns about the moving frame's, an uppercase one about the fixed frame's).
pub(super) fn euler_quat(angles: &Vector3<f64>, settings: &AngleSettings) -> Quat<f64> {
    let mut q = Quat::identity();
    for (&axis_char, &angle) in settings.euler_seq.iter().zip(angles.iter()) {
        let axis = match axis_char.to_ascii_lowercase() {
            b'x' => Vector3::x(),
            b'y' => Vector3::y(),
            _ => Vector3::z(),
        };
        let r = Quat::from_axis_angle(&axis, settings.angle(angle));
        q = if axis_char.is_ascii_lowercase() { q * r } else { r * q };
    }
    q
}

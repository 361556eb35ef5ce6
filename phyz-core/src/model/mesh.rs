//! Convex meshes: the vertices of an STL or OBJ file, reduced to their convex hull — what
//! contacts use, as in MuJoCo — and moved into the hull's principal frame, as MuJoCo moves a
//! mesh into its inertial frame (a geom using it is placed by that frame).

use std::path::Path;
use std::sync::Arc;

use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use parry3d_f64::math::Vector;
use parry3d_f64::shape::ConvexPolyhedron;
use parry3d_f64::transformation::try_convex_hull;

use crate::math::Quat;

/// Why a mesh file gave no hull.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    #[error("cannot read mesh file `{path}`: {message}")]
    Read { path: String, message: String },
    #[error("mesh file `{path}` has an unknown extension (STL and OBJ are read)")]
    Format { path: String },
    #[error("mesh `{path}` has no volume (its points lie on one plane): it can neither touch nor weigh")]
    Flat { path: String },
}

/// The convex hull of a mesh, in its principal frame (centroid at the origin, axes along the
/// principal axes of inertia of the solid hull at uniform density).
#[derive(Debug)]
pub struct ConvexHull {
    /// Hull vertices, principal frame.
    pub vertices: Vec<Vector3<f64>>,
    pub volume: f64,
    /// Principal moments of inertia per unit mass.
    pub inertia_per_mass: Vector3<f64>,
    /// Where the principal frame sits in the file's (scaled) frame: a geom using the mesh is
    /// placed at its own pose composed with this one.
    pub frame_pos: Vector3<f64>,
    pub frame_quat: Quat<f64>,
    /// Radius of the smallest sphere about the principal frame's origin that holds the hull.
    radius: f64,
    /// The same hull as parry's polyhedron, for contact manifolds.
    pub(crate) polyhedron: ConvexPolyhedron,
}

impl PartialEq for ConvexHull {
    fn eq(&self, other: &Self) -> bool {
        self.vertices == other.vertices
    }
}

impl ConvexHull {
    /// Reads `path` (STL, binary or ASCII, or OBJ, by extension) and scales it per axis.
    pub fn load(path: &Path, scale: Vector3<f64>) -> Result<Arc<ConvexHull>, MeshError> {
        let shown = path.display().to_string();
        let read = |message: String| MeshError::Read { path: shown.clone(), message };
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let points: Vec<Vector3<f64>> = match extension.as_deref() {
            Some("stl") => {
                let bytes = std::fs::read(path).map_err(|e| read(e.to_string()))?;
                let mesh = stl_io::read_stl(&mut std::io::Cursor::new(binary_told_apart(bytes)))
                    .map_err(|e| read(e.to_string()))?;
                mesh.vertices.iter().map(|v| Vector3::new(v[0] as f64, v[1] as f64, v[2] as f64)).collect()
            }
            Some("obj") => {
                let (models, _) =
                    tobj::load_obj(path, &tobj::LoadOptions::default()).map_err(|e| read(e.to_string()))?;
                models
                    .iter()
                    .flat_map(|m| m.mesh.positions.chunks_exact(3))
                    .map(|p| Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64))
                    .collect()
            }
            _ => return Err(MeshError::Format { path: shown }),
        };
        let scaled: Vec<Vector3<f64>> = points.iter().map(|p| p.component_mul(&scale)).collect();
        Self::from_points(&scaled).map(Arc::new).ok_or(MeshError::Flat { path: shown })
    }

    /// The hull of `points`, moved into its principal frame; `None` if it has no volume.
    pub fn from_points(points: &[Vector3<f64>]) -> Option<ConvexHull> {
        let as_parry = |p: &Vector3<f64>| Vector::new(p.x, p.y, p.z);
        let (corners, triangles) = try_convex_hull(&points.iter().map(as_parry).collect::<Vec<_>>()).ok()?;
        let corners: Vec<Vector3<f64>> = corners.iter().map(|p| Vector3::new(p.x, p.y, p.z)).collect();
        let (volume, com, inertia) = solid(&corners, &triangles)?;
        // Principal axes as a proper rotation (an eigenvector basis can be left-handed).
        let eigen = inertia.symmetric_eigen();
        let mut axes = eigen.eigenvectors;
        if axes.determinant() < 0.0 {
            axes.set_column(2, &-axes.column(2));
        }
        let rotation = UnitQuaternion::from_matrix(&axes);
        // MuJoCo keeps a compiled mesh's vertices in single precision: rounding them the same
        // way puts contacts where MuJoCo's are (a flat base on a floor otherwise differs in
        // its contact points by parts in 1e8).
        let single = |x: f64| x as f32 as f64;
        let vertices: Vec<Vector3<f64>> = corners.iter().map(|p| (axes.transpose() * (p - com)).map(single)).collect();
        let polyhedron = ConvexPolyhedron::from_convex_hull(&vertices.iter().map(as_parry).collect::<Vec<_>>())?;
        Some(ConvexHull {
            inertia_per_mass: eigen.eigenvalues / volume,
            volume,
            frame_pos: com,
            frame_quat: Quat::new(rotation.w, rotation.i, rotation.j, rotation.k),
            radius: vertices.iter().map(|v| v.norm()).fold(0.0, f64::max),
            vertices,
            polyhedron,
        })
    }

    /// Radius of the smallest sphere about the principal frame's origin that holds the hull.
    pub fn bounding_radius(&self) -> f64 {
        self.radius
    }
}

/// An STL file's bytes, with a binary file's header blanked: a binary file is told apart by its
/// size (an 80-byte header, a triangle count, 50 bytes per triangle), not by its header's first
/// word, which exporters often set to `solid` as ASCII files begin. The header holds no
/// geometry, and blanked it no longer reads as ASCII to the STL reader.
fn binary_told_apart(mut bytes: Vec<u8>) -> Vec<u8> {
    let count = bytes.get(80..84).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize);
    if count.is_some_and(|n| bytes.len() == 84 + 50 * n) {
        bytes[..80].fill(0);
    }
    bytes
}

/// Volume, centroid and inertia tensor about the centroid (unit density) of the solid bounded
/// by outward-wound `triangles`: a sum over the tetrahedra they make with an interior point.
fn solid(corners: &[Vector3<f64>], triangles: &[[u32; 3]]) -> Option<(f64, Vector3<f64>, Matrix3<f64>)> {
    let inside = corners.iter().sum::<Vector3<f64>>() / corners.len() as f64;
    // Second moment ∫ x xᵀ of a tetrahedron with a vertex at the origin, edges the columns of D:
    // det D · D C Dᵀ, with C the canonical tetrahedron's.
    let canonical = Matrix3::new(2.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0) / 120.0;
    let (mut volume, mut first, mut second) = (0.0, Vector3::zeros(), Matrix3::zeros());
    for t in triangles {
        let [a, b, c] = t.map(|i| corners[i as usize] - inside);
        let d = Matrix3::from_columns(&[a, b, c]);
        let det = d.determinant().abs();
        volume += det / 6.0;
        first += (a + b + c) * (det / 24.0);
        second += d * canonical * d.transpose() * det;
    }
    if volume.is_nan() || volume <= 0.0 {
        return None;
    }
    let centroid = first / volume;
    let covariance = second - centroid * centroid.transpose() * volume;
    let inertia = Matrix3::identity() * covariance.trace() - covariance;
    Some((volume, centroid + inside, inertia))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary STL whose header begins with `solid` (as many exporters write it) is read as
    /// binary, by its size.
    #[test]
    fn a_binary_stl_is_told_apart_by_its_size() {
        let corners = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let faces = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
        let mut bytes = b"solid exported by a CAD program".to_vec();
        bytes.resize(80, b' ');
        bytes.extend(4u32.to_le_bytes());
        for face in faces {
            bytes.extend([0u8; 12]);
            for k in face {
                bytes.extend(corners[k].iter().flat_map(|x| x.to_le_bytes()));
            }
            bytes.extend([0u8; 2]);
        }
        let path = std::env::temp_dir().join(format!("phyz-solid-header-{}.stl", std::process::id()));
        std::fs::write(&path, &bytes).expect("written");
        let hull = ConvexHull::load(&path, Vector3::repeat(2.0));
        std::fs::remove_file(&path).ok();
        let hull = hull.expect("read as binary");
        assert!((hull.volume - 8.0 / 6.0).abs() < 1e-12, "{}", hull.volume);
    }

    /// A box given by its corners, off-centre and turned, has the box's volume and moments and
    /// its principal frame at the box's centre.
    #[test]
    fn a_box_hull_has_the_box_mass_properties() {
        let (a, b, c) = (0.1, 0.2, 0.3);
        let turn = UnitQuaternion::from_euler_angles(0.3, -0.2, 0.5);
        let offset = Vector3::new(1.0, -2.0, 0.5);
        let corners: Vec<_> = (0..8)
            .map(|k| {
                let s = |bit: usize| if k & bit == 0 { -1.0 } else { 1.0 };
                turn * Vector3::new(s(1) * a, s(2) * b, s(4) * c) + offset
            })
            .collect();
        let hull = ConvexHull::from_points(&corners).expect("a solid box");
        assert!((hull.volume - 8.0 * a * b * c).abs() < 1e-12);
        assert!((hull.frame_pos - offset).norm() < 1e-12);
        let mut moments: Vec<f64> = hull.inertia_per_mass.iter().copied().collect();
        moments.sort_by(f64::total_cmp);
        let mut expected = [(b * b + c * c) / 3.0, (a * a + c * c) / 3.0, (a * a + b * b) / 3.0];
        expected.sort_by(f64::total_cmp);
        for (m, e) in moments.iter().zip(expected) {
            assert!((m - e).abs() < 1e-12, "{m} vs {e}");
        }
        // The vertices are kept in single precision, as MuJoCo keeps them.
        let radius = (a * a + b * b + c * c).sqrt();
        assert!((hull.bounding_radius() - radius).abs() < 1e-7 * radius);
        // In the principal frame the box is axis-aligned: every corner has the same |x|, |y|, |z|.
        let first = hull.vertices[0].abs();
        for v in &hull.vertices {
            assert!((v.abs() - first).norm() < 1e-7, "{v} vs {first}");
        }
        // And the frame maps them back onto the input corners.
        for v in &hull.vertices {
            let back = hull.frame_quat.rotate(v) + hull.frame_pos;
            assert!(corners.iter().any(|c| (c - back).norm() < 1e-7), "{back}");
        }
    }
}

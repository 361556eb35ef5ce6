//! Meshes: the triangles of an STL, OBJ or MuJoCo MSH file, their mass properties as MuJoCo computes them
//! (`<mesh inertia>`: legacy, convex, exact or shell), and their convex hull — what contacts
//! use, as in MuJoCo — in the mesh's principal frame, as MuJoCo moves a mesh into its inertial
//! frame (a geom using it is placed by that frame).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use nalgebra::{Matrix3, Vector3};
use parry3d_f64::math::Vector;
use parry3d_f64::shape::ConvexPolyhedron;
use parry3d_f64::transformation::try_convex_hull;

use super::hull_polygons::{self, FileFrame, Polygon};
use crate::math::{Quat, principal_axes};

/// MuJoCo's smallest meaningful area, volume or length (`mjMINVAL`).
pub(super) const MIN_VALUE: f64 = 1e-15;

/// Why a mesh file gave no hull.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    #[error("cannot read mesh file `{path}`: {message}")]
    Read { path: String, message: String },
    #[error("mesh file `{path}` has an unknown extension (STL, OBJ and MuJoCo's MSH are read)")]
    Format { path: String },
    /// No convex hull with volume: a geom can neither touch nor weigh by it.
    #[error(
        "mesh `{path}` has no convex hull with volume (its points lie on one plane): a geom can neither touch nor weigh by it"
    )]
    Flat { path: String },
    #[error("mesh `{path}`: {reason}")]
    Inertia { path: String, reason: &'static str },
}

/// How a mesh's mass properties are computed (MJCF `<mesh inertia>`), as MuJoCo 4 does. All
/// four agree on a closed convex mesh.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MeshInertia {
    /// MuJoCo's default: the solid the faces make with their area-weighted centroid, each
    /// face's pyramid counted positive (a non-convex mesh weighs more than its solid).
    #[default]
    Legacy,
    /// The solid convex hull.
    Convex,
    /// The solid the (consistently oriented) faces enclose.
    Exact,
    /// A thin shell: mass spread over the faces' area.
    Shell,
}

/// What `<mesh>` says of its file beyond the path: a per-axis scale, the frame the vertices are
/// given in (`refpos`, `refquat`: subtracted and undone before scaling), the inertia mode, and
/// the most vertices its hull may have (`maxhullvert`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshOptions {
    pub scale: Vector3<f64>,
    pub refpos: Vector3<f64>,
    pub refquat: Quat<f64>,
    pub inertia: MeshInertia,
    /// MJCF's `maxhullvert`: phyz always computes the full hull, and reports in
    /// [`ConvexHull::hull_cut`] where MuJoCo's would be another; the caller decides (the MJCF
    /// compiler refuses every geom that would read such a hull).
    pub max_hull_vertices: Option<usize>,
}

impl Default for MeshOptions {
    fn default() -> Self {
        MeshOptions {
            scale: Vector3::repeat(1.0),
            refpos: Vector3::zeros(),
            refquat: Quat::identity(),
            inertia: MeshInertia::default(),
            max_hull_vertices: None,
        }
    }
}

/// A `maxhullvert` below a mesh's count of distinct points. MuJoCo then stops qhull once the
/// hull has that many vertices, keeping the points qhull's own insertion order reached first;
/// phyz computes the full hull only, so every use of such a hull is refused. (With no more
/// distinct points than the limit, the hull can never reach it early: it is the full hull.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HullCut {
    pub limit: usize,
    pub points: usize,
    /// The mesh is weighed by its hull: `inertia="convex"`, or a file without faces (MuJoCo
    /// gives it the hull's).
    pub weighed: bool,
}

/// A mesh's convex hull in its principal frame (centroid at the origin, axes along the
/// principal axes of inertia of the mesh's mass, by its inertia mode).
#[derive(Debug)]
pub struct ConvexHull {
    /// Hull vertices, principal frame.
    pub vertices: Vec<Vector3<f64>>,
    /// Volume (area for a shell): the mass at unit density.
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
    /// The hull's faces as MuJoCo's polygons (MuJoCo's multi-contact clips them).
    pub polygons: Vec<Polygon>,
    /// For each vertex, the polygons (indices) it is a corner of.
    pub vertex_polygons: Vec<Vec<usize>>,
    /// Where `maxhullvert` would make MuJoCo's hull a different one.
    pub hull_cut: Option<HullCut>,
}

impl PartialEq for ConvexHull {
    fn eq(&self, other: &Self) -> bool {
        self.vertices == other.vertices
    }
}

/// Points and outward-wound triangles.
struct Triangles {
    points: Vec<Vector3<f64>>,
    faces: Vec<[usize; 3]>,
}

impl ConvexHull {
    /// Reads `path` (STL, binary or ASCII, OBJ, or MuJoCo's MSH, by extension) as `options` say.
    pub fn load(path: &Path, options: &MeshOptions) -> Result<Arc<ConvexHull>, MeshError> {
        let shown = path.display().to_string();
        let mesh = read(path, &shown)?;
        Self::compile(mesh, options, shown)
    }

    /// A mesh given by its vertices and (optionally, else its hull's) triangles' vertex indices,
    /// as MJCF's inline `vertex` and `face` give it; `name` names it in errors.
    pub fn from_data(
        vertices: &[Vector3<f64>],
        faces: &[[usize; 3]],
        options: &MeshOptions,
        name: &str,
    ) -> Result<Arc<ConvexHull>, MeshError> {
        if faces.iter().flatten().any(|&k| k >= vertices.len()) {
            return Err(MeshError::Read { path: name.to_string(), message: "a face names a missing vertex".into() });
        }
        // As MuJoCo, the numbers are single precision.
        let points = vertices.iter().map(|v| v.map(|x| x as f32 as f64)).collect();
        Self::compile(Triangles { points, faces: faces.to_vec() }, options, name.to_string())
    }

    /// The mesh `mesh` placed and scaled as `options` say, its mass properties by its inertia
    /// mode, and its hull in its principal frame (`shown` names it in errors).
    fn compile(mut mesh: Triangles, options: &MeshOptions, shown: String) -> Result<Arc<ConvexHull>, MeshError> {
        let in_file = mesh.points.clone();
        let rotation = options.refquat.normalize().to_rotation_matrix().transpose();
        for p in &mut mesh.points {
            *p = (rotation * (*p - options.refpos)).component_mul(&options.scale);
        }
        // A mirroring scale turns the faces inside out: wind them back.
        let mirrored = options.scale.iter().product::<f64>() < 0.0;
        if mirrored {
            mesh.faces.iter_mut().for_each(|f| f.swap(1, 2));
        }
        let hull_cut = options.max_hull_vertices.and_then(|limit| {
            let points = distinct_points(&mesh.points);
            let weighed = options.inertia == MeshInertia::Convex || mesh.faces.is_empty();
            (points > limit).then_some(HullCut { limit, points, weighed })
        });
        let hull = hull_triangles(&mesh.points);
        // The hull's corners as the file gives them (the hull's points are copies of the mesh's).
        let file_points = hull.as_ref().map(|hull| {
            let bits = |p: &Vector3<f64>| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
            let index: HashMap<_, _> = mesh.points.iter().enumerate().map(|(i, p)| (bits(p), i)).collect();
            hull.points.iter().map(|p| index.get(&bits(p)).map_or(*p, |&i| in_file[i])).collect::<Vec<_>>()
        });
        let flat = || MeshError::Flat { path: shown.clone() };
        // A mesh without faces is its hull, as MuJoCo makes it.
        if mesh.faces.is_empty() {
            let hull = hull.as_ref().ok_or_else(flat)?;
            mesh = Triangles { points: hull.points.clone(), faces: hull.faces.clone() };
        }
        // The mass properties first, from the faces (the hull's for `convex`): a mesh MuJoCo
        // cannot weigh is an error of its own; one without a hull only where a geom needs it.
        // (Weighed by its hull, a flat mesh cannot be weighed: MuJoCo's "coplanar vertices".)
        let no_hull =
            || MeshError::Inertia { path: shown.clone(), reason: "its vertices are coplanar: no hull to weigh" };
        let faces = if options.inertia == MeshInertia::Convex { hull.as_ref().ok_or_else(no_hull)? } else { &mesh };
        let (volume, com, inertia) = mass_properties(&mesh, faces, options.inertia)
            .map_err(|reason| MeshError::Inertia { path: shown.clone(), reason })?;
        let (hull, file_points) = hull.zip(file_points).ok_or_else(flat)?;
        let file = FileFrame { points: &file_points, mirrored };
        let hull = Self::in_principal_frame(&hull, &file, volume, com, &inertia).ok_or_else(flat)?;
        Ok(Arc::new(ConvexHull { hull_cut, ..hull }))
    }

    /// The hull of `points` at uniform density, moved into its principal frame; `None` if it
    /// has no volume.
    pub fn from_points(points: &[Vector3<f64>]) -> Option<ConvexHull> {
        let hull = hull_triangles(points)?;
        let (volume, com, inertia) = mass_properties(&hull, &hull, MeshInertia::Convex).ok()?;
        let file = FileFrame { points: &hull.points, mirrored: false };
        Self::in_principal_frame(&hull, &file, volume, com, &inertia)
    }

    /// The hull `hull` in the principal frame of the mass `volume` with centre `com` and
    /// inertia tensor `inertia` (unit density); `file` its points where MuJoCo bins its faces.
    fn in_principal_frame(
        hull: &Triangles,
        file: &FileFrame,
        volume: f64,
        com: Vector3<f64>,
        inertia: &Matrix3<f64>,
    ) -> Option<ConvexHull> {
        let (frame_quat, moments) = principal_axes(inertia);
        let axes = frame_quat.to_rotation_matrix();
        // MuJoCo keeps a compiled mesh's vertices in single precision: rounding them the same
        // way puts contacts where MuJoCo's are (a flat base on a floor otherwise differs in
        // its contact points by parts in 1e8).
        let single = |x: f64| x as f32 as f64;
        let exact: Vec<Vector3<f64>> = hull.points.iter().map(|p| axes.transpose() * (p - com)).collect();
        let vertices: Vec<Vector3<f64>> = exact.iter().map(|p| p.map(single)).collect();
        let as_parry = |p: &Vector3<f64>| Vector::new(p.x, p.y, p.z);
        let polyhedron = ConvexPolyhedron::from_convex_hull(&vertices.iter().map(as_parry).collect::<Vec<_>>())?;
        let polygons = hull_polygons::polygons(&exact, &hull.faces, file);
        Some(ConvexHull {
            vertex_polygons: hull_polygons::by_vertex(&polygons, vertices.len()),
            polygons,
            inertia_per_mass: moments / volume,
            volume,
            frame_pos: com,
            frame_quat,
            radius: vertices.iter().map(|v| v.norm()).fold(0.0, f64::max),
            vertices,
            polyhedron,
            hull_cut: None,
        })
    }

    /// Radius of the smallest sphere about the principal frame's origin that holds the hull.
    pub fn bounding_radius(&self) -> f64 {
        self.radius
    }
}

/// The triangles of the mesh file at `path` (shown as `shown` in errors).
fn read(path: &Path, shown: &str) -> Result<Triangles, MeshError> {
    let read = |message: String| MeshError::Read { path: shown.to_string(), message };
    let widen = |v: [f32; 3]| Vector3::new(v[0] as f64, v[1] as f64, v[2] as f64);
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("stl") => {
            let bytes = std::fs::read(path).map_err(|e| read(e.to_string()))?;
            let mesh = stl_io::read_stl(&mut std::io::Cursor::new(binary_told_apart(bytes)))
                .map_err(|e| read(e.to_string()))?;
            Ok(Triangles {
                points: mesh.vertices.iter().map(|v| widen([v[0], v[1], v[2]])).collect(),
                faces: mesh.faces.iter().map(|f| f.vertices).collect(),
            })
        }
        Some("obj") => {
            let options = tobj::LoadOptions { triangulate: true, ..tobj::LoadOptions::default() };
            let (models, _) = tobj::load_obj(path, &options).map_err(|e| read(e.to_string()))?;
            // As MuJoCo reads an OBJ file: every object's vertices (the hull holds them all),
            // the first object's faces.
            let points = models.iter().flat_map(|m| m.mesh.positions.chunks_exact(3));
            let faces = models.first().map_or(&[][..], |m| &m.mesh.indices[..]).chunks_exact(3);
            let mesh = Triangles {
                points: points.map(|p| widen([p[0], p[1], p[2]])).collect(),
                faces: faces.map(|f| [0, 1, 2].map(|k| f[k] as usize)).collect(),
            };
            // The OBJ reader keeps only the vertices faces use; a file of vertices alone (its
            // hull, for MuJoCo) is read by its `v` lines.
            if mesh.faces.is_empty() { obj_vertices(path).map_err(read) } else { Ok(mesh) }
        }
        Some("msh") => {
            let bytes = std::fs::read(path).map_err(|e| read(e.to_string()))?;
            msh(&bytes).map_err(|e| read(e.to_string()))
        }
        _ => Err(MeshError::Format { path: shown.to_string() }),
    }
}

/// The vertices of an OBJ file without faces: its `v x y z` lines, in single precision as
/// MuJoCo reads them.
fn obj_vertices(path: &Path) -> Result<Triangles, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut points = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("v") {
            continue;
        }
        let mut xyz = [0.0f32; 3];
        for x in &mut xyz {
            *x = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| format!("malformed vertex `{line}`"))?;
        }
        points.push(Vector3::new(xyz[0] as f64, xyz[1] as f64, xyz[2] as f64));
    }
    Ok(Triangles { points, faces: Vec::new() })
}

/// MuJoCo's legacy binary mesh (`.msh`): four little-endian counts (vertices, normals, texture
/// coordinates, faces), then the vertices' three floats each, the normals', the texture
/// coordinates' two, and each face's three vertex indices. A file without faces is its hull.
fn msh(bytes: &[u8]) -> Result<Triangles, &'static str> {
    let word = |k: usize| bytes.get(4 * k..4 * k + 4).map(|b| [b[0], b[1], b[2], b[3]]);
    let count = |k: usize| word(k).map(i32::from_le_bytes).ok_or("missing header");
    let [nv, nn, nt, nf] = [count(0)?, count(1)?, count(2)?, count(3)?];
    let sized = nv >= 4 && nf >= 0 && (nn == 0 || nn == nv) && (nt == 0 || nt == nv);
    let [nv, nn, nt, nf] = [nv, nn, nt, nf].map(|n| n.max(0) as usize);
    if !sized || bytes.len() != 4 * (4 + 3 * nv + 3 * nn + 2 * nt + 3 * nf) {
        return Err("invalid sizes, or a size that does not match the file's");
    }
    let float = |k: usize| f32::from_le_bytes(word(k).unwrap_or_default()) as f64;
    let points = (0..nv).map(|i| Vector3::new(float(4 + 3 * i), float(5 + 3 * i), float(6 + 3 * i))).collect();
    let first_face = 4 + 3 * nv + 3 * nn + 2 * nt;
    let index = |k: usize| i32::from_le_bytes(word(k).unwrap_or_default());
    let mut faces = Vec::with_capacity(nf);
    for f in 0..nf {
        let face = [0, 1, 2].map(|c| index(first_face + 3 * f + c));
        if face.iter().any(|&i| i < 0 || i as usize >= nv) {
            return Err("a face names a vertex the file does not have");
        }
        faces.push(face.map(|i| i as usize));
    }
    Ok(Triangles { points, faces })
}

/// How many of `points` are distinct.
fn distinct_points(points: &[Vector3<f64>]) -> usize {
    // (Adding zero makes -0 and 0 one.)
    let bits = |p: &Vector3<f64>| p.map(|x| (x + 0.0).to_bits());
    points.iter().map(bits).collect::<std::collections::HashSet<_>>().len()
}

/// The convex hull of `points` as outward-wound triangles; `None` without volume.
fn hull_triangles(points: &[Vector3<f64>]) -> Option<Triangles> {
    let as_parry = |p: &Vector3<f64>| Vector::new(p.x, p.y, p.z);
    let (corners, triangles) = try_convex_hull(&points.iter().map(as_parry).collect::<Vec<_>>()).ok()?;
    let hull = Triangles {
        points: corners.iter().map(|p| Vector3::new(p.x, p.y, p.z)).collect(),
        faces: triangles.iter().map(|t| t.map(|i| i as usize)).collect(),
    };
    mass_properties(&hull, &hull, MeshInertia::Convex).ok().map(|_| hull)
}

/// True when no edge of a face with area is walked twice in the same direction (MuJoCo's
/// check before an exact inertia).
fn consistently_wound(mesh: &Triangles) -> bool {
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for f in &mesh.faces {
        let [a, b, c] = f.map(|k| mesh.points[k]);
        if triangle(&a, &b, &c).0 > MIN_VALUE.sqrt() {
            edges.extend([(f[0], f[1]), (f[1], f[2]), (f[2], f[0])]);
        }
    }
    edges.sort_unstable();
    edges.windows(2).all(|w| w[0] != w[1])
}

/// A triangle's area, unit normal (`(b − a) × (c − a)`) and centroid; a triangle of no area
/// (below MuJoCo's floor) counts as none.
fn triangle(a: &Vector3<f64>, b: &Vector3<f64>, c: &Vector3<f64>) -> (f64, Vector3<f64>, Vector3<f64>) {
    let cross = (b - a).cross(&(c - a));
    let length = cross.norm();
    let centre = (a + b + c) / 3.0;
    if length < MIN_VALUE { (0.0, Vector3::zeros(), centre) } else { (0.5 * length, cross / length, centre) }
}

/// Volume (area for a shell), centre of mass and inertia tensor about it at unit density, by
/// MuJoCo's rules for `mode`: the mesh's own faces give the reference point (their
/// area-weighted centroid); `solid` gives the faces summed over (the hull's for `Convex`).
fn mass_properties(
    mesh: &Triangles,
    solid: &Triangles,
    mode: MeshInertia,
) -> Result<(f64, Vector3<f64>, Matrix3<f64>), &'static str> {
    let corners = |t: &Triangles, f: &[usize; 3]| f.map(|k| t.points[k]);
    let (mut area, mut centroid) = (0.0, Vector3::zeros());
    for f in &mesh.faces {
        let [a, b, c] = corners(mesh, f);
        let (s, _, centre) = triangle(&a, &b, &c);
        area += s;
        centroid += centre * s;
    }
    if area < MIN_VALUE {
        return Err("the surface area is too small");
    }
    centroid /= area;
    if mode == MeshInertia::Exact && !consistently_wound(mesh) {
        return Err("exact inertia needs consistently wound faces (an edge is walked twice the same way)");
    }
    // A face's share: its pyramid to `apex` (signed, or unsigned for legacy), or its area.
    let share = |a: &Vector3<f64>, b: &Vector3<f64>, c: &Vector3<f64>, apex: &Vector3<f64>| {
        let (s, normal, centre) = triangle(a, b, c);
        match mode {
            MeshInertia::Shell => (s, centre),
            MeshInertia::Legacy => ((centre - apex).dot(&normal).abs() * s / 3.0, centre),
            _ => ((centre - apex).dot(&normal) * s / 3.0, centre),
        }
    };
    let (mut total, mut com) = (0.0, Vector3::zeros());
    for f in &solid.faces {
        let [a, b, c] = corners(solid, f);
        let (v, centre) = share(&a, &b, &c, &centroid);
        total += v;
        com += (centre * 0.75 + centroid * 0.25) * v;
    }
    if total < MIN_VALUE {
        return Err(if total < 0.0 {
            "the volume is negative (faces wound inwards)"
        } else {
            "the volume is too small"
        });
    }
    com /= total;
    // Second moments about the centre of mass, face by face, with the volume summed again.
    let divisor = if mode == MeshInertia::Shell { 12.0 } else { 20.0 };
    let (mut volume, mut second) = (0.0, Matrix3::zeros());
    for f in &solid.faces {
        let [a, b, c] = corners(solid, f).map(|p| p - com);
        let (v, _) = share(&a, &b, &c, &Vector3::zeros());
        volume += v;
        let outer = |x: &Vector3<f64>, y: &Vector3<f64>| x * y.transpose();
        let sum = (outer(&a, &a) + outer(&b, &b) + outer(&c, &c)) * 2.0
            + outer(&a, &b)
            + outer(&b, &a)
            + outer(&a, &c)
            + outer(&c, &a)
            + outer(&b, &c)
            + outer(&c, &b);
        second += sum * (v / divisor);
    }
    // Moments from the second moments, summed as MuJoCo sums them (its principal axes turn on
    // the last bits of these numbers).
    let p = |i: usize, j: usize| second[(i, j)];
    #[rustfmt::skip]
    let inertia = Matrix3::new(
        p(1, 1) + p(2, 2), -p(0, 1), -p(0, 2),
        -p(0, 1), p(0, 0) + p(2, 2), -p(1, 2),
        -p(0, 2), -p(1, 2), p(0, 0) + p(1, 1),
    );
    Ok((volume, com, inertia))
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

#[cfg(test)]
mod tests {
    use nalgebra::UnitQuaternion;

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
        let options = MeshOptions { scale: Vector3::repeat(2.0), ..MeshOptions::default() };
        let hull = ConvexHull::load(&path, &options);
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

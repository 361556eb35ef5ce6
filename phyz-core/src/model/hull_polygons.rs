//! A convex hull's faces as MuJoCo's compiler makes them (`mesh_polygon*`): the hull's
//! triangles merged where their normals fall in the same bin of MuJoCo's polar key (0.01
//! radians in azimuth and in inclination), each polygon's vertices counter-clockwise about its
//! outward normal, the normal by Newell's method. MuJoCo's multi-contact clips these polygons
//! ([`crate::collision`]), so nearly coplanar triangles act as one face there too.

use std::collections::{HashMap, HashSet};

use nalgebra::Vector3;

use super::mesh::MIN_VALUE;

/// One face of a hull: its vertices (indices into the hull's), counter-clockwise about its
/// outward unit `normal`.
#[derive(Clone, Debug, PartialEq)]
pub struct Polygon {
    pub vertices: Vec<usize>,
    pub normal: Vector3<f64>,
}

/// MuJoCo's bin width for a face normal's polar angles (radians).
const BIN: f64 = 0.01;

/// How close to the poles a normal's `z` counts as vertical (its azimuth then undefined).
const POLE: f64 = 1.0 - 1e-7;

/// Where MuJoCo bins a hull's faces: the hull's points in the file's frame (before `scale`,
/// `refpos` and `refquat`), and whether the scale mirrors them (the hull's outward winding
/// then runs inward there).
pub(super) struct FileFrame<'a> {
    pub points: &'a [Vector3<f64>],
    pub mirrored: bool,
}

/// The polygons of a hull with `points` and outward-wound `triangles` (vertex indices), its
/// triangles binned by their normals in the file's frame, `file`, as MuJoCo's compiler bins
/// them before it moves the mesh into its principal frame.
pub(super) fn polygons(points: &[Vector3<f64>], triangles: &[[usize; 3]], file: &FileFrame) -> Vec<Polygon> {
    let mut groups: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for (t, tri) in triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|k| file.points[k]);
        let cross = if file.mirrored { (c - a).cross(&(b - a)) } else { (b - a).cross(&(c - a)) };
        let norm = cross.norm();
        if norm < MIN_VALUE {
            continue;
        }
        let key = polar_key(&(cross / norm));
        if !groups.contains_key(&key) {
            order.push(key);
        }
        groups.entry(key).or_default().push(t);
    }
    let mut out = Vec::new();
    for key in order {
        for component in connected(&groups[&key], triangles) {
            if let Some(vertices) = outline(&component, triangles) {
                let normal = newell(points, &vertices);
                out.push(Polygon { vertices, normal });
            }
        }
    }
    out
}

/// For each of `count` vertices, the polygons (indices into `polygons`) it is a corner of.
pub(super) fn by_vertex(polygons: &[Polygon], count: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); count];
    for (p, polygon) in polygons.iter().enumerate() {
        polygon.vertices.iter().for_each(|&k| out[k].push(p));
    }
    out
}

/// MuJoCo's key of a unit normal: its azimuth and inclination in bins (a vertical normal's
/// azimuth is 0; a negative zero counts as zero, so `(-1, -0, 0)` is at azimuth π).
fn polar_key(n: &Vector3<f64>) -> (i64, i64) {
    let bin = |angle: f64| (angle / BIN).round() as i64;
    if n.z.abs() > POLE {
        return (0, if n.z > 0.0 { 0 } else { bin(std::f64::consts::PI) });
    }
    (bin((n.y + 0.0).atan2(n.x + 0.0)), bin(n.z.clamp(-1.0, 1.0).acos()))
}

/// The groups of `members` (triangle indices) that share edges.
fn connected(members: &[usize], triangles: &[[usize; 3]]) -> Vec<Vec<usize>> {
    let by_edge: HashMap<(usize, usize), usize> =
        members.iter().flat_map(|&t| edges(&triangles[t]).map(move |e| (e, t))).collect();
    let mut seen: HashMap<usize, bool> = members.iter().map(|&t| (t, false)).collect();
    let mut out = Vec::new();
    for &start in members {
        if seen[&start] {
            continue;
        }
        seen.insert(start, true);
        let (mut stack, mut component) = (vec![start], Vec::new());
        while let Some(t) = stack.pop() {
            component.push(t);
            for (i, j) in edges(&triangles[t]) {
                if let Some(&t2) = by_edge.get(&(j, i))
                    && !seen[&t2]
                {
                    seen.insert(t2, true);
                    stack.push(t2);
                }
            }
        }
        out.push(component);
    }
    out
}

/// A triangle's directed edges.
fn edges(tri: &[usize; 3]) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..3).map(move |k| (tri[k], tri[(k + 1) % 3]))
}

/// The boundary of a group of triangles (the edges no other member walks back), as one loop
/// in the triangles' winding; `None` where it is not one loop.
fn outline(component: &[usize], triangles: &[[usize; 3]]) -> Option<Vec<usize>> {
    let all: HashSet<(usize, usize)> = component.iter().flat_map(|&t| edges(&triangles[t])).collect();
    let next: HashMap<usize, usize> =
        all.iter().filter(|&&(i, j)| !all.contains(&(j, i))).map(|&(i, j)| (i, j)).collect();
    let start = *next.keys().min()?;
    let mut vertices = vec![start];
    let mut at = next[&start];
    while at != start {
        if vertices.len() > next.len() {
            return None;
        }
        vertices.push(at);
        at = *next.get(&at)?;
    }
    (vertices.len() == next.len()).then_some(vertices)
}

/// Newell's normal of a polygon (unit).
fn newell(points: &[Vector3<f64>], vertices: &[usize]) -> Vector3<f64> {
    let mut n = Vector3::zeros();
    for (k, &i) in vertices.iter().enumerate() {
        let (p, q) = (points[i], points[vertices[(k + 1) % vertices.len()]]);
        n += Vector3::new((p.y - q.y) * (p.z + q.z), (p.z - q.z) * (p.x + q.x), (p.x - q.x) * (p.y + q.y));
    }
    n.normalize()
}

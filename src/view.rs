//! A trajectory as one self-contained HTML page: the model's geoms in their shapes and colours,
//! posed frame by frame, with a time slider and play/pause (`phyz view`, `phyz simulate
//! --view`, the training examples).
//!
//! The page carries everything it needs: three.js (vendored from the npm registry into
//! `assets/viewer`, MIT licensed), its orbit controls, phyz's player and the trajectory as
//! JSON, so it opens from a file with no network. Geoms are drawn as phyz simulates them: a
//! mesh as its convex hull, a height field as its grid.

use std::fmt::Write as _;
use std::path::Path;

use nalgebra::{DVector, Rotation3, UnitQuaternion, Vector3};
use phyz_core::dynamics::Kinematics;
use phyz_core::model::{Geom, Shape};
use phyz_core::{Model, State};

const THREE: &str = include_str!("../assets/viewer/three.module.min.js");
const ORBIT_CONTROLS: &str = include_str!("../assets/viewer/OrbitControls.js");
const PLAYER: &str = include_str!("../assets/viewer/player.js");
const PAGE: &str = include_str!("../assets/viewer/page.html");

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("no states to show")]
    Empty,
    #[error("state {index}: {what} has {got} entries, the model has {expected}")]
    Size { index: usize, what: &'static str, got: usize, expected: usize },
    #[error("state {index} is not finite")]
    NonFinite { index: usize },
    #[error("{path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// The page for `states` of `model` (in time order), titled `title`.
pub fn page(model: &Model<f64>, states: &[State<f64>], title: &str) -> Result<String, ViewError> {
    if states.is_empty() {
        return Err(ViewError::Empty);
    }
    let drawn: Vec<usize> = (0..model.bodies().len()).filter(|&b| !model.bodies()[b].geoms.is_empty()).collect();
    let mut json = String::from("{\"title\":");
    string(&mut json, title);
    json.push_str(",\"geoms\":[");
    let mut first = true;
    for (slot, &body) in drawn.iter().enumerate() {
        for geom in &model.bodies()[body].geoms {
            if !first {
                json.push(',');
            }
            first = false;
            geom_json(&mut json, slot, geom);
        }
    }
    write!(json, "],\"bodies\":{},\"follow\":", drawn.len()).ok();
    match followed(model, &drawn) {
        Some(slot) => write!(json, "{slot}").ok(),
        None => write!(json, "null").ok(),
    };
    frames_json(&mut json, model, states, &drawn)?;
    json.push('}');
    // The JSON sits in a script element: no `<` may end it early.
    let json = json.replace('<', "\\u003c");
    Ok(fill(
        PAGE,
        &[
            ("{{TITLE}}", &html_text(title)),
            ("{{THREE}}", THREE),
            ("{{ORBIT_CONTROLS}}", ORBIT_CONTROLS),
            ("{{DATA}}", &json),
            ("{{PLAYER}}", PLAYER),
        ],
    ))
}

/// `template` with each marker replaced by its text, in one pass (a text put in is never read
/// for markers).
fn fill(template: &str, parts: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + parts.iter().map(|(_, text)| text.len()).sum::<usize>());
    let mut rest = template;
    while let Some((at, marker, text)) =
        parts.iter().filter_map(|&(marker, text)| rest.find(marker).map(|at| (at, marker, text))).min_by_key(|p| p.0)
    {
        out.push_str(&rest[..at]);
        out.push_str(text);
        rest = &rest[at + marker.len()..];
    }
    out.push_str(rest);
    out
}

/// [`page`], written to `path`.
pub fn write(path: &Path, model: &Model<f64>, states: &[State<f64>], title: &str) -> Result<(), ViewError> {
    let text = page(model, states, title)?;
    std::fs::write(path, text).map_err(|source| ViewError::Write { path: path.display().to_string(), source })
}

/// The drawn body a camera follows: the first that moves (bodies come parent first, so this is
/// the root of the first moving tree: a walker's torso, planar or free).
fn followed(model: &Model<f64>, drawn: &[usize]) -> Option<usize> {
    drawn.iter().position(|&b| !model.bodies()[b].joints().is_empty())
}

/// One geom: its kind, sizes, pose on its body, colour and group, and for a mesh or height
/// field its triangles.
fn geom_json(out: &mut String, body: usize, geom: &Geom<f64>) {
    let (kind, size): (&str, Vec<f64>) = match &geom.shape {
        Shape::Plane => ("plane", geom.plane_size.iter().map(|&x| f64::from(x)).collect()),
        Shape::Sphere { radius } => ("sphere", vec![*radius]),
        Shape::Capsule { radius, half_length } => ("capsule", vec![*radius, *half_length]),
        Shape::Cylinder { radius, half_length } => ("cylinder", vec![*radius, *half_length]),
        Shape::Box { half_extents } => ("box", half_extents.iter().copied().collect()),
        Shape::Ellipsoid { radii } => ("ellipsoid", radii.iter().copied().collect()),
        Shape::Mesh { .. } => ("mesh", Vec::new()),
        Shape::HeightField { .. } => ("hfield", Vec::new()),
    };
    out.push_str("{\"body\":");
    write!(out, "{body},\"name\":").ok();
    string(out, &geom.name);
    write!(out, ",\"kind\":\"{kind}\",\"group\":{},\"size\":", geom.group).ok();
    numbers(out, size.iter().copied());
    out.push_str(",\"pos\":");
    numbers(out, geom.pos.iter().copied());
    out.push_str(",\"quat\":");
    numbers(out, [geom.quat.w, geom.quat.x, geom.quat.y, geom.quat.z].into_iter());
    out.push_str(",\"rgba\":");
    numbers(out, geom.rgba.iter().map(|&c| f64::from(c)));
    if let Some((vertices, triangles)) = triangles(&geom.shape) {
        out.push_str(",\"vertices\":");
        numbers(out, vertices.iter().flat_map(|v| [v.x, v.y, v.z]));
        write!(out, ",\"triangles\":[{}]", triangles.iter().map(usize::to_string).collect::<Vec<_>>().join(",")).ok();
    }
    out.push('}');
}

/// A mesh's hull or a height field's grid as vertices and triangles (fans over the hull's
/// polygons; two triangles a grid cell).
fn triangles(shape: &Shape<f64>) -> Option<(Vec<Vector3<f64>>, Vec<usize>)> {
    match shape {
        Shape::Mesh { hull } => {
            let triangles = hull
                .polygons
                .iter()
                .flat_map(|p| {
                    (1..p.vertices.len().saturating_sub(1))
                        .flat_map(|k| [p.vertices[0], p.vertices[k], p.vertices[k + 1]])
                })
                .collect();
            Some((hull.vertices.clone(), triangles))
        }
        Shape::HeightField { field } => {
            let (nrow, ncol) = (field.nrow, field.ncol);
            let vertices = (0..nrow)
                .flat_map(|r| (0..ncol).map(move |c| (r, c)))
                .map(|(r, c)| {
                    let (x, y) = field.grid_point(r, c);
                    Vector3::new(x, y, field.height(r, c))
                })
                .collect();
            let at = |r: usize, c: usize| r * ncol + c;
            let triangles = (0..nrow - 1)
                .flat_map(|r| (0..ncol - 1).map(move |c| (r, c)))
                .flat_map(|(r, c)| [at(r, c), at(r, c + 1), at(r + 1, c + 1), at(r, c), at(r + 1, c + 1), at(r + 1, c)])
                .collect();
            Some((vertices, triangles))
        }
        _ => None,
    }
}

/// The frames: each state's time and every drawn body's world position and orientation
/// (`w, x, y, z`).
fn frames_json(out: &mut String, model: &Model<f64>, states: &[State<f64>], drawn: &[usize]) -> Result<(), ViewError> {
    let mut kin = Kinematics::default();
    out.push_str(",\"times\":");
    numbers(out, states.iter().map(|s| s.time));
    let mut poses = Vec::with_capacity(7 * drawn.len() * states.len());
    for (index, state) in states.iter().enumerate() {
        check(model, index, state)?;
        kin.set_mocap(model, &state.mocap_pos, &state.mocap_quat);
        kin.update(model, &state.qpos);
        for &b in drawn {
            let pose = kin.body_pose(model, b);
            let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(pose.rot));
            poses.extend([pose.pos.x, pose.pos.y, pose.pos.z, q.w, q.i, q.j, q.k]);
        }
    }
    out.push_str(",\"poses\":");
    numbers(out, poses.into_iter());
    Ok(())
}

/// A state the page can pose the model at.
fn check(model: &Model<f64>, index: usize, state: &State<f64>) -> Result<(), ViewError> {
    if state.qpos.len() != model.nq() {
        return Err(ViewError::Size { index, what: "qpos", got: state.qpos.len(), expected: model.nq() });
    }
    let finite = |v: &DVector<f64>| v.iter().all(|x| x.is_finite());
    if !finite(&state.qpos) || !state.time.is_finite() {
        return Err(ViewError::NonFinite { index });
    }
    Ok(())
}

/// `[a,b,…]`, each number to six significant places past the point (micrometres).
fn numbers(out: &mut String, values: impl Iterator<Item = f64>) {
    out.push('[');
    for (k, v) in values.enumerate() {
        if k > 0 {
            out.push(',');
        }
        let text = format!("{v:.6}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        out.push_str(if text == "-0" || text.is_empty() { "0" } else { text });
    }
    out.push(']');
}

/// A JSON string.
fn string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap_or(()),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Text for an HTML element.
fn html_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

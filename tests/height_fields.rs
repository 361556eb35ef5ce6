//! Height fields: loading as MuJoCo reads them, contacts with boxes at the exact penetration
//! of each of the field's prisms, and exact derivatives through height-field contacts.
//!
//! Spheres and capsules on a height field are checked against MuJoCo's trajectories in
//! `constraint_agreement.rs`. A box is not: MuJoCo 4's EPA stops on a box against a prism as soon
//! as the box's support vertex repeats (it does not track the prism's vertices), short of the
//! penetration, so its contacts are shallower than the boxes' and prisms' overlap. phyz's are
//! that overlap, which this test computes independently by the separating axis theorem.

mod common;

use std::sync::Arc;

use common::finite_difference_jacobians;

use nalgebra::Vector3;
use phyz::collision::{Anchor, detect};
use phyz::contact::SolverConfig;
use phyz::dual::step_jacobians;
use phyz::dynamics::forward_kinematics;
use phyz::mjcf::{self, MjcfErrorKind};
use phyz::model::{HeightField, Shape};
use phyz::sim::{ContactState, step_with};

fn scene(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/reference/contact/{name}.xml"))
}

/// The field of a model's first height field geom.
fn field_of(model: &phyz::Model<f64>) -> Arc<HeightField> {
    let shapes = model.bodies().iter().flat_map(|b| &b.geoms).map(|g| &g.shape);
    shapes
        .filter_map(|s| match s {
            Shape::HeightField { field } => Some(field.clone()),
            _ => None,
        })
        .next()
        .expect("a height field geom")
}

#[test]
fn inline_elevations_are_read_top_row_first_and_normalized() {
    let model = mjcf::load(scene("hfield_sphere")).expect("loads");
    let field = field_of(&model);
    assert_eq!((field.nrow, field.ncol, field.size), (6, 7, [0.6, 0.5, 0.15, 0.05]));
    // The XML's first row (0.1 0.3 0.5 ...) is the top row, at +y; its last (0.0 0.1 0.2 ...)
    // the bottom, at -y. The data span 0 to 1 already.
    assert_eq!(field.elevation(5, 1), f64::from(0.3f32));
    assert_eq!(field.elevation(0, 4), f64::from(0.4f32));
    assert_eq!(field.grid_point(5, 6), (0.6, 0.5));
    assert_eq!(field.height(3, 2), 0.15);
}

#[test]
fn files_load_and_normalize_and_bad_input_is_named() {
    let dir = std::env::temp_dir().join(format!("phyz-hfield-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (nrow, ncol) = (3i32, 4i32);
    let raw: Vec<f32> = (0..12).map(|k| 2.0 + 0.5 * k as f32).collect();
    let mut bytes = Vec::new();
    bytes.extend(nrow.to_le_bytes());
    bytes.extend(ncol.to_le_bytes());
    raw.iter().for_each(|x| bytes.extend(x.to_le_bytes()));
    std::fs::write(dir.join("field.bin"), &bytes).expect("written");
    let xml = |asset: &str| {
        format!(
            "<mujoco><asset>{asset}</asset><worldbody><geom type='hfield' hfield='h'/>\
             <body pos='0 0 1'><freejoint/><geom size='.1'/></body></worldbody></mujoco>"
        )
    };
    let path = dir.join("model.xml");
    std::fs::write(&path, xml("<hfield name='h' file='field.bin' size='1 1 .5 .1'/>")).expect("written");
    let model = mjcf::load(&path).expect("loads");
    let field = field_of(&model);
    // Rows as stored (row 0 at -y), shifted to 0 and scaled to 1 in single precision.
    assert_eq!((field.nrow, field.ncol), (3, 4));
    assert_eq!(field.elevation(0, 0), 0.0);
    assert_eq!(field.elevation(2, 3), 1.0);
    assert_eq!(field.elevation(1, 1), f64::from((raw[5] - raw[0]) / (raw[11] - raw[0])));

    let error = |asset: &str| {
        std::fs::write(&path, xml(asset)).expect("written");
        mjcf::load(&path).expect_err("refused")
    };
    let short = error("<hfield name='h' nrow='2' ncol='2' size='1 1 .5 .1' elevation='1 2 3'/>");
    assert!(matches!(short.kind, MjcfErrorKind::Invalid(_)) && short.location.element == "hfield", "{short}");
    let both = error("<hfield name='h' file='field.bin' nrow='3' ncol='4' size='1 1 .5 .1'/>");
    assert!(matches!(both.kind, MjcfErrorKind::Invalid(ref m) if m.contains("file and manually")), "{both}");
    // Named after its file by default, as in MuJoCo; a name used twice is an error.
    std::fs::copy(dir.join("field.bin"), dir.join("h.bin")).expect("copied");
    std::fs::write(&path, xml("<hfield file='h.bin' size='1 1 .5 .1'/>")).expect("written");
    assert_eq!(field_of(&mjcf::load(&path).expect("loads")).ncol, 4);
    let twice = error(
        "<hfield name='h' file='field.bin' size='1 1 .5 .1'/><hfield name='h' nrow='2' ncol='2' size='1 1 .5 .1'/>",
    );
    assert!(matches!(twice.kind, MjcfErrorKind::Invalid(ref m) if m.contains("repeated")), "{twice}");
    // A PNG image: each pixel's first channel (grey, or red: green and blue are ignored, as
    // MuJoCo's decoder to grey does), the image's top row at +y. MuJoCo 4.0.1 reads these two
    // images as [[0.6, 0.8, 1], [0, 0.2, 0.4]] (row 0 at -y).
    let levels = [[0u8, 50, 100], [150, 200, 250]];
    let grey: Vec<Vec<u8>> = levels.iter().map(|row| row.to_vec()).collect();
    let rgb: Vec<Vec<u8>> = levels.iter().map(|row| row.iter().flat_map(|&v| [v, v / 2, 255 - v]).collect()).collect();
    for (name, rows, color) in [("grey.png", grey, 0u8), ("rgb.png", rgb, 2u8)] {
        std::fs::write(dir.join(name), png_file(3, &rows, color)).expect("written");
        std::fs::write(&path, xml(&format!("<hfield name='h' file='{name}' size='1 1 .5 .1'/>"))).expect("written");
        let field = field_of(&mjcf::load(&path).expect("loads"));
        let read: Vec<f64> =
            (0..2).flat_map(|r| (0..3).map(move |c| (r, c))).map(|(r, c)| field.elevation(r, c)).collect();
        let expected = [0.6f32, 0.8, 1.0, 0.0, 0.2, 0.4].map(f64::from);
        let err = read.iter().zip(expected).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(err < 1e-7, "{name}: {read:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A PNG file of 8-bit rows (`color` 0: grey, 2: RGB), its data in stored (uncompressed)
/// deflate blocks, so that the test needs no encoder.
fn png_file(width: u32, rows: &[Vec<u8>], color: u8) -> Vec<u8> {
    fn crc(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        let body: Vec<u8> = kind.iter().chain(data).copied().collect();
        out.extend(&body);
        out.extend(crc(&body).to_be_bytes());
        out
    };
    let raw: Vec<u8> = rows.iter().flat_map(|row| std::iter::once(0u8).chain(row.iter().copied())).collect();
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &raw {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    let len = raw.len() as u16;
    let mut zlib = vec![0x78, 0x01, 1];
    zlib.extend(len.to_le_bytes());
    zlib.extend((!len).to_le_bytes());
    zlib.extend(&raw);
    zlib.extend(((b << 16) | a).to_be_bytes());
    let mut header = width.to_be_bytes().to_vec();
    header.extend((rows.len() as u32).to_be_bytes());
    header.extend([8, color, 0, 0, 0]);
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    png.extend(chunk(b"IHDR", &header));
    png.extend(chunk(b"IDAT", &zlib));
    png.extend(chunk(b"IEND", &[]));
    png
}

/// The corners of prism `feature` (MuJoCo's order: in the cell between rows `r`, `r + 1` and
/// columns `c − 1`, `c`, triangle 0 on corner `(r + 1, c − 1)`, triangle 1 on `(r, c)`), field
/// frame.
fn prism(field: &HeightField, feature: usize) -> Vec<Vector3<f64>> {
    let (cell, i) = (feature / 2, feature % 2);
    let (r, c) = (cell / field.ncol, cell % field.ncol);
    let corners = if i == 0 { [(r + 1, c - 1), (r, c - 1), (r + 1, c)] } else { [(r, c - 1), (r + 1, c), (r, c)] };
    let mut points = Vec::new();
    for (row, col) in corners {
        let (x, y) = field.grid_point(row, col);
        points.push(Vector3::new(x, y, -field.size[3]));
        points.push(Vector3::new(x, y, field.height(row, col)));
    }
    points
}

/// A prism's edge directions (its corners as [`prism`] lists them): the bottom's, the top's and
/// the vertical.
fn edges_of(p: &[Vector3<f64>]) -> Vec<Vector3<f64>> {
    vec![p[2] - p[0], p[4] - p[2], p[0] - p[4], p[3] - p[1], p[5] - p[3], p[1] - p[5], Vector3::z()]
}

/// The least overlap of two convex polytopes over the separating axis theorem's candidate
/// directions (face normals of each, cross products of their edges), and its direction: their
/// penetration depth, exactly.
fn penetration(
    a: &[Vector3<f64>],
    a_edges: &[Vector3<f64>],
    b: &[Vector3<f64>],
    b_edges: &[Vector3<f64>],
) -> (f64, Vector3<f64>) {
    let mut axes: Vec<Vector3<f64>> = a_edges.iter().chain(b_edges).copied().collect();
    for x in a_edges {
        for y in a_edges.iter().chain(b_edges) {
            axes.push(x.cross(y));
        }
    }
    for x in b_edges {
        for y in b_edges {
            axes.push(x.cross(y));
        }
    }
    let overlap = |n: &Vector3<f64>| {
        let reach_a = a.iter().map(|p| p.dot(n)).fold(f64::NEG_INFINITY, f64::max);
        let reach_b = b.iter().map(|p| p.dot(n)).fold(f64::INFINITY, f64::min);
        reach_a - reach_b
    };
    axes.iter()
        .filter(|n| n.norm() > 1e-9)
        .flat_map(|n| [n.normalize(), -n.normalize()])
        .map(|n| (overlap(&n), n))
        .fold((f64::INFINITY, Vector3::zeros()), |best, x| if x.0 < best.0 { x } else { best })
}

/// A box falling tilted onto the field and sliding over it: at every step with contacts, each
/// contact's depth is its prism's and the box's penetration, and its normal the direction of
/// least overlap, to 1e-12 and 1e-9 (both exact up to rounding).
#[test]
fn box_contacts_are_the_exact_penetration_of_each_prism() {
    let model = mjcf::load(scene("hfield_box")).expect("loads");
    let field = field_of(&model);
    let half = match model.bodies()[1].geoms[0].shape {
        Shape::Box { half_extents } => half_extents,
        _ => unreachable!("the mover is a box"),
    };
    let mut contact = ContactState::new(SolverConfig::mujoco_compat());
    let mut state = model.default_state();
    state.qvel[0] = 0.4;
    state.qvel[1] = 0.2;
    state.qvel[5] = 1.0;
    let mut checked = 0;
    for _ in 0..300 {
        state = step_with(&model, &state, &[], &mut contact).expect("steps").0;
        let kin = forward_kinematics(&model, &state.qpos);
        let poses: Vec<_> = (0..model.bodies().len()).map(|b| kin.body_pose(&model, b)).collect();
        let field_pose = poses[0].compose(&phyz::math::Pose::from_quat(
            &model.bodies()[0].geoms[1].quat.normalize(),
            model.bodies()[0].geoms[1].pos,
        ));
        let box_pose = poses[1];
        let to_field = field_pose.inverse().compose(&box_pose);
        let corners: Vec<Vector3<f64>> = (0..8)
            .map(|k| {
                let s = |bit: usize| if k & bit == 0 { -1.0 } else { 1.0 };
                to_field.transform_point(&Vector3::new(s(1) * half.x, s(2) * half.y, s(4) * half.z))
            })
            .collect();
        let box_edges: Vec<Vector3<f64>> = (0..3).map(|k| to_field.rot.column(k).into_owned()).collect();
        let contacts = detect(&model, &poses).expect("supported");
        // Every prism the box overlaps gives a contact.
        for r in 0..field.nrow - 1 {
            for feature in (1..field.ncol).flat_map(|c| [(r * field.ncol + c) * 2, (r * field.ncol + c) * 2 + 1]) {
                let p = prism(&field, feature);
                if penetration(&p, &edges_of(&p), &corners, &box_edges).0 > 1e-12 {
                    assert!(
                        contacts.iter().any(|c| c.feature == feature),
                        "prism {feature} overlaps but gives no contact"
                    );
                }
            }
        }
        for c in contacts.iter().filter(|c| c.geoms == [1, 2]) {
            let p = prism(&field, c.feature);
            let (depth, normal) = penetration(&p, &edges_of(&p), &corners, &box_edges);
            assert!((c.depth - depth).abs() <= 1e-12, "feature {}: depth {} against {depth}", c.feature, c.depth);
            let Anchor::Points { normal: world_normal, .. } = c.anchor else { panic!("a box's contact is two points") };
            // The field is on the world body: its body frame is the world's.
            let found = field_pose.rot.transpose() * world_normal;
            assert!((found - normal).norm() <= 1e-9, "feature {}: normal {found:?} against {normal:?}", c.feature);
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} contacts checked");
}

/// Relative tolerance of a step Jacobian through contact against central differences, as the
/// contact derivative tests state it.
const JACOBIAN_TOL: f64 = 1e-6;

/// A sphere, a capsule and a box rolling or sliding over the field, 20 steps after they first
/// touch it: the step's exact Jacobian agrees with central differences (the best of three step
/// sizes, which trade truncation against the step's roundoff).
#[test]
fn step_jacobians_through_height_field_contacts_match_central_differences() {
    for (name, launch) in
        [("hfield_sphere", [0.6, 0.1, 0.0]), ("hfield_capsule", [0.1, 0.3, 1.0]), ("hfield_box", [0.4, 0.2, 1.0])]
    {
        let model = mjcf::load(scene(name)).expect("loads");
        let mut contact = ContactState::new(SolverConfig::default());
        let mut state = model.default_state();
        (state.qvel[0], state.qvel[1], state.qvel[5]) = (launch[0], launch[1], launch[2]);
        let mut touching = 0;
        for _ in 0..1000 {
            let (next, info) = step_with(&model, &state, &[], &mut contact).expect("steps");
            state = next;
            touching += usize::from(touching > 0 || info.contacts > 0);
            if touching == 20 {
                break;
            }
        }
        assert_eq!(touching, 20, "{name}: the geom reaches the field");
        let exact = step_jacobians(&model, &state, &[]).expect("jacobians").a;
        let err = [1e-5, 1e-6, 1e-7]
            .into_iter()
            .map(|h| (&exact - finite_difference_jacobians(&model, &state, &[], h).0).amax() / exact.amax())
            .fold(f64::INFINITY, f64::min);
        eprintln!("{name}: step Jacobian vs central differences {err:.2e}");
        assert!(err <= JACOBIAN_TOL, "{name}: {err:e}");
    }
}

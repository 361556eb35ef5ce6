//! Boxes, meshes and cylinders against one another, against MuJoCo 4.0.1's single-shot
//! multi-contact (`tools/mujoco_multiccd.py`: random resting scenes on a box or mesh table,
//! flat, tilted within and beyond MuJoCo's face tolerance, on an edge, on a side): the same
//! contacts, as a set, each with MuJoCo's point, normal and depth. And a plane against meshes,
//! against MuJoCo 4.0.1's `mjc_PlaneConvex` (`tools/mujoco_plane_mesh.py`: boxes, prisms,
//! dodecahedra and random hulls on level and tilted planes, turned at random or resting on a
//! face, an edge or a corner, some within a margin). And spheres against cylinders, against
//! MuJoCo's `mjc_SphereCylinder` (`tools/mujoco_sphere_cylinder.py`). And capsules against
//! meshes and cylinders, whose side line MuJoCo's multi-contact clips as an edge
//! (`tools/mujoco_capsule_convex.py`). And meshes, boxes and cylinders overlapping deeply
//! (`tools/mujoco_deep_convex.py`), where the penetration is MuJoCo's GJK and EPA's.

use nalgebra::Vector3;
use phyz::Model;
use phyz::collision::detect;
use phyz::dynamics::forward_kinematics;

const CASES: &str = include_str!("reference/multiccd/cases.txt");
const PLANE_MESH: &str = include_str!("reference/multiccd/plane_mesh.txt");
const SPHERE_CYLINDER: &str = include_str!("reference/multiccd/sphere_cylinder.txt");
const CAPSULE_CONVEX: &str = include_str!("reference/multiccd/capsule_convex.txt");
const DEEP_CONVEX: &str = include_str!("reference/multiccd/deep_convex.txt");

/// Clipped points: MuJoCo's arithmetic on the same single-precision vertices, in another order
/// of operations.
const CLIPPED: f64 = 1e-9;
/// A single contact on a cylinder's rim: MuJoCo's EPA stops once its depth is known to its
/// `ccd_tolerance` (1e-6), its normal then good to about the square root over the rim's radius
/// and the point to that times the radius; phyz's is the exact penetration.
const RIM: Tolerance = Tolerance { depth: 2e-6, normal: 1e-2, point: 1e-3 };

#[derive(Clone, Copy)]
struct Tolerance {
    depth: f64,
    normal: f64,
    point: f64,
}

/// A contact: its geoms' names, point, normal from the first geom to the second, distance
/// (negative: penetrating).
#[derive(Debug)]
struct Contact {
    geoms: [String; 2],
    point: Vector3<f64>,
    normal: Vector3<f64>,
    dist: f64,
}

fn reference(line: &str) -> Contact {
    let words: Vec<&str> = line.split_whitespace().collect();
    let x: Vec<f64> = words[2..].iter().map(|w| w.parse().expect("a number")).collect();
    Contact {
        geoms: [words[0].to_string(), words[1].to_string()],
        point: Vector3::new(x[0], x[1], x[2]),
        normal: Vector3::new(x[3], x[4], x[5]),
        dist: x[6],
    }
}

fn phyz_contacts(model: &Model<f64>) -> Vec<Contact> {
    let state = model.default_state();
    let kin = forward_kinematics(model, &state.qpos);
    let poses: Vec<_> = (0..model.bodies().len()).map(|b| kin.body_pose(model, b)).collect();
    let owner = |g: usize| model.geom_owner(g).expect("geom");
    let name = |g: usize| {
        let (b, k) = owner(g);
        model.bodies()[b].geoms[k].name.clone()
    };
    detect(model, &poses)
        .expect("supported pairs")
        .iter()
        .map(|c| {
            let frame = c.anchor.evaluate(model, &kin, &c.tangent_ref);
            let sign = if c.anchor.bodies()[0] == owner(c.geoms[0]).0 { 1.0 } else { -1.0 };
            Contact { geoms: c.geoms.map(name), point: frame.point, normal: frame.normal * sign, dist: -frame.depth }
        })
        .collect()
}

/// How far `ours` is from `theirs` relative to `tol` (1 at the tolerance), the normal turned to
/// MuJoCo's geom order.
fn distance(ours: &Contact, theirs: &Contact, tol: &Tolerance) -> f64 {
    let normal = if ours.geoms == theirs.geoms { ours.normal } else { -ours.normal };
    let d = [
        (ours.dist - theirs.dist).abs() / tol.depth,
        (normal - theirs.normal).norm() / tol.normal,
        (ours.point - theirs.point).norm() / tol.point,
    ];
    d.into_iter().fold(0.0, f64::max)
}

/// A scene of a reference file: its name, MuJoCo's contacts, phyz's, and the model's text.
struct Scene {
    name: String,
    theirs: Vec<Contact>,
    ours: Vec<Contact>,
    xml: String,
}

/// The scenes of a reference file (`tools/mujoco_multiccd.py`'s format), each loaded and
/// detected by phyz.
fn scenes(text: &str) -> Vec<Scene> {
    let mut out = Vec::new();
    for case in text.split("=== ").filter(|c| !c.is_empty()) {
        let mut lines = case.lines();
        let head: Vec<&str> = lines.next().expect("a head").split_whitespace().collect();
        let count: usize = head[1].parse().expect("a count");
        let theirs: Vec<Contact> = lines.by_ref().take(count).map(reference).collect();
        let xml = lines.collect::<Vec<_>>().join("\n");
        let model = phyz::mjcf::parse(&xml, format!("{}.xml", head[0])).expect("loads");
        out.push(Scene { name: head[0].to_string(), theirs, ours: phyz_contacts(&model), xml });
    }
    out
}

/// Whether every contact of `a` is within `tol` of one of `b`'s.
fn among(a: &[Contact], b: &[Contact], tol: &Tolerance) -> bool {
    a.iter().all(|x| b.iter().any(|y| distance(x, y, tol) <= 1.0))
}

/// Scenes where phyz's points differ from MuJoCo's, and why. A mesh face clipped to more than
/// four points is reduced to four by MuJoCo's local search for the largest quadrilateral, which
/// starts at the polygon's first vertex: MuJoCo's polygons start where its qhull triangulation
/// of the hull puts their first triangle, phyz's (parry's hull) elsewhere, so a regular 12-gon
/// or an overhanging face can end at another four of the same clipped polygon (the count and
/// the normal agree; checked). One other in [`EDGE_CHOICE`]: MuJoCo's EPA simplex decides which
/// edges of a touching vertex it tries against the other's face, and where two are within
/// MuJoCo's edge tolerance, the first in MuJoCo's order of the faces at that vertex (its qhull's;
/// `033`: MuJoCo keeps one point where another nearly parallel edge gives phyz two). And one cylinder
/// cap on a box (`063`) whose largest quadrilateral is a tie that MuJoCo's frame, rounded by its
/// own quaternion-to-matrix formula, breaks otherwise (the count and the normal agree; checked).
const QUADRILATERAL_START: &[&str] = &[
    "015", "019", "025", "027", "028", "039", "054", "055", "062", "066", "069", "075", "084", "085", "086", "091",
    "095", "100", "101", "102", "104", "063",
];
const EDGE_CHOICE: &[&str] = &["033"];

#[test]
fn contacts_between_boxes_meshes_and_cylinders_are_mujocos() {
    let mut failures = Vec::new();
    let mut differing = Vec::new();
    let cases = scenes(CASES);
    assert!(cases.len() >= 100, "{} cases", cases.len());
    for Scene { name, theirs, ours, xml } in &cases {
        let id = &name[..3];
        if EDGE_CHOICE.contains(&id) {
            differing.push(id.to_string());
            continue;
        }
        if ours.len() != theirs.len() {
            failures.push(format!("{name}: {} contacts, MuJoCo {}: {ours:?} / {theirs:?}", ours.len(), theirs.len()));
            continue;
        }
        if QUADRILATERAL_START.contains(&id) {
            // The same count; the same normal for every point.
            let normal = |c: &Contact| if c.geoms == theirs[0].geoms { c.normal } else { -c.normal };
            if ours.iter().any(|o| (normal(o) - theirs[0].normal).norm() > CLIPPED) {
                failures.push(format!("{name}: normals differ: {ours:?} / {theirs:?}"));
            }
        }
        let single_rim = theirs.len() == 1 && xml.contains("type=\"cylinder\"");
        let tol = if single_rim { RIM } else { Tolerance { depth: CLIPPED, normal: CLIPPED, point: CLIPPED } };
        if !among(theirs, ours, &tol) || !among(ours, theirs, &tol) {
            if QUADRILATERAL_START.contains(&id) {
                differing.push(id.to_string());
            } else {
                failures.push(format!("{name}: MuJoCo's {theirs:?} are not among phyz's {ours:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} scenes differ:\n{}", failures.len(), failures.join("\n"));
    // The known differences are what they say: each still differs.
    let known = QUADRILATERAL_START.len() + EDGE_CHOICE.len();
    assert_eq!(
        differing.len(),
        known,
        "known to differ: {QUADRILATERAL_START:?} {EDGE_CHOICE:?}; differ: {differing:?}"
    );
    assert!(cases.len() - known >= 95, "{} of {} scenes agree", cases.len() - known, cases.len());
}

/// The plane's contacts are hull vertices, in single precision as MuJoCo keeps them: a vertex
/// that MuJoCo's principal frame (an eigen-decomposition, rounded otherwise than phyz's) puts
/// on the neighbouring float is off by up to about 4e-9 at these meshes' 5 cm.
const VERTEX: f64 = 1e-8;

/// Scenes where MuJoCo splits a dodecahedron's face that points along its file frame's -x
/// half of the x-z plane (azimuth π) into two polygons: the rounding of its qhull triangles'
/// normals puts them at +π and at -π, in different bins. phyz's triangulation, parry's, rounds
/// otherwise, so it keeps the face whole and its largest quadrilateral drops a corner that
/// MuJoCo's part keeps. phyz's contacts are then some of MuJoCo's (checked).
const SPLIT_AT_SEAM: &[&str] = &["015", "027", "047", "129"];

#[test]
fn contacts_between_planes_and_meshes_are_mujocos() {
    let tol = Tolerance { depth: VERTEX, normal: CLIPPED, point: VERTEX };
    let cases = scenes(PLANE_MESH);
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let (mut failures, mut split) = (Vec::new(), Vec::new());
    for Scene { name, theirs, ours, .. } in &cases {
        let same = ours.len() == theirs.len() && among(theirs, ours, &tol) && among(ours, theirs, &tol);
        if SPLIT_AT_SEAM.contains(&&name[..3]) && !same && among(ours, theirs, &tol) && !ours.is_empty() {
            split.push(name);
        } else if !same {
            failures.push(format!("{name}: phyz {ours:?}\n  MuJoCo {theirs:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} scenes differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(split.len(), SPLIT_AT_SEAM.len(), "known to differ: {SPLIT_AT_SEAM:?}; differ: {split:?}");
}

/// A sphere against a cylinder: MuJoCo's arithmetic in another order (closest points,
/// projections on the axis), to rounding.
const PRIMITIVE: f64 = 1e-12;

/// Spheres against cylinders (beside the side, over a cap, past the rim, inside, at the
/// centre), and geoms whose centres or closest points coincide (spheres, a sphere on a
/// cylinder's or a capsule's axis, crossing capsules, turned or not), where MuJoCo's normal is
/// the cross product of the geoms' z axes.
#[test]
fn contacts_between_spheres_and_cylinders_are_mujocos() {
    let tol = Tolerance { depth: PRIMITIVE, normal: PRIMITIVE, point: PRIMITIVE };
    let cases = scenes(SPHERE_CYLINDER);
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter(|s| {
            s.ours.len() != s.theirs.len() || !among(&s.theirs, &s.ours, &tol) || !among(&s.ours, &s.theirs, &tol)
        })
        .map(|s| format!("{}: phyz {:?}\n  MuJoCo {:?}", s.name, s.ours, s.theirs))
        .collect();
    assert!(failures.is_empty(), "{} of {} scenes differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Scenes whose points differ from MuJoCo's (the same count and normal; checked to still
/// differ). `134`, `136`: a mesh box tilted across a lying capsule, where MuJoCo's points sit
/// off the capsule's axis by 1.1 times the nearest approach's direction (its own
/// `mj_geomDistance` gives phyz's direction; the factor holds to 5 digits in both and does not
/// depend on `ccd_tolerance`), the points 0.1 mm and the depths up to 1.5e-5 apart. `141`: a
/// capsule whose core is nearest a cylinder's curved rim, the points 1.0e-8 apart, which
/// `ccd_tolerance` does not move either. Unexplained.
const OFF_AXIS: &[&str] = &["134", "136", "141"];

/// Capsules resting on meshes and cylinders, flat, tilted within and beyond MuJoCo's edge
/// tolerance, standing on an end, some within a margin, lying across a table's edge, and mesh
/// boxes on a lying capsule: the core segment clipped to the face gives MuJoCo's points to
/// rounding ([`CLIPPED`]); a single contact of a round end or side is MuJoCo's EPA, stopped
/// within its `ccd_tolerance` ([`RIM`]).
#[test]
fn contacts_between_capsules_and_meshes_or_cylinders_are_mujocos() {
    let cases = scenes(CAPSULE_CONVEX);
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let differs = |s: &Scene| {
        let tol = if s.theirs.len() == 1 { RIM } else { Tolerance { depth: CLIPPED, normal: CLIPPED, point: CLIPPED } };
        s.ours.len() != s.theirs.len() || !among(&s.theirs, &s.ours, &tol) || !among(&s.ours, &s.theirs, &tol)
    };
    let (known, checked): (Vec<&Scene>, Vec<&Scene>) = cases.iter().partition(|s| OFF_AXIS.contains(&&s.name[..3]));
    for s in &known {
        assert!(differs(s), "{} now agrees: drop it from OFF_AXIS", s.name);
        assert_eq!(s.ours.len(), s.theirs.len(), "{}", s.name);
    }
    let failures: Vec<String> = checked
        .into_iter()
        .filter(|s| differs(s))
        .map(|s| format!("{}: phyz {:?}\n  MuJoCo {:?}", s.name, s.ours, s.theirs))
        .collect();
    assert!(failures.is_empty(), "{} of {} scenes differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Deep penetrations between meshes, boxes and cylinders: the single contact is MuJoCo's EPA
/// answer, which phyz finds by the same steps. Between boxes and meshes EPA ends exactly, and
/// the two agree to the meshes' frames (MuJoCo's principal axes from its Jacobi solver, about
/// 1e-8 off the exact ones: [`DEEP_EXACT`]); against a cylinder EPA stops within
/// `ccd_tolerance` of the curved side, where rounding can end it on a neighbouring face
/// ([`RIM`]), and the scenes asking for a tighter `ccd_tolerance` (1e-11) agree as much closer
/// ([`DEEP_TIGHT`]). Where MuJoCo's multi-contact adds points, they are its own to rounding but for
/// [`DEEP_FACE_ORDER`] and [`DEEP_CYLINDER`].
#[test]
fn deep_penetrations_are_mujocos() {
    let cases = scenes(DEEP_CONVEX);
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut failures = Vec::new();
    let mut differing = Vec::new();
    for s in &cases {
        let id = &s.name[..3];
        let cylinder = s.xml.contains("type=\"cylinder\"");
        let tight = s.name.ends_with("_tight");
        let tol = match (s.theirs.len(), cylinder) {
            (1, true) if tight => DEEP_TIGHT,
            (1, true) => RIM,
            (_, false) => DEEP_EXACT,
            _ => Tolerance { depth: CLIPPED, normal: CLIPPED, point: CLIPPED },
        };
        let differs =
            s.ours.len() != s.theirs.len() || !among(&s.theirs, &s.ours, &tol) || !among(&s.ours, &s.theirs, &tol);
        if DEEP_FACE_ORDER.contains(&id) || DEEP_CYLINDER.contains(&id) {
            assert!(differs, "{} now agrees: drop it from its list", s.name);
            differing.push(id);
        } else if differs {
            failures.push(format!("{}: phyz {:?}\n  MuJoCo {:?}", s.name, s.ours, s.theirs));
        }
    }
    assert!(failures.is_empty(), "{} of {} scenes differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(differing.len(), DEEP_FACE_ORDER.len() + DEEP_CYLINDER.len());
}

/// A cylinder's EPA at `ccd_tolerance` 1e-11: the depth to the mesh frames' 1e-8, the point
/// along a flat contact's ill-determined direction to about the square root of the tolerance.
const DEEP_TIGHT: Tolerance = Tolerance { depth: 1e-8, normal: 1e-7, point: 1e-6 };
/// Meshes and boxes in EPA's exact end: MuJoCo's mesh frames, good to about 1e-8.
const DEEP_EXACT: Tolerance = Tolerance { depth: 1e-7, normal: 1e-6, point: 1e-6 };
/// Deep box and mesh pairs whose multi-contact differs. `001`: two face pairs are aligned, and
/// MuJoCo clips the first in its order of the mesh's faces (its qhull's, which phyz's hull does
/// not reproduce), phyz the one most along the normal, here the other (both two points). `030`: MuJoCo clips an edge to a face where
/// phyz finds no aligned pair at EPA's face (not explained).
const DEEP_FACE_ORDER: &[&str] = &["001", "030"];
/// Deep pairs with a cylinder where MuJoCo 4 keeps two points and phyz one: MuJoCo 4.0.1 gives
/// a cylinder faces and edges for its multi-contact by a rule its 3.12 sources do not hold (the
/// rule phyz follows, measured on resting cylinders, finds none here).
const DEEP_CYLINDER: &[&str] = &["016", "034", "045"];

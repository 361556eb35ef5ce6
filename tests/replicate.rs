//! MuJoCo's `<replicate>`: copies placed by accumulated offsets and turns, names suffixed
//! (`sep`, then the copy's index zero-padded to the digits of `count`; an inner replicate's
//! suffix before an outer one's), and the tendons, actuators and sensors that reference a
//! copy's elements copied after the others. Expected values from MuJoCo 4.0.1 on
//! `tests/models/replicate.xml` (`mujoco.MjModel.from_xml_path`, `mj_forward`).

use phyz::Model;

fn model() -> Model<f64> {
    phyz::mjcf::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/replicate.xml")).expect("loads")
}

#[test]
fn copies_are_named_and_ordered_as_mujoco_names_and_orders_them() {
    let model = model();
    let names = |v: Vec<&str>| v.into_iter().map(str::to_string).collect::<Vec<_>>();
    let bodies: Vec<String> = model.bodies().iter().map(|b| b.name.clone()).collect();
    assert_eq!(bodies, names(vec!["world", "b_0", "b_1", "p"]));
    let tendons: Vec<String> = model.tendons().iter().map(|t| t.name.clone()).collect();
    assert_eq!(tendons, names(vec!["plain", "t_0", "t_1"]));
    let actuators: Vec<String> = model.actuators().iter().map(|a| a.name.clone()).collect();
    assert_eq!(actuators, names(vec!["pm", "m_0", "tm_0", "m_1", "tm_1"]));
    let sensors: Vec<String> = model.sensors().iter().map(|s| s.name.clone()).collect();
    assert_eq!(sensors, names(vec!["ps", "js_0", "", "js_1", ""]));
    let geoms: Vec<String> = (0..).map_while(|k| model.geom(k)).map(|g| g.name.clone()).collect();
    let rings: Vec<String> =
        (0..12).flat_map(|outer| (0..2).map(move |inner| format!("ring-{inner}{outer:02}"))).collect();
    assert_eq!(geoms[..24], rings[..]);
    assert_eq!(geoms[24..], names(vec!["g_0", "g_1", "pg"])[..]);
}

#[test]
fn copies_are_placed_as_mujoco_places_them() {
    let model = model();
    let geom = |name: &str| (0..).map_while(|k| model.geom(k)).find(|g| g.name == name).expect("a ring");
    // World geoms: their pose is their world pose. MuJoCo's geom_xpos and geom_xmat (rows).
    let cases = [
        (
            "ring-011",
            [0.056698729810778115, 0.19820508075688764, 0.0],
            [0.8660254037844384, 0.5000000000000004, 0.0, -0.5000000000000004, 0.8660254037844384, 0.0, 0.0, 0.0, 1.0],
        ),
        (
            "ring-111",
            [0.056698729810778115, 0.19820508075688764, 0.3],
            [
                0.8660254037844384,
                0.49240387650610457,
                -0.08682408883346525,
                -0.5000000000000006,
                0.8528685319524429,
                -0.15038373318043521,
                0.0,
                0.17364817766693033,
                0.9848077530122081,
            ],
        ),
    ];
    // Turns composed in a different order from MuJoCo's: agreement to rounding.
    const TOLERANCE: f64 = 1e-14;
    for (name, pos, mat) in cases {
        let g = geom(name);
        let r = g.quat.to_rotation_matrix();
        for k in 0..3 {
            assert!((g.pos[k] - pos[k]).abs() < TOLERANCE, "{name} pos {:?} against {pos:?}", g.pos);
            for l in 0..3 {
                assert!((r[(k, l)] - mat[3 * k + l]).abs() < TOLERANCE, "{name} orientation {r} against {mat:?}");
            }
        }
    }
}

/// A tendon and an actuator referencing the contents of a nested replicate: copied once per
/// copy of copies, in MuJoCo 4.0.1's order and names.
#[test]
fn references_into_a_nested_replicate_are_copied_per_copy_of_copies() {
    let xml = r#"<mujoco><worldbody><site name="top" pos="0 0 2"/>
        <replicate count="2" offset="1 0 0" sep="o"><replicate count="3" offset="0 1 0" sep="i">
          <body name="b" pos="0 0 1"><joint name="j" type="slide"/><geom size=".1"/><site name="s"/></body>
        </replicate></replicate></worldbody>
      <tendon><spatial name="t"><site site="top"/><site site="s"/></spatial></tendon>
      <actuator><motor name="m" joint="j"/></actuator></mujoco>"#;
    let model = phyz::mjcf::parse(xml, "nested.xml").expect("loads");
    let copies = ["i0o0", "i1o0", "i2o0", "i0o1", "i1o1", "i2o1"];
    let tendons: Vec<String> = model.tendons().iter().map(|t| t.name.clone()).collect();
    let actuators: Vec<String> = model.actuators().iter().map(|a| a.name.clone()).collect();
    assert_eq!(tendons, copies.map(|c| format!("t{c}")));
    assert_eq!(actuators, copies.map(|c| format!("m{c}")));
}

//! Malformed or unsupported MJCF: each is a typed error naming file, line and element, never a
//! panic; and a fuzz pass over mutated real model files.

use phyz::mjcf::{self, MjcfError, MjcfErrorKind};
use phyz::model::Term;
use phyz::{ModelError, step};
use proptest::prelude::*;

fn parse(xml: &str) -> Result<phyz::Model<f64>, MjcfError> {
    mjcf::parse(xml, "test.xml")
}

fn error(xml: &str) -> MjcfError {
    parse(xml).expect_err("the model must be rejected")
}

/// A small valid model to break in one place at a time.
const BASE: &str = r#"<mujoco model="base">
  <default>
    <joint damping="0.1"/>
    <default class="arm"><joint armature="0.01"/></default>
  </default>
  <worldbody>
    <body name="b1" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="j1" gear="2"/>
  </actuator>
</mujoco>"#;

#[test]
fn the_base_model_loads() {
    let model = parse(BASE).expect("valid");
    assert_eq!((model.nq(), model.nv(), model.nu()), (1, 1, 1));
    assert_eq!(model.joints()[0].damping, 0.1);
}

#[test]
fn truncated_xml_names_line_and_column() {
    // Cut off: the root element is never closed, which the parser places at the root.
    let truncated = &BASE[..BASE.find("<actuator>").expect("present") + 12];
    let e = error(truncated);
    assert!(matches!(e.kind, MjcfErrorKind::Xml(_)), "{e}");
    assert!(e.location.line >= 1 && e.location.file.ends_with("test.xml"), "{e}");
    // Broken mid-file: placed at the broken tag.
    let e = error(&BASE.replace(r#"size="0.03"/>"#, r#"size="0.03/>"#));
    assert!(matches!(e.kind, MjcfErrorKind::Xml(_)), "{e}");
    assert!(e.location.line >= 9 && e.location.column > 1, "{e}");
}

#[test]
fn unknown_joint_type_names_the_joint() {
    let e = error(&BASE.replace(r#"type="hinge""#, r#"type="screw""#));
    assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains("screw")), "{e}");
    assert_eq!((e.location.element.as_str(), e.location.line), ("joint", 8), "{e}");
}

#[test]
fn missing_default_class_names_the_element() {
    let e = error(&BASE.replace(r#"<joint name="j1""#, r#"<joint class="leg" name="j1""#));
    assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains("`leg`")), "{e}");
    assert_eq!((e.location.element.as_str(), e.location.line), ("joint", 8), "{e}");
    // An existing class loads, and its defaults apply.
    let model = parse(&BASE.replace(r#"<joint name="j1""#, r#"<joint class="arm" name="j1""#)).expect("valid");
    assert_eq!((model.joints()[0].armature, model.joints()[0].damping), (0.01, 0.1));
}

#[test]
fn negative_mass_is_an_error() {
    let geom_mass = error(&BASE.replace(r#"size="0.03"/>"#, r#"size="0.03" mass="-2"/>"#));
    assert_eq!((geom_mass.location.element.as_str(), geom_mass.location.line), ("geom", 9), "{geom_mass}");
    let inertial = BASE.replace(
        r#"<geom type="capsule""#,
        r#"<inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/><geom type="capsule""#,
    );
    let e = error(
        &inertial.replace("<mujoco model=\"base\">", "<mujoco model=\"base\"><compiler inertiafromgeom=\"false\"/>"),
    );
    assert_eq!(e.location.element, "inertial", "{e}");
}

#[test]
fn actuator_naming_a_missing_joint_is_an_error() {
    let e = error(&BASE.replace(r#"<motor joint="j1""#, r#"<motor joint="elbow""#));
    assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains("elbow")), "{e}");
    assert_eq!((e.location.element.as_str(), e.location.line), ("motor", 13), "{e}");
}

#[test]
fn unsupported_physics_is_an_error_not_dropped() {
    let spring = error(&BASE.replace(r#"axis="0 1 0""#, r#"axis="0 1 0" springyield="0.5""#));
    assert!(matches!(spring.kind, MjcfErrorKind::Unsupported(_)), "{spring}");
    let friction = error(&BASE.replace(r#"axis="0 1 0""#, r#"axis="0 1 0" frictionloss="-1""#));
    assert!(matches!(friction.kind, MjcfErrorKind::Model(ModelError::InvalidJoint { .. })), "{friction}");
    // Connects and welds: what they name must exist, a connect needs its anchor, a body is not
    // tied to itself; each named at its element.
    let tie = |e: &str| error(&BASE.replace("<actuator>", &format!("<equality>{e}</equality><actuator>")));
    let no_anchor = tie(r#"<connect body1="b1"/>"#);
    assert!(matches!(no_anchor.kind, MjcfErrorKind::Invalid(ref m) if m.contains("anchor")), "{no_anchor}");
    assert_eq!(no_anchor.location.element, "connect", "{no_anchor}");
    let unknown = tie(r#"<weld body1="b1" body2="nowhere"/>"#);
    assert!(
        matches!(unknown.kind, MjcfErrorKind::Model(ModelError::InvalidEquality { ref reason, .. }) if reason.contains("nowhere")),
        "{unknown}"
    );
    assert_eq!(unknown.location.element, "weld", "{unknown}");
    let site = tie(r#"<connect site1="tip" site2="b1"/>"#);
    assert!(
        matches!(site.kind, MjcfErrorKind::Model(ModelError::InvalidEquality { ref reason, .. }) if reason.contains("tip")),
        "{site}"
    );
    let itself = tie(r#"<weld body1="b1" body2="b1"/>"#);
    assert!(
        matches!(itself.kind, MjcfErrorKind::Model(ModelError::InvalidEquality { ref reason, .. }) if reason.contains("itself")),
        "{itself}"
    );
    let relpose = tie(r#"<weld body1="b1" relpose="0 0 0 nan 0 0 0"/>"#);
    assert!(
        matches!(relpose.kind, MjcfErrorKind::Model(ModelError::InvalidEquality { .. }) | MjcfErrorKind::Invalid(_)),
        "{relpose}"
    );
    let distance = tie(r#"<distance geom1="a" geom2="b"/>"#);
    assert!(matches!(distance.kind, MjcfErrorKind::Unsupported(ref m) if m.contains("distance")), "{distance}");
    let missing =
        error(&BASE.replace("<actuator>", "<equality><joint name=\"tie\" joint1=\"j9\"/></equality><actuator>"));
    assert!(matches!(missing.kind, MjcfErrorKind::Model(ModelError::InvalidEquality { .. })), "{missing}");
    assert_eq!(missing.location.element, "joint", "{missing}");
    let unknown_attribute = error(&BASE.replace(r#"gear="2""#, r#"gear="2" gearz="3""#));
    assert!(
        matches!(unknown_attribute.kind, MjcfErrorKind::Invalid(ref m) if m.contains("gearz")),
        "{unknown_attribute}"
    );
    let adhesion = error(&BASE.replace(r#"<motor joint="j1" gear="2"/>"#, r#"<adhesion body="b1" ctrlrange="0 1"/>"#));
    assert!(matches!(adhesion.kind, MjcfErrorKind::Unsupported(_)), "{adhesion}");
    assert_eq!(adhesion.location.element, "adhesion", "{adhesion}");
    // MuJoCo's contact dimensions are 1, 3, 4 and 6: any other is named at the geom.
    for condim in ["2", "5", "0"] {
        let e = error(&BASE.replace(r#"size="0.03"/>"#, &format!(r#"size="0.03" condim="{condim}"/>"#)));
        assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains(condim)), "{e}");
        assert_eq!(e.location.element, "geom", "{e}");
    }
}

#[test]
fn contact_options_are_read_and_checked() {
    use phyz::model::Cone;
    let with = |option: &str| BASE.replace("<worldbody>", &format!("<option {option}/><worldbody>"));
    let model = parse(&with(r#"cone="elliptic" impratio="10""#)).expect("valid");
    assert_eq!((model.contact.cone, model.contact.impratio), (Cone::Elliptic, 10.0));
    assert_eq!(parse(BASE).expect("valid").contact.cone, Cone::Pyramidal, "MuJoCo's default cone");
    let cone = error(&with(r#"cone="round""#));
    assert!(matches!(cone.kind, MjcfErrorKind::Invalid(ref m) if m.contains("round")), "{cone}");
    let impratio = error(&with(r#"impratio="0""#));
    assert!(matches!(impratio.kind, MjcfErrorKind::Model(ModelError::InvalidOption { .. })), "{impratio}");
}

/// Explicit contact pairs: what they name must exist, once; MuJoCo's condims only; anisotropic
/// friction (which MuJoCo's five friction numbers allow, and which a pair's partial `friction`
/// attribute gives) is refused rather than made isotropic; each error at its `<pair>`.
#[test]
fn contact_pair_errors_name_the_pair() {
    let with = |pair: &str| {
        BASE.replace(r#"<geom type="capsule""#, r#"<geom name="arm" type="capsule""#)
            .replace("<worldbody>", r#"<worldbody><geom name="floor" type="plane" size="1 1 0.1"/>"#)
            .replace("<actuator>", &format!("<contact>{pair}</contact><actuator>"))
    };
    let model = parse(&with(r#"<pair geom1="arm" geom2="floor" condim="4" margin="0.01"/>"#)).expect("valid");
    let pair = &model.contact_pairs()[0];
    assert_eq!((pair.geoms, pair.condim, pair.margin), ([0, 1], 4, 0.01), "{pair:?}");
    let cases = [
        (r#"<pair geom1="arm" geom2="nowhere"/>"#, "nowhere"),
        (r#"<pair geom1="arm" geom2="floor" condim="2"/>"#, "condim"),
        (r#"<pair name="rough" geom1="arm" geom2="floor" friction="0.5"/>"#, "anisotropic"),
    ];
    for (pair, reason) in cases {
        let e = error(&with(pair));
        assert!(
            matches!(e.kind, MjcfErrorKind::Model(ModelError::InvalidPair { reason: ref r, .. }) if r.contains(reason)),
            "{e}"
        );
        assert_eq!(e.location.element, "pair", "{e}");
    }
    // A geom paired with itself loads, as in MuJoCo, and never touches.
    parse(&with(r#"<pair geom1="arm" geom2="arm"/>"#)).expect("valid");
    let missing = error(&with(r#"<pair geom1="arm"/>"#));
    assert!(matches!(missing.kind, MjcfErrorKind::Invalid(ref m) if m.contains("geom2")), "{missing}");
}

#[test]
fn model_level_errors_are_placed_at_their_element() {
    // A body whose inertia breaks the triangle inequality: found by the model checks, reported
    // at the body.
    let bad = BASE.replace(
        r#"<geom type="capsule""#,
        r#"<inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/><geom type="capsule""#,
    );
    let e =
        error(&bad.replace("<mujoco model=\"base\">", "<mujoco model=\"base\"><compiler inertiafromgeom=\"false\"/>"));
    assert!(matches!(e.kind, MjcfErrorKind::Model(ModelError::InvalidInertia { .. })), "{e}");
    assert_eq!(e.location.element, "body", "{e}");
}

#[test]
fn missing_file_is_an_io_error() {
    let e = mjcf::load("does/not/exist.xml").expect_err("no such file");
    assert!(matches!(e.kind, MjcfErrorKind::Io(_)), "{e}");
}

/// Small edits of a real model: cut a span, duplicate one, or overwrite a byte.
fn mutate(text: &str, kind: u8, at: usize, len: usize, byte: u8) -> String {
    let bytes = text.as_bytes();
    let at = at % bytes.len();
    let end = (at + len % 64).min(bytes.len());
    let mut out = bytes.to_vec();
    match kind % 4 {
        0 => {
            out.drain(at..end);
        }
        1 => {
            let span = bytes[at..end].to_vec();
            out.splice(at..at, span);
        }
        2 => out[at] = b" <>/=\"0123456789.-aeEx"[byte as usize % 22],
        _ => out.truncate(at),
    }
    String::from_utf8_lossy(&out).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn mutated_models_never_panic(file in 0usize..14, kind in any::<u8>(), at in any::<usize>(), len in any::<usize>(), byte in any::<u8>()) {
        let mut paths: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/models/gymnasium"))
            .expect("gymnasium models")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "xml"))
            .collect();
        paths.sort();
        let path = &paths[file % paths.len()];
        let text = std::fs::read_to_string(path).expect("readable");
        let mutated = mutate(&text, kind, at, len, byte);
        if let Ok(model) = mjcf::parse(&mutated, path) {
            // Whatever loads must step or refuse with an error.
            let _ = step(&model, &model.default_state(), &vec![0.0; model.nu()]);
        }
    }
}

#[test]
fn includes_are_expanded_in_place() {
    let dir = std::env::temp_dir().join(format!("phyz-include-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("arm.xml"),
        r#"<mujoco><body name="arm" pos="0 0 1"><joint name="shoulder" axis="0 1 0"/><geom size="0.1"/></body></mujoco>"#,
    )
    .expect("write");
    std::fs::write(
        dir.join("main.xml"),
        r#"<mujoco><worldbody><include file="arm.xml"/></worldbody><actuator><motor joint="shoulder"/></actuator></mujoco>"#,
    )
    .expect("write");
    let model = mjcf::load(dir.join("main.xml")).expect("loads with its include");
    assert_eq!((model.bodies()[1].name.as_str(), model.nv(), model.nu()), ("arm", 1, 1));
    std::fs::write(dir.join("broken.xml"), r#"<mujoco><worldbody><include file="missing.xml"/></worldbody></mujoco>"#)
        .expect("write");
    let e = mjcf::load(dir.join("broken.xml")).expect_err("missing include");
    assert!(matches!(e.kind, MjcfErrorKind::Io(ref m) if m.contains("missing.xml")), "{e}");
    assert_eq!(e.location.element, "include", "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn keyframes_and_flags_are_read() {
    let with_key = BASE.replace(
        "</mujoco>",
        r#"<keyframe><key name="bent" qpos="0.5" ctrl="0.2"/></keyframe><option><flag gravity="disable"/></option></mujoco>"#,
    );
    let model = parse(&with_key).expect("valid");
    let (state, ctrl) = model.keyframe_state(0).expect("one keyframe");
    assert_eq!((state.qpos[0], ctrl[0], model.keyframes()[0].name.as_str()), (0.5, 0.2, "bent"));
    assert!(!model.enabled.gravity);
    let wrong = error(&BASE.replace("</mujoco>", r#"<keyframe><key qpos="0.5 0.1"/></keyframe></mujoco>"#));
    assert_eq!(wrong.location.element, "key", "{wrong}");
}

#[test]
fn mesh_assets_that_cannot_be_read_name_the_mesh_element() {
    let with_mesh = |asset: &str| {
        BASE.replace("<worldbody>", &format!("<asset>{asset}</asset><worldbody>"))
            .replace(r#"<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>"#, r#"<geom type="mesh" mesh="m"/>"#)
    };
    // A missing file: the message names the file, the location the <mesh> element.
    let missing = error(&with_mesh(r#"<mesh name="m" file="nowhere.stl"/>"#));
    assert_eq!(missing.location.element, "mesh", "{missing}");
    assert!(missing.to_string().contains("nowhere.stl"), "{missing}");
    // An extension neither STL nor OBJ.
    let format = error(&with_mesh(r#"<mesh name="m" file="shape.ply"/>"#));
    assert!(format.to_string().contains("shape.ply"), "{format}");
    // Inline vertex data loads (its hull, without faces); generated meshes are not read yet:
    // unsupported, not ignored.
    parse(&with_mesh(r#"<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>"#)).expect("an inline tetrahedron");
    let builtin = error(&with_mesh(r#"<mesh name="m" builtin="sphere" params="3"/>"#));
    assert!(matches!(builtin.kind, MjcfErrorKind::Unsupported(_)), "{builtin}");
    // A geom naming a mesh no asset defines.
    let unknown = error(&with_mesh(r#"<mesh name="other" file="tests/models/meshes/block.stl"/>"#));
    assert_eq!(unknown.location.element, "geom", "{unknown}");
}

/// A survey (what `phyz info` lists) sets each unsupported part aside and goes on: every one is
/// reported at its element, an attribute inherited from a default class is taken out of the
/// class, and the rest of the model loads.
#[test]
fn a_survey_lists_every_unsupported_part_and_loads_the_rest() {
    let dir = std::env::temp_dir().join(format!("phyz-survey-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let xml = r#"<mujoco>
  <default><default class="fluid"><geom fluidshape="ellipsoid"/></default></default>
  <asset><hfield name="ground" nrow="2" ncol="2" size="1 1 0.1 0.1" content_type="image/png"/></asset>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ja" type="hinge" axis="0 1 0" springyield="1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" class="fluid"/>
      <site name="s1"/>
      <body name="b" pos="0.3 0 0">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05"/>
        <site name="s2"/>
      </body>
    </body>
  </worldbody>
  <equality><flex flex="cloth"/></equality>
  <actuator><motor joint="jb"/><general joint="ja" dyntype="user"/></actuator>
</mujoco>"#;
    let path = dir.join("survey.xml");
    std::fs::write(&path, xml).expect("written");
    let survey = mjcf::survey(&path);
    std::fs::remove_dir_all(&dir).ok();
    let found: Vec<(String, u32)> =
        survey.unsupported.iter().map(|e| (e.location.element.clone(), e.location.line)).collect();
    for e in &survey.unsupported {
        assert!(matches!(e.kind, MjcfErrorKind::Unsupported(_)), "{e}");
    }
    let expected = [("hfield", 3), ("joint", 6), ("geom", 7), ("flex", 16), ("general", 17)];
    for (element, line) in expected {
        assert!(found.contains(&(element.to_string(), line)), "{element} at line {line} missing from {found:?}");
    }
    assert_eq!(found.len(), expected.len(), "{found:?}");
    // The rest loads: the general actuator without its refused dynamics among it.
    let model = survey.model.expect("the rest loads");
    assert_eq!((model.nv(), model.nu()), (2, 2));
    // A plain load still stops at the first.
    assert!(matches!(
        mjcf::parse(xml, "survey.xml").map(|_| ()),
        Err(MjcfError { kind: MjcfErrorKind::Unsupported(_), .. })
    ));
}

/// The attribute table's three treatments, and what is not in it: an attribute MuJoCo's schema
/// knows but phyz does not accept is refused by name, one MuJoCo does not know is an error (as
/// MuJoCo 4 refuses `exactmeshinertia`), each at its element, in default classes too.
#[test]
fn attributes_are_compiled_set_aside_or_refused_by_name() {
    let unsupported = |xml: &str, attribute: &str, element: &str| {
        let e = error(xml);
        assert!(
            matches!(e.kind, MjcfErrorKind::Unsupported(ref u) if u.attribute.as_deref() == Some(attribute)),
            "{attribute}: {e}"
        );
        assert_eq!(e.location.element, element, "{e}");
    };
    let on_joint = |extra: &str| BASE.replace(r#"axis="0 1 0""#, &format!(r#"axis="0 1 0" {extra}"#));
    let in_option = |inner: &str| BASE.replace("</mujoco>", &format!("<option {inner}</option></mujoco>"));
    // Known to MuJoCo, not accepted by phyz: refused by name.
    unsupported(&on_joint(r#"springyield="1""#), "springyield", "joint");
    // Accepted but refused off its default: on the element or through a class.
    unsupported(&in_option(r#"actuatorgroupdisable="3">"#), "actuatorgroupdisable", "option");
    unsupported(&in_option(r#"><flag multiccd="disable"/>"#), "multiccd", "flag");
    unsupported(&in_option(r#"><flag sleep="enable"/>"#), "sleep", "flag");
    unsupported(
        &BASE
            .replace(r#"<joint armature="0.01"/>"#, r#"<geom shellinertia="true"/>"#)
            .replace(r#"size="0.03"/>"#, r#"size="0.03" class="arm"/>"#),
        "shellinertia",
        "geom",
    );
    // At its default, or of no effect on the dynamics: loads.
    for ok in [
        on_joint(r#"springdamper="0 0" group="2""#),
        in_option(r#"iterations="5"><flag warmstart="disable" multiccd="enable"/>"#),
    ] {
        parse(&ok).expect("loads");
    }
    // Unknown to MuJoCo 4: an error, whether on an element or in a default class.
    let unknown = |xml: &str, name: &str| {
        let e = error(xml);
        assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains(name)), "{e}");
    };
    unknown(&BASE.replace("<worldbody>", r#"<compiler exactmeshinertia="true"/><worldbody>"#), "exactmeshinertia");
    unknown(&in_option(r#"><flag passive="disable"/>"#), "passive");
    unknown(&BASE.replace(r#"<joint damping="0.1"/>"#, r#"<joint damping="0.1" dampin="2"/>"#), "dampin");
    // A primitive fitted to a mesh is refused, not read as the primitive alone.
    let fitted = r#"<mujoco><asset><mesh name="m" file="tests/models/meshes/block.stl"/></asset>
      <worldbody><body><freejoint/><geom type="box" size="0.1 0.1 0.1" mesh="m"/></body></worldbody></mujoco>"#;
    let e = mjcf::parse(fitted, concat!(env!("CARGO_MANIFEST_DIR"), "/model.xml")).expect_err("refused");
    assert!(matches!(e.kind, MjcfErrorKind::Unsupported(ref u) if u.attribute.as_deref() == Some("mesh")), "{e}");
    // A mesh a plugin makes (no file, no vertices) is refused as such, not taken for a malformed mesh.
    let made = r#"<mujoco><asset><mesh name="m"><plugin instance="torus"/></mesh></asset>
      <worldbody><body><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>"#;
    let e = mjcf::parse(made, concat!(env!("CARGO_MANIFEST_DIR"), "/model.xml")).expect_err("refused");
    assert!(matches!(e.kind, MjcfErrorKind::Unsupported(ref u) if u.what.contains("plugin")), "{e}");
    assert_eq!(e.location.element, "mesh", "{e}");
}

/// `filterparent="disable"` lets a body touch its parent, as in MuJoCo.
#[test]
fn the_filterparent_flag_is_read() {
    let xml = |flag: &str| {
        format!(
            r#"<mujoco><option><flag filterparent="{flag}"/></option><worldbody>
              <body name="a"><freejoint/><geom size="0.1"/>
                <body name="b"><joint axis="0 1 0"/><geom size="0.1"/></body></body></worldbody></mujoco>"#
        )
    };
    let touching = |flag: &str| {
        let model = parse(&xml(flag)).expect("loads");
        let bodies = model.bodies();
        let (a, b) = (&bodies[1].geoms[0], &bodies[2].geoms[0]);
        phyz::collision::can_collide(&model, 1, a, 2, b)
    };
    assert!(!touching("enable"));
    assert!(touching("disable"));
}

/// A flat mesh (no volume: no hull, no mass) loads only where MuJoCo compiles it: on a visual
/// geom that `discardvisual` leaves out of a body with its own inertial. Without
/// `discardvisual`, it is an error at the mesh, as in MuJoCo (which cannot weigh it); weighed as
/// a shell (by its area) it loads, its visual geom left out, and a geom that collides with it is
/// an error, as in MuJoCo 4.0.1.
#[test]
fn a_flat_visual_mesh_loads_only_when_discarded_or_a_shell() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/compiler_options.xml");
    let text = std::fs::read_to_string(path).expect("readable");
    let model = mjcf::parse(&text, path).expect("loads with discardvisual");
    let plate = model.body_id("plate").expect("plate");
    assert!(model.bodies()[plate].geoms.is_empty());
    let kept = text.replace(r#"discardvisual="true""#, r#"discardvisual="false""#);
    let e = mjcf::parse(&kept, path).expect_err("a flat mesh that is kept");
    assert_eq!(e.location.element, "mesh", "{e}");
    assert!(e.to_string().contains("decal"), "{e}");
    let shell = kept.replace(r#"file="decal.stl"/>"#, r#"file="decal.stl" inertia="shell"/>"#);
    assert_ne!(shell, kept, "the decal's mesh element");
    let model = mjcf::parse(&shell, path).expect("a flat shell on a visual geom loads");
    assert!(model.bodies()[model.body_id("plate").expect("plate")].geoms.is_empty());
    let colliding = shell.replace(r#"mesh="decal" contype="0" conaffinity="0""#, r#"mesh="decal""#);
    assert_ne!(colliding, shell, "the decal's geom");
    let e = mjcf::parse(&colliding, path).expect_err("a flat mesh that collides");
    assert_eq!(e.location.element, "mesh", "{e}");
}

/// MuJoCo's `limited="auto"` rule: a range acts when it has lo < hi (`0 0` is no range, and
/// neither is a reversed one); a range that is made to act must have lo < hi.
#[test]
fn ranges_act_by_mujocos_auto_rule() {
    let joint = |attributes: &str| BASE.replace(r#"axis="0 1 0""#, &format!(r#"axis="0 1 0" {attributes}"#));
    let range = |attributes: &str| parse(&joint(attributes)).map(|m| m.joints()[0].range);
    assert_eq!(range(r#"range="0 0""#).expect("loads"), None);
    assert_eq!(range(r#"range="1 -1""#).expect("loads"), None);
    assert!(range(r#"range="-1 1""#).expect("loads").is_some());
    assert!(range(r#"limited="true" range="1 -1""#).is_err());
    assert!(range(r#"limited="true""#).is_err());
    let force = |attributes: &str| parse(&joint(attributes)).map(|m| m.joints()[0].actuator_force_range);
    assert_eq!(force(r#"actuatorfrcrange="-2 3""#).expect("loads"), Some([-2.0, 3.0]));
    assert_eq!(force(r#"actuatorfrclimited="false" actuatorfrcrange="-2 3""#).expect("loads"), None);
    assert!(force(r#"actuatorfrclimited="true" actuatorfrcrange="0 0""#).is_err());
}

/// `inheritrange`: a position servo's control range (an intvelocity's activation range) is its
/// target's range about the middle, scaled (hinge ranges in degrees become radians), as MuJoCo
/// compiles tests/models/inheritrange.xml.
#[test]
fn inherited_ranges_are_the_targets_scaled() {
    let model = mjcf::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/inheritrange.xml")).expect("loads");
    let degrees = std::f64::consts::PI / 180.0;
    let about = |lo: f64, hi: f64, factor: f64| {
        let (mean, radius) = ((hi + lo) / 2.0, (hi - lo) / 2.0 * factor);
        [mean - radius, mean + radius]
    };
    let expected_ctrl = [
        Some(about(-30.0 * degrees, 60.0 * degrees, 1.0)),
        Some(about(-0.05, 0.1, 0.8)),
        Some(about(-0.5, 0.8, 1.2)),
        None,
    ];
    for (actuator, expected) in model.actuators().iter().zip(expected_ctrl) {
        match (actuator.ctrl_range, expected) {
            (Some([a, b]), Some([c, d])) => assert!((a - c).abs() < 1e-15 && (b - d).abs() < 1e-15, "{a} {b}"),
            (got, want) => assert_eq!(got, want),
        }
    }
    let [lo, hi] = model.actuators()[3].act_range.expect("an activation range");
    let [c, d] = about(-degrees, 100.0 * degrees, 0.5);
    assert!((lo - c).abs() < 1e-15 && (hi - d).abs() < 1e-15, "{lo} {hi}");
}

/// MuJoCo's schema per element, and its one default actuator per class: an attribute MuJoCo
/// does not give that element is an error (`<motor kp>`), and an actuator whose class shaped
/// its default actuator as another kind is refused by name, where MuJoCo's numbers would start
/// from that shape (a motor, which sets everything it reads, is not).
#[test]
fn actuator_attributes_follow_mujocos_schema_and_default_actuator() {
    let motor_kp = error(&BASE.replace(r#"<motor joint="j1" gear="2"/>"#, r#"<motor joint="j1" kp="5"/>"#));
    assert!(matches!(motor_kp.kind, MjcfErrorKind::Invalid(ref m) if m.contains("kp")), "{motor_kp}");
    let with_default = |default: &str, actuator: &str| {
        BASE.replace(r#"<joint damping="0.1"/>"#, &format!(r#"<joint damping="0.1"/>{default}"#))
            .replace(r#"<motor joint="j1" gear="2"/>"#, actuator)
    };
    // A shortcut under a class another kind of shortcut shaped starts from MuJoCo's plain
    // record (as MuJoCo 4.0.1; the general rule: tests/actuator_records.rs).
    let terms = |xml: &str| {
        let model = parse(xml).expect("loads");
        (model.actuators()[0].gain, model.actuators()[0].bias)
    };
    let mixed = terms(&with_default(r#"<position kp="7" kv="2"/>"#, r#"<velocity joint="j1"/>"#));
    assert_eq!(mixed, (Term::Affine([1.0, 0.0, 0.0]), Term::Affine([0.0, 0.0, -1.0])));
    let reset = terms(&with_default(r#"<position kp="7"/><motor ctrlrange="-1 1"/>"#, r#"<position joint="j1"/>"#));
    assert_eq!(reset, (Term::Affine([1.0, 0.0, 0.0]), Term::Affine([0.0, -1.0, 0.0])));
    // The same kind, or a motor, or shapeless defaults of another kind: as MuJoCo compiles them.
    let same = parse(&with_default(r#"<position kp="7" kv="2"/>"#, r#"<position joint="j1"/>"#)).expect("loads");
    assert_eq!(
        (same.actuators()[0].gain, same.actuators()[0].bias),
        (Term::Affine([7.0, 0.0, 0.0]), Term::Affine([0.0, -7.0, -2.0]))
    );
    parse(&with_default(r#"<position kp="7"/>"#, r#"<motor joint="j1"/>"#)).expect("a motor");
    parse(&with_default(r#"<motor ctrlrange="-1 1"/>"#, r#"<position joint="j1" kp="3"/>"#)).expect("loads");
    // `inheritrange` with a written control range is an error, as in MuJoCo.
    let both = error(
        &BASE
            .replace(r#"<motor joint="j1" gear="2"/>"#, r#"<position joint="j1" ctrlrange="-1 1" inheritrange="1"/>"#)
            .replace(r#"type="hinge" axis="0 1 0""#, r#"type="hinge" axis="0 1 0" range="-10 10""#),
    );
    assert!(matches!(both.kind, MjcfErrorKind::Invalid(ref m) if m.contains("inheritrange")), "{both}");
}

/// Default-class patterns where phyz computes what MuJoCo does, and which must load: a class
/// whose `<general>` sets only the gain and bias types under a nested `<position>` (as
/// Menagerie's Stretch), a class's `inheritrange` under a written `ctrlrange` (the written one
/// wins), a `<general>` under a class's `<position>`, and an attribute on a default child that
/// an included file holds.
#[test]
fn default_actuator_patterns_mujoco_compiles_alike_load() {
    let with_default = |default: &str, actuator: &str| {
        BASE.replace(r#"<joint damping="0.1"/>"#, &format!(r#"<joint damping="0.1"/>{default}"#))
            .replace(r#"<motor joint="j1" gear="2"/>"#, actuator)
            .replace(r#"type="hinge" axis="0 1 0""#, r#"type="hinge" axis="0 1 0" range="-10 10""#)
    };
    let nested = with_default(
        r#"<general biastype="affine"/><default class="head"><position kp="10"/></default>"#,
        r#"<position class="head" joint="j1"/>"#,
    );
    let model = parse(&nested).expect("loads");
    assert_eq!(
        (model.actuators()[0].gain, model.actuators()[0].bias),
        (Term::Affine([10.0, 0.0, 0.0]), Term::Affine([0.0, -10.0, 0.0]))
    );
    let written = with_default(r#"<position inheritrange="1"/>"#, r#"<position joint="j1" ctrlrange="-0.5 0.5"/>"#);
    assert_eq!(parse(&written).expect("loads").actuators()[0].ctrl_range, Some([-0.5, 0.5]));
    // A `<general>` under a class a `<position>` shaped is that servo.
    let shaped = parse(&with_default(r#"<position ctrlrange="-1 1"/>"#, r#"<general joint="j1"/>"#)).expect("loads");
    let actuator = &shaped.actuators()[0];
    assert_eq!(
        (actuator.gain, actuator.bias, actuator.ctrl_range),
        (Term::Affine([1.0, 0.0, 0.0]), Term::Affine([0.0, -1.0, 0.0]), Some([-1.0, 1.0]))
    );
    // A default class's children from an included file (whose root is a `<mujoco>`).
    let dir = std::env::temp_dir().join(format!("phyz-included-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("d.xml"), r#"<mujoco><tendon width="0.01"/><joint damping="0.2"/></mujoco>"#)
        .expect("written");
    let main = BASE.replace(r#"<joint damping="0.1"/>"#, r#"<include file="d.xml"/>"#);
    let loaded = mjcf::parse(&main, dir.join("main.xml"));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(loaded.expect("loads").joints()[0].damping, 0.2);
}

/// MuJoCo's length-range simulation runs under its own flags, whatever the model's: a model
/// with actuation, limits and gravity disabled finds the same muscle length range as without
/// them (both from the slide's limits, pushed against them).
#[test]
fn length_ranges_ignore_the_models_own_flags() {
    let xml = |flags: &str| {
        format!(
            "<mujoco><option>{flags}</option><worldbody><body><joint name='s' type='slide' range='-1 1'/>\
             <geom size='.1'/></body></worldbody><actuator><muscle joint='s'/>\
             <motor joint='s' forcerange='1 2'/></actuator></mujoco>"
        )
    };
    let range = |flags: &str| mjcf::parse(&xml(flags), "flags.xml").expect("loads").actuators()[0].length_range;
    let plain = range("");
    assert!(plain[1] - plain[0] > 1.9, "{plain:?}");
    assert_eq!(range("<flag actuation='disable' limit='disable' gravity='disable'/>"), plain);
}

/// `inheritrange` needs a joint or tendon transmission: on `jointinparent` it is an error, as
/// in MuJoCo.
#[test]
fn inheritrange_refuses_jointinparent() {
    let xml = "<mujoco><worldbody><body><joint name='j' type='hinge' range='-30 30'/><geom size='.1'/>\
               </body></worldbody><actuator><position jointinparent='j' kp='1' inheritrange='1'/></actuator></mujoco>";
    let e = mjcf::parse(xml, "inherit.xml").expect_err("refused");
    assert!(matches!(e.kind, MjcfErrorKind::Invalid(ref m) if m.contains("inheritrange")), "{e}");
    assert_eq!(e.location.element, "position");
}

/// An attribute MuJoCo reads as "up to N numbers" rewrites only the first numbers its default
/// class gave (MuJoCo 4.0.1 compiles this model to friction `2 0.3 0.02`, solref `0.1 2`,
/// gear `5 2 3 0 0 0`).
#[test]
fn short_number_lists_rewrite_the_start_of_their_class_values() {
    let xml = r#"<mujoco><default><default class="b">
        <geom friction="1 0.3 0.02" solref="0.05 2"/><motor gear="1 2 3"/></default></default>
      <worldbody><body><joint name="j"/>
        <geom class="b" size=".1" friction="2" solref="0.1"/></body></worldbody>
      <actuator><motor class="b" joint="j" gear="5"/></actuator></mujoco>"#;
    let model = parse(xml).expect("loads");
    let geom = model.geom(0).expect("one geom");
    assert_eq!((geom.friction, geom.solref), ([2.0, 0.3, 0.02], [0.1, 2.0]));
    assert_eq!(model.actuators()[0].gear, [5.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
}

/// `maxhullvert`: at or above a mesh's distinct points MuJoCo's hull is the full one (qhull
/// cannot reach the limit while points are left), and the model loads as without it; below,
/// MuJoCo's hull stops early, and every geom that would read that hull is refused, the message
/// naming the attribute: one that touches, or any that weighs the mesh by its hull (no faces, or
/// `inertia="convex"`). A geom that only draws a mesh weighed by its faces loads.
#[test]
fn maxhullvert_is_the_full_hull_or_refused() {
    // A cube's corners and its centre: 9 distinct points, 8 on the hull.
    let corners = "-1 -1 -1 1 -1 -1 -1 1 -1 1 1 -1 -1 -1 1 1 -1 1 -1 1 1 1 1 1 0 0 0";
    let faces = "0 2 1 1 2 3 4 5 6 5 7 6 0 1 4 1 5 4 2 6 3 3 6 7 0 4 2 2 4 6 1 3 5 3 7 5";
    let xml = |mesh: &str, geom: &str| {
        format!(
            r#"<mujoco><asset><mesh name="m" vertex="{corners}" {mesh}/></asset>
              <worldbody><body name="b"><freejoint/><geom type="mesh" mesh="m" {geom}/></body></worldbody></mujoco>"#
        )
    };
    let mass = |model: &phyz::Model<f64>| (model.bodies()[1].mass, model.bodies()[1].inertia);
    let full = parse(&xml("", "")).expect("loads");
    for limit in ["9", "100"] {
        let model = parse(&xml(&format!(r#"maxhullvert="{limit}""#), "")).expect("the full hull");
        assert_eq!(mass(&model), mass(&full));
    }
    let refused = |e: MjcfError| {
        assert!(matches!(e.kind, MjcfErrorKind::Unsupported(ref u) if u.what.contains("maxhullvert")), "{e}");
        assert_eq!(e.location.element, "geom", "{e}");
    };
    let visual = r#"contype="0" conaffinity="0""#;
    // Without faces the mesh is weighed by its hull: refused even on a geom that only draws.
    refused(error(&xml(r#"maxhullvert="8""#, visual)));
    let with_faces = format!(r#"face="{faces}" maxhullvert="8""#);
    refused(error(&xml(&with_faces, "")));
    refused(error(&xml(&format!(r#"{with_faces} inertia="convex""#), visual)));
    let drawn = parse(&xml(&with_faces, visual)).expect("a drawn mesh weighed by its faces");
    assert_eq!(mass(&drawn), mass(&parse(&xml(&format!(r#"face="{faces}""#), visual)).expect("loads")));
    let small = error(&xml(r#"maxhullvert="3""#, ""));
    assert!(small.to_string().contains("larger than 3"), "{small}");
    assert_eq!(small.location.element, "mesh", "{small}");
}

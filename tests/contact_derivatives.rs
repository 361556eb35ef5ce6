//! Exact step Jacobians through contact: dual numbers against central finite differences.

mod common;

use common::finite_difference_jacobians;
use phyz::collision::detect;
use phyz::contact::SolverConfig;
use phyz::dual::{check_step_jacobians, step_jacobians};
use phyz::dynamics::forward_kinematics;
use phyz::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

/// Relative tolerance stated by the contact issue.
const TOL: f64 = 1e-6;

fn scene(body: &str) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='0.002'/><worldbody><geom type='plane' size='5 5 0.1'/>\
         <body pos='0 0 0.1'><freejoint/>{body}</body></worldbody></mujoco>"
    );
    mjcf::parse(&xml, "scene.xml").expect("valid")
}

fn check(name: &str, model: &Model<f64>, state: &State<f64>) {
    let exact = step_jacobians(model, state, &[]).expect("jacobians").a;
    // Central differences trade truncation (h²) against the step's roundoff (1/h); which step
    // size balances them depends on the scene's stiffness, so the reference is the best of
    // three (a ball hitting the floor at 2 m/s: 5e-9 at 1e-5, 1e-6 at 1e-7).
    let err = [1e-5, 1e-6, 1e-7]
        .into_iter()
        .map(|h| (&exact - finite_difference_jacobians(model, state, &[], h).0).amax() / exact.amax())
        .fold(f64::INFINITY, f64::min);
    eprintln!("{name}: step Jacobian vs central differences {err:.2e}");
    assert!(err <= TOL, "{name}: {err:e}\n{exact}");
}

#[test]
fn a_resting_sphere() {
    let model = scene("<geom type='sphere' size='0.1'/>");
    let mut state = model.default_state();
    state.qpos[2] = 0.1 - 3.6e-4;
    check("resting sphere", &model, &state);
}

#[test]
fn a_sliding_sphere() {
    let model = scene("<geom type='sphere' size='0.1'/>");
    let mut state = model.default_state();
    state.qpos[2] = 0.1 - 3.6e-4;
    state.qvel[0] = 1.0;
    check("sliding sphere", &model, &state);
}

#[test]
fn a_box_sticking_on_an_incline() {
    // 15° of incline against μ = 1 (45°): settled, all four corners stick.
    let xml = "<mujoco><option timestep='0.002'/><worldbody>\
        <geom type='plane' size='5 5 0.1' euler='0 15 0' friction='1 0.005 0.0001'/>\
        <body pos='0 0 0.1' euler='0 15 0'><freejoint/><geom type='box' size='0.1 0.1 0.1'/></body>\
        </worldbody></mujoco>";
    let model = phyz::mjcf::parse(xml, "incline.xml").expect("valid");
    // Four sticking corners are a redundant set held by the friction rows' regularizer alone:
    // under the `simulation` preset (1e-10) the step's response is exact but so stiff that
    // central differences drown in roundoff (their error changes by 10× between step sizes);
    // under `gradients` (1e-6, the preset for optimizing through contact) they resolve it.
    // Reference: the best of three step sizes.
    let config = SolverConfig::gradients();
    let mut contact = ContactState::new(config);
    let mut state = model.default_state();
    for _ in 0..500 {
        state = step_with(&model, &state, &[], &mut contact).expect("step").0;
    }
    let report = [1e-5, 1e-6, 1e-7]
        .into_iter()
        .map(|h| check_step_jacobians(&model, &state, &[], config, h).expect("check"))
        .min_by(|a, b| a.worst.total_cmp(&b.worst))
        .expect("three step sizes");
    eprintln!("box sticking on a 15° incline: {:.2e} ({})", report.worst, report.at);
    assert!(report.worst <= TOL, "{report:?}");
}

#[test]
fn a_ball_at_impact() {
    // A ball with restitution 0.8 meeting the floor at 2 m/s: the impact's rebound target.
    let mut model = scene("<geom name='ball' type='sphere' size='0.1'/>");
    model
        .edit(|parts| parts.bodies.iter_mut().flat_map(|b| &mut b.geoms).for_each(|g| g.restitution = 0.8))
        .expect("valid");
    let mut state = model.default_state();
    state.qpos[2] = 0.1 - 2e-3;
    state.qvel[2] = -2.0;
    state.qvel[0] = 0.3;
    check("ball at impact", &model, &state);
}

#[test]
fn a_sphere_within_the_margin() {
    let model = scene("<geom type='sphere' size='0.1' margin='0.002'/>");
    let mut state = model.default_state();
    state.qpos[2] = 0.1 + 0.0005;
    state.qvel[2] = -0.01;
    check("sphere in the margin band", &model, &state);
}

/// The free body's state pressed 3e-4 m into what it rests on and sliding at 1 m/s along x:
/// how deep the shape reaches with its centre at height zero, lifted to leave 3e-4 m.
fn pressed_and_sliding(model: &Model<f64>) -> State<f64> {
    let mut state = model.default_state();
    state.qpos[2] = 0.0;
    let kin = forward_kinematics(model, &state.qpos);
    let poses: Vec<_> = (0..model.bodies().len()).map(|b| kin.body_pose(model, b)).collect();
    let contacts = detect(model, &poses).expect("supported pair");
    let deepest = contacts.iter().map(|c| c.depth).fold(f64::NEG_INFINITY, f64::max);
    state.qpos[2] = deepest - 3e-4;
    state.qvel[0] = 1.0;
    state
}

/// Tilted shapes whose touching point moves over the surface as they turn (an ellipsoid, a
/// cylinder's rim) or stays on a corner (a box), pressed 3e-4 m into the plane and sliding.
#[test]
fn tilted_shapes_sliding_on_the_plane() {
    for geom in [
        "<geom type='ellipsoid' size='0.1 0.15 0.05' euler='20 10 0'/>",
        "<geom type='cylinder' size='0.05 0.1' euler='70 10 0'/>",
        "<geom type='box' size='0.05 0.1 0.07' euler='20 10 0'/>",
    ] {
        let model = scene(geom);
        let state = pressed_and_sliding(&model);
        check(geom, &model, &state);
    }
}

/// General convex pairs (parry's manifolds): shapes on a box fixed to the world, pressed 3e-4 m
/// in and sliding — a tilted box on a corner, a tilted capsule on its end, a cylinder standing
/// on its disc.
#[test]
fn tilted_shapes_sliding_on_a_box() {
    for geom in [
        "<geom type='box' size='0.05 0.1 0.07' euler='20 10 0'/>",
        "<geom type='capsule' size='0.04 0.1' euler='30 20 0'/>",
        "<geom type='cylinder' size='0.05 0.1' euler='20 10 0'/>",
    ] {
        let xml = format!(
            "<mujoco><option timestep='0.002'/><worldbody><geom type='box' size='1 1 0.1' pos='0 0 -0.1'/>\
             <body pos='0 0 0.1'><freejoint/>{geom}</body></worldbody></mujoco>"
        );
        let model = mjcf::parse(&xml, "scene.xml").expect("valid");
        let state = pressed_and_sliding(&model);
        check(&format!("on a box: {geom}"), &model, &state);
    }
}

/// Torsional and rolling friction (condim 6): a sphere pressed in, spinning about the vertical
/// and rolling (its spin and roll rows on the cone's boundary), and a box with torsional
/// friction (condim 4) sliding and turning on its four corners.
#[test]
fn spinning_and_rolling_contacts() {
    let sphere = scene("<geom type='sphere' size='0.1' condim='6' friction='0.9 0.02 0.01'/>");
    let mut state = sphere.default_state();
    state.qpos[2] = 0.1 - 3.6e-4;
    state.qvel[0] = 0.5;
    state.qvel[4] = 5.0;
    state.qvel[5] = 8.0;
    check("spinning, rolling sphere", &sphere, &state);
    let block = scene("<geom type='box' size='0.1 0.15 0.05' condim='4' friction='0.8 0.05'/>");
    let mut state = block.default_state();
    state.qpos[2] = 0.05 - 3e-4;
    state.qvel[0] = 1.0;
    state.qvel[5] = 2.0;
    check("box sliding and turning (condim 4)", &block, &state);
}

/// Connects and welds (the MuJoCo scene `tests/reference/contact/ties.xml`: a closed chain, a
/// hung ball and box, welds between bodies, to the world and between sites): the step's
/// Jacobian through the ties' rows — their shared impedance, quaternion error and `J̇ v` term —
/// after 20 steps from the scene's launch, and at the launch itself (welds still violated).
#[test]
fn connects_and_welds() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/contact/ties.xml");
    let model = mjcf::load(path).expect("loads");
    let launch = [
        &[1.0, -0.5, 0.3][..],
        &[0.5, 0.2, 0.0, 0.0, 1.0, 0.5],
        &[0.3, -0.4, 0.2, 1.0, 0.0, -0.5],
        &[2.0],
        &[0.0; 6],
        &[0.1, 0.2, -0.1, 0.5, -0.3, 0.2],
        &[0.0, 0.3, 0.0, 1.0, 0.5, 0.0],
    ]
    .concat();
    let mut state = model.default_state();
    state.qvel = nalgebra::DVector::from_column_slice(&launch);
    check("ties at launch", &model, &state);
    let mut contact = ContactState::default();
    for _ in 0..20 {
        state = step_with(&model, &state, &[], &mut contact).expect("step").0;
    }
    check("ties after 20 steps", &model, &state);
}

/// Under `mujoco_compat` a contact's friction coefficients are held at MuJoCo's floor 1e-5, as
/// MuJoCo holds them: with a frictionless box resting on the plane, the step does not move with
/// the geoms' sliding friction (MuJoCo's `max(f, 1e-5)` is flat there), under either cone.
#[test]
fn friction_held_at_the_floor_carries_no_derivative() {
    use phyz::Tangents;
    use phyz::dual::Dual64;
    for cone in ["pyramidal", "elliptic"] {
        let xml = format!(
            "<mujoco><option timestep='0.002' cone='{cone}'/><worldbody>\
             <geom type='plane' size='5 5 0.1' friction='0 0 0'/>\
             <body pos='0 0 0.0497'><freejoint/><geom type='box' size='0.1 0.1 0.05' friction='0 0 0'/></body>\
             </worldbody></mujoco>"
        );
        let model = mjcf::parse(&xml, "floor.xml").expect("valid");
        let mut seeded = model.cast::<Dual64>();
        let seed = |g: &mut phyz::model::Geom<Dual64>| g.friction[0] = Dual64::new(g.friction[0].re, 1.0);
        seeded.edit(|parts| parts.bodies.iter_mut().flat_map(|b| &mut b.geoms).for_each(seed)).expect("valid");
        let mut state = model.default_state();
        state.qvel[0] = 0.3;
        let mut contact = ContactState::new(SolverConfig::mujoco_compat());
        let (next, info) = step_with(&seeded, &state.cast::<Dual64>(), &[], &mut contact).expect("step");
        assert!(info.contacts > 0, "{cone}: the box touches");
        let largest = next.qvel.iter().map(|x| x.tangent(0, 0).abs()).fold(0.0, f64::max);
        assert_eq!(largest, 0.0, "{cone}: d qvel / d friction = {largest:e}");
    }
}

/// Derivatives along the numbers the constraint rows read — a geom's solref and solimp, its
/// margin, a joint limit's solref, solimp and margin, an equality's solref, the timestep —
/// against central differences of the step in each parameter (the model rebuilt with the
/// parameter moved), under phyz's default preset and MuJoCo's model (both cones). The scene: a
/// box pressed into the plane and sliding, its margin band reaching the floor, beside a hinge
/// pressed past its limit and a slider held by an equality.
#[test]
fn derivatives_along_solref_solimp_margin_and_the_timestep() {
    use phyz::dual::{Parameter, step_jacobians_lanes};
    for cone in ["pyramidal", "elliptic"] {
        let xml = format!(
            "<mujoco><compiler angle='radian'/><option timestep='0.002' cone='{cone}'/><worldbody>\
             <geom name='floor' type='plane' size='5 5 0.1' solref='0.03 0.9' solimp='0.85 0.97 0.002 0.4 2.5'/>\
             <body pos='0 0 0.05'><freejoint/>\
               <geom name='box' type='box' size='0.1 0.08 0.05' margin='0.002' euler='0.005 0.0035 0'/></body>\
             <body name='arm' pos='1 0 1'><joint name='hinge' type='hinge' axis='0 1 0' limited='true' \
               range='-0.5 0.5' solreflimit='0.04 1.1' solimplimit='0.8 0.95 0.05 0.5 2' margin='0.05'/>\
               <geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.02' contype='0' conaffinity='0'/></body>\
             <body name='rail' pos='2 0 1'><joint name='slide' type='slide' axis='1 0 0'/>\
               <geom type='box' size='0.05 0.05 0.05' contype='0' conaffinity='0'/></body>\
             </worldbody><equality><joint joint1='slide' polycoef='0.05 0 0 0 0' solref='0.05 0.8'/></equality>\
             </mujoco>"
        );
        let model = mjcf::parse(&xml, "parameters.xml").expect("valid");
        let indices = model.parameter_indices();
        let joint = &indices.joints()[1];
        let equality = &indices.equalities()[0];
        let mut params = Parameter::indices(
            &[
                Parameter::GeomSolref("floor".into(), 0),
                Parameter::GeomSolref("floor".into(), 1),
                Parameter::GeomSolimp("floor".into(), 0),
                Parameter::GeomSolimp("floor".into(), 2),
                Parameter::GeomSolimp("floor".into(), 3),
                Parameter::GeomMargin("box".into()),
                Parameter::Timestep,
            ],
            &model,
        )
        .expect("named");
        params.extend(joint.solref_limit.iter().chain(&joint.solimp_limit[..2]).map(|&x| x as usize));
        params.push(joint.limit_margin as usize);
        params.extend(equality.solref.iter().map(|&x| x as usize));
        let mut state = pressed_and_sliding(&model);
        // The hinge pressed 0.02 rad past its limit at rest (moving in, phyz's presets would
        // take it as an impact, whose rigid rebound reads no solref), the slider moving.
        state.qpos[7] = 0.52;
        state.qvel[7] = 0.2;
        // Whether each parameter moves the step under some preset (a limit's margin does only
        // under MuJoCo's model, which measures the violation from it).
        let mut moves = vec![false; params.len()];
        for config in [SolverConfig::simulation(), SolverConfig::mujoco_compat()] {
            let mut contact = ContactState::new(config);
            let exact = step_jacobians_lanes::<8>(&model, &state, &[], &params, &mut contact).expect("jacobians");
            assert!(exact.info.contacts >= 4 && exact.info.limits == 1, "{cone}: {:?}", exact.info);
            let values = model.parameters();
            let next = |k: usize, h: f64| {
                let mut moved = values.clone();
                moved[params[k]] += h;
                let model = model.with_parameters(&moved).expect("same structure");
                let mut contact = ContactState::new(config);
                let next = step_with(&model, &state, &[], &mut contact).expect("step").0;
                let dq = phyz::dynamics::difference_position(&model, &next.qpos, &state.qpos);
                dq.iter().chain(next.qvel.iter()).copied().collect::<Vec<f64>>()
            };
            for k in 0..params.len() {
                let column = exact.p.column(k);
                // The best of three step sizes, as `check` takes (truncation against the solve's
                // tolerance over `h`).
                let err = [1e-5, 1e-6, 1e-7]
                    .into_iter()
                    .map(|relative| {
                        let h = relative * values[params[k]].abs().max(1e-3);
                        let (plus, minus) = (next(k, h), next(k, -h));
                        let fd: Vec<f64> = plus.iter().zip(&minus).map(|(p, m)| (p - m) / (2.0 * h)).collect();
                        let scale = fd.iter().chain(column.iter()).fold(1e-3f64, |a, x| a.max(x.abs()));
                        column.iter().zip(&fd).map(|(e, f)| (e - f).abs()).fold(0.0, f64::max) / scale
                    })
                    .fold(f64::INFINITY, f64::min);
                eprintln!("{cone}, mujoco_compat {}, parameter {k}: {err:.2e}", config.mujoco_compat);
                moves[k] |= column.amax() > 0.0;
                assert!(err <= TOL, "{cone}, mujoco_compat {}, parameter {k}: {err:e}", config.mujoco_compat);
            }
        }
        assert!(moves.iter().all(|&m| m), "{cone}: parameters without any derivative: {moves:?}");
    }
}

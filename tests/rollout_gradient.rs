//! The rollout gradient (one backward sweep through exact step Jacobians) against independent
//! methods: forward tangents carried through the whole rollout, and central differences.

use nalgebra::DVector;
use phyz::contact::SolverConfig;
use phyz::dual::{
    Cost, CostFunctions, DualError, Objective, Parameter, RolloutDirection, check_rollout_gradient,
    rollout_directional, rollout_gradient,
};
use phyz::mjcf;
use phyz::sim::ContactState;
use phyz::{Model, State, scenes};

/// A box on a planar mount (slide x, slide z, hinge y), pushed along x by a motor, on a floor:
/// it rests, then slides once the push beats friction. The floor's friction is the pair's (the
/// larger of the two).
fn pushed_box(friction: f64) -> Model<f64> {
    pushed("<geom name='block' type='box' size='0.1 0.1 0.1' mass='2' friction='0.1 0.005 0.0001'/>", friction)
}

/// [`pushed_box`] with another body: `geom` is its geom.
fn pushed(geom: &str, friction: f64) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='0.002'/><worldbody>\
         <geom name='floor' type='plane' size='5 5 0.1' friction='{friction} 0.005 0.0001'/>\
         <body name='block' pos='0 0 0.1'>\
         <joint name='x' type='slide' axis='1 0 0'/><joint name='z' type='slide' axis='0 0 1'/>\
         <joint name='pitch' type='hinge' axis='0 1 0'/>\
         {geom}</body>\
         </worldbody><actuator><motor name='push' joint='x' gear='3'/></actuator></mujoco>"
    );
    mjcf::parse(&xml, "pushed_box.xml").expect("valid scene")
}

/// Resting on the floor at about its settled depth.
fn resting(model: &Model<f64>) -> State<f64> {
    let mut state = model.default_state();
    state.qpos[1] = -3.0e-4;
    state
}

/// `J = Σ ½|v_t|² + 0.01·½|u_t|²  +  10·x_T` (push far, move gently).
fn objective(model: &Model<f64>) -> impl Objective {
    let (nv, nu) = (model.nv(), model.nu());
    CostFunctions {
        running: move |_t: usize, s: &State<f64>, u: &[f64]| {
            let u = DVector::from_column_slice(u);
            Cost {
                value: 0.5 * s.qvel.norm_squared() + 0.005 * u.norm_squared(),
                dq: DVector::zeros(nv),
                dv: s.qvel.clone(),
                du: u * 0.01,
            }
        },
        terminal: move |s: &State<f64>| {
            let mut dq = DVector::zeros(nv);
            dq[0] = 10.0;
            Cost { value: 10.0 * s.qpos[0], dq, dv: DVector::zeros(nv), du: DVector::zeros(nu) }
        },
    }
}

fn random_direction(model: &Model<f64>, steps: usize, params: usize, seed: u64) -> RolloutDirection {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut vector = |n: usize| DVector::from_fn(n, |_, _| next());
    RolloutDirection {
        dq0: vector(model.nv()),
        dv0: vector(model.nv()),
        dact0: vector(model.na()),
        du: (0..steps).map(|_| vector(model.nu())).collect(),
        dparams: vector(params),
    }
}

#[test]
fn the_backward_sweep_equals_forward_tangents_through_contact() {
    let model = pushed_box(0.5);
    let start = resting(&model);
    // A push that ramps past what friction holds: resting, then sliding.
    let steps = 150;
    let controls: Vec<Vec<f64>> = (0..steps).map(|t| vec![2.0 + 6.0 * t as f64 / steps as f64]).collect();
    let params = Parameter::indices(
        &[
            Parameter::BodyMass("block".into()),
            Parameter::GeomFriction("floor".into()),
            Parameter::ActuatorGear("push".into()),
        ],
        &model,
    )
    .expect("named parameters");
    let objective = objective(&model);
    let config = SolverConfig::simulation();
    let gradient = rollout_gradient(&model, &start, &controls, &params, &objective, &mut ContactState::new(config))
        .expect("gradient");
    let directions: Vec<RolloutDirection> = (0..4).map(|k| random_direction(&model, steps, params.len(), k)).collect();
    let forward = rollout_directional::<4>(
        &model,
        &start,
        &controls,
        &params,
        &directions,
        &objective,
        &mut ContactState::new(config),
    )
    .expect("forward tangents");
    let (value, derivatives) = (forward.value, forward.derivatives);
    assert!((value - gradient.value).abs() <= 1e-12 * value.abs(), "{value} vs {}", gradient.value);
    // Two independent code paths for one derivative (stated before measuring: 1e-10 relative).
    for (k, (d, forward)) in directions.iter().zip(&derivatives).enumerate() {
        let backward = d.dot(&gradient);
        let error = (backward - forward).abs() / forward.abs().max(1e-12);
        eprintln!("direction {k}: backward {backward:.12e}, forward {forward:.12e}, relative {error:.1e}");
        assert!(error <= 1e-10, "direction {k}: {backward} vs {forward}");
    }
    eprintln!("dJ/d(mass, friction, gear) = {:?}", gradient.dparams.as_slice());
    // The run did touch and slide: the friction derivative is not trivially zero.
    assert!(gradient.dparams[1].abs() > 1e-3, "friction sensitivity {}", gradient.dparams[1]);
}

#[test]
fn the_rollout_gradient_matches_central_differences_on_a_smooth_rollout() {
    let (model, start) = scenes::double_pendulum().expect("scene");
    let steps = 200;
    let controls: Vec<Vec<f64>> = (0..steps).map(|t| vec![(t as f64 * 0.05).sin(), 0.3]).collect();
    let params = Parameter::indices(
        &[
            Parameter::BodyMass("link1".into()),
            Parameter::BodyCom("link0".into(), 2),
            Parameter::BodyInertia("link1".into(), 0),
            Parameter::ActuatorGear("motor0".into()),
        ],
        &model,
    )
    .expect("named parameters");
    let (nv, nu) = (model.nv(), model.nu());
    let objective = CostFunctions {
        running: |_t: usize, s: &State<f64>, u: &[f64]| Cost {
            value: 0.5 * s.qvel.norm_squared() + 0.5 * u.iter().map(|x| x * x).sum::<f64>(),
            dq: DVector::zeros(nv),
            dv: s.qvel.clone(),
            du: DVector::from_column_slice(u),
        },
        terminal: |s: &State<f64>| Cost {
            value: 0.5 * s.qpos.norm_squared(),
            dq: s.qpos.clone(),
            dv: DVector::zeros(nv),
            du: DVector::zeros(nu),
        },
    };
    let report =
        check_rollout_gradient(&model, &start, &controls, &params, &objective, SolverConfig::simulation(), 6, 1e-6)
            .expect("check");
    eprintln!("smooth rollout: worst relative error {:.2e} on {}", report.worst, report.at);
    assert!(report.worst <= 1e-6, "{report:?}");
}

#[test]
fn an_unconverged_step_is_an_error_naming_the_step() {
    let model = pushed_box(0.5);
    let start = resting(&model);
    let controls = vec![vec![4.0]; 20];
    // No Newton iteration cannot converge a contact solve that starts cold.
    let config = SolverConfig { max_iterations: 0, ..SolverConfig::simulation() };
    let result = rollout_gradient(&model, &start, &controls, &[], &objective(&model), &mut ContactState::new(config));
    match result {
        Err(DualError::AtStep { step, source }) => {
            assert_eq!(step, 0);
            assert!(matches!(*source, DualError::Unconverged { .. }), "{source:?}");
        }
        other => panic!("expected an error at step 0, got {:?}", other.map(|g| g.value)),
    }
}

#[test]
fn unknown_parameters_are_named_errors() {
    let model = pushed_box(0.5);
    let err = Parameter::BodyMass("nobody".into()).index(&model).expect_err("no such body");
    assert!(err.to_string().contains("nobody"), "{err}");
    assert!(Parameter::BodyCom("block".into(), 3).index(&model).is_err());
    // A parameter the contact rows read as a constant (here a geom's size) is refused, not
    // differentiated without its effect through the contacts.
    let constants = model.constraint_constants();
    let refused = phyz::dual::step_jacobians_lanes::<8>(
        &model,
        &resting(&model),
        &[0.0],
        &constants[..1],
        &mut ContactState::default(),
    );
    assert!(matches!(refused, Err(DualError::ConstantInConstraints { .. })), "{refused:?}");
}

fn friction_gradient(start: &State<f64>, model: &Model<f64>, push: f64, steps: usize) -> f64 {
    let controls = vec![vec![push]; steps];
    let params = Parameter::indices(&[Parameter::GeomFriction("floor".into())], model).expect("floor");
    let gradient = rollout_gradient(model, start, &controls, &params, &objective(model), &mut ContactState::default())
        .expect("gradient");
    gradient.dparams[0]
}

#[test]
fn friction_sensitivity_is_zero_while_sticking_and_right_while_sliding() {
    // A ball pushed at its centre with 3 N rolls; friction at its single contact holds it from
    // slipping (a box's four corners share the load unevenly as it is pushed, and a lightly
    // loaded corner does creep).
    let ball = pushed("<geom name='ball' type='sphere' size='0.1' mass='2' friction='0.1 0.005 0.0001'/>", 0.5);
    let rolling = friction_gradient(&resting(&ball), &ball, 1.0, 200);
    // A rolling contact creeps at the friction floor's 1e-9 m/s; μ reaches it only through
    // the glide compensation of that creep (`μ |v_t|`, smoothed below 1 mm/s): nine orders
    // below the sliding box's sensitivity.
    assert!(rolling.abs() < 1e-8, "a trajectory that never slips cannot depend on μ: {rolling:e}");
    let model = pushed_box(0.5);
    // Moving at 1 m/s and pushed with 24 N: it slides throughout.
    let mut start = resting(&model);
    start.qvel[0] = 1.0;
    let sliding = friction_gradient(&start, &model, 8.0, 200);
    assert!(sliding.abs() > 1.0, "sliding friction sensitivity {sliding}");
    let controls = vec![vec![8.0]; 200];
    // Checked with the mass and the gear as well: the mass moves the contact's regularizer too.
    let params = Parameter::indices(
        &[
            Parameter::GeomFriction("floor".into()),
            Parameter::BodyMass("block".into()),
            Parameter::BodyInertia("block".into(), 1),
            Parameter::ActuatorGear("push".into()),
        ],
        &model,
    )
    .expect("named parameters");
    let report = check_rollout_gradient(
        &model,
        &start,
        &controls,
        &params,
        &objective(&model),
        SolverConfig::simulation(),
        6,
        1e-6,
    )
    .expect("check");
    eprintln!("sliding box: dJ/dμ = {sliding:.6e}; worst relative error {:.2e} on {}", report.worst, report.at);
    assert!(report.worst <= 1e-6, "{report:?}");
}

/// A ball on a slide joint dropped onto a floor; the ball's restitution is the pair's (the floor
/// has none; pairs combine by maximum).
fn dropped_ball(height: f64) -> (Model<f64>, State<f64>) {
    let xml = "<mujoco><option timestep='0.001'/><worldbody>\
         <geom name='floor' type='plane' size='5 5 0.1'/>\
         <body name='ball' pos='0 0 0.1'><joint name='z' type='slide' axis='0 0 1'/>\
         <geom name='ball' type='sphere' size='0.1' mass='1'/></body></worldbody></mujoco>";
    let mut model = mjcf::parse(xml, "ball.xml").expect("valid");
    model
        .edit(|parts| {
            for geom in parts.bodies.iter_mut().flat_map(|b| &mut b.geoms).filter(|g| g.name == "ball") {
                geom.restitution = 0.8;
            }
        })
        .expect("valid");
    let mut state = model.default_state();
    state.qpos[0] = height;
    (model, state)
}

#[test]
fn restitution_sensitivity_is_zero_below_the_threshold_and_right_above_it() {
    let nv = 1;
    let height_cost = CostFunctions {
        running: |_t: usize, _s: &State<f64>, _u: &[f64]| Cost::zeros(nv, 0),
        terminal: |s: &State<f64>| Cost {
            value: s.qpos[0],
            dq: DVector::from_element(nv, 1.0),
            dv: DVector::zeros(nv),
            du: DVector::zeros(0),
        },
    };
    let run = |height: f64, steps: usize| {
        let (model, start) = dropped_ball(height);
        let params = Parameter::indices(&[Parameter::GeomRestitution("ball".into())], &model).expect("ball");
        let controls = vec![Vec::new(); steps];
        let gradient = rollout_gradient(&model, &start, &controls, &params, &height_cost, &mut ContactState::default())
            .expect("gradient");
        (model, start, controls, params, gradient.dparams[0])
    };
    // Released 50 µm above the floor: it lands at 3 cm/s, below the 5 cm/s restitution threshold.
    let (_, _, _, _, slow) = run(5e-5, 300);
    assert_eq!(slow, 0.0, "a landing below the threshold cannot depend on restitution");
    // Dropped from 0.3 m: it hits at 2.4 m/s and bounces; the height after the bounce depends
    // on restitution.
    let (model, start, controls, params, fast) = run(0.3, 400);
    assert!(fast.abs() > 1e-3, "restitution sensitivity {fast}");
    let report =
        check_rollout_gradient(&model, &start, &controls, &params, &height_cost, SolverConfig::simulation(), 4, 1e-6)
            .expect("check");
    eprintln!("bouncing ball: dz/de = {fast:.6e}; worst relative error {:.2e} on {}", report.worst, report.at);
    assert!(report.worst <= 1e-6, "{report:?}");
}

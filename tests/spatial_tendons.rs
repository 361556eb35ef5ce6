//! Spatial tendons: lengths and Jacobians checked by independent routes (central differences of
//! the length, forward-mode tangents, batch lanes against single runs), and the path rules
//! MuJoCo's compiler enforces. Agreement with MuJoCo itself is in mujoco_agreement.rs,
//! constraint_agreement.rs and mujoco_transition.rs (tests/models/spatial_tendons.xml).

mod common;

use common::{Rng, model_file};
use nalgebra::DVector;
use num_dual::Dual64;
use phyz::dynamics::{DofRow, forward_kinematics, integrate_position};
use phyz::mjcf;
use phyz::model::{JointKind, Model, PathPoint, TendonPath};
use phyz::{Lanes, State, step};

/// Tolerances stated before measuring: central differences with step 1e-6 of a length whose
/// second derivative is O(1) per unit of the radii (1e-2 m) err by about 1e-8.
const FD_TOL: f64 = 1e-6;
/// Forward-mode tangents and the Jacobian are two formulas for the same derivative.
const TANGENT_TOL: f64 = 1e-10;

fn model() -> Model<f64> {
    mjcf::load(model_file("spatial_tendons")).expect("loads")
}

/// A configuration away from the reference pose: hinges within ±1.5 rad, the free body
/// displaced by up to 0.2 m and turned at random.
fn random_qpos(model: &Model<f64>, rng: &mut Rng) -> DVector<f64> {
    let mut q = model.qpos0();
    for joint in model.joints() {
        let a = joint.qpos_adr();
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => q[a] += rng.uniform(-1.5, 1.5),
            JointKind::Free => {
                for k in 0..3 {
                    q[a + k] += rng.uniform(-0.2, 0.2);
                }
                let r = rng.quat();
                q.rows_mut(a + 3, 4).copy_from_slice(&[r.w, r.x, r.y, r.z]);
            }
            JointKind::Ball => {}
        }
    }
    q
}

/// Per tendon, whether its string wraps at `q` (an arc piece is on).
fn wrapping(model: &Model<f64>, q: &DVector<f64>) -> Vec<bool> {
    let kin = forward_kinematics(model, q);
    model
        .tendons()
        .iter()
        .map(|t| {
            let mut wraps = false;
            t.walk(model, |b| kin.body_pose(model, b), |p| wraps |= p.on && p.from.0 == p.to.0);
            wraps
        })
        .collect()
}

fn jacobian_rows(model: &Model<f64>, q: &DVector<f64>) -> Vec<DVector<f64>> {
    let kin = forward_kinematics(model, q);
    (0..model.tendons().len())
        .map(|t| {
            let mut row = DVector::zeros(model.nv());
            kin.tendons.jacobian(model, t).apply(model, 1.0, row.as_mut_slice());
            row
        })
        .collect()
}

#[test]
fn the_jacobian_is_the_derivative_of_the_length() {
    let model = model();
    let mut rng = Rng::new(7);
    let nv = model.nv();
    let mut wrapped = vec![0; model.tendons().len()];
    let mut worst: f64 = 0.0;
    for _ in 0..60 {
        let q = random_qpos(&model, &mut rng);
        let kin = forward_kinematics(&model, &q);
        let rows = jacobian_rows(&model, &q);
        // Stay clear of configurations where a string just touches its obstacle.
        let h = 1e-6;
        let flips = (0..nv).any(|i| {
            let e = DVector::from_fn(nv, |k, _| if k == i { 1.0 } else { 0.0 });
            let (plus, minus) = (integrate_position(&model, &q, &e, h), integrate_position(&model, &q, &e, -h));
            wrapping(&model, &plus) != wrapping(&model, &minus)
        });
        if flips {
            continue;
        }
        for (t, wraps) in wrapping(&model, &q).into_iter().enumerate() {
            wrapped[t] += wraps as usize;
        }
        for i in 0..nv {
            let e = DVector::from_fn(nv, |k, _| if k == i { 1.0 } else { 0.0 });
            let length = |dq: f64| forward_kinematics(&model, &integrate_position(&model, &q, &e, dq)).tendons.length;
            let (plus, minus) = (length(h), length(-h));
            for (t, row) in rows.iter().enumerate() {
                let fd = (plus[t] - minus[t]) / (2.0 * h);
                let error = (fd - row[i]).abs();
                worst = worst.max(error);
                let length = kin.tendons.length[t];
                assert!(error < FD_TOL, "tendon {t}, dof {i}: J {} against {fd} (length {length})", row[i]);
            }
        }
    }
    println!("worst |J - central difference| {worst:.2e}; wrapping states per tendon {wrapped:?}");
    // Every wrapping tendon (sphere, cylinder with a side site, sphere with an inside side
    // site) was checked while wrapped.
    assert!(wrapped[..3].iter().all(|&n| n >= 5), "{wrapped:?}");
}

#[test]
fn forward_tangents_of_the_length_equal_the_jacobian() {
    let model = model();
    let dual: Model<Dual64> = model.cast();
    let mut rng = Rng::new(11);
    let nv = model.nv();
    for _ in 0..40 {
        let q = random_qpos(&model, &mut rng);
        let rows = jacobian_rows(&model, &q);
        let direction = DVector::from_fn(nv, |_, _| rng.uniform(-1.0, 1.0));
        // q ⊕ ε·direction, in duals: the configuration's tangent along `direction`.
        let q_dual = q.map(Dual64::from_re);
        let v_dual = direction.map(|x| Dual64::new(0.0, x));
        let moved = integrate_position(&dual, &q_dual, &v_dual, Dual64::from_re(1.0));
        let kin = forward_kinematics(&dual, &moved);
        for (t, row) in rows.iter().enumerate() {
            let expected = row.dot(&direction);
            let got = kin.tendons.length[t].eps;
            assert!(
                (got - expected).abs() < TANGENT_TOL * expected.abs().max(1.0),
                "tendon {t}: {got} against {expected}"
            );
        }
    }
}

#[test]
fn batch_lanes_of_different_wraps_equal_single_runs() {
    const N: usize = 4;
    let model = model();
    let mut rng = Rng::new(3);
    let random_state = |rng: &mut Rng| {
        let mut s = model.state(random_qpos(&model, rng), DVector::zeros(model.nv()));
        s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
        s
    };
    // Draw sets of states until each wrapping tendon wraps in some lanes and not in others.
    let mixed = |states: &[State<f64>]| {
        let flags: Vec<Vec<bool>> = states.iter().map(|s| wrapping(&model, &s.qpos)).collect();
        (0..3).all(|t| flags.iter().any(|f| f[t]) && flags.iter().any(|f| !f[t]))
    };
    let states = (0..1000)
        .map(|_| (0..N).map(|_| random_state(&mut rng)).collect::<Vec<_>>())
        .find(|states| mixed(states))
        .expect("a set of states whose lanes wrap differently");
    let batch_model: Model<Lanes<N>> = Model::batch(&vec![model.clone(); N]).expect("same structure");
    let mut batch = State::batch(&states);
    let mut singles = states.clone();
    let ctrl = [0.3, 0.45, -0.2];
    let batch_ctrl: Vec<Lanes<N>> = ctrl.iter().map(|&u| Lanes([u; N])).collect();
    for _ in 0..50 {
        batch = step(&batch_model, &batch, &batch_ctrl).expect("batch step");
        for single in &mut singles {
            *single = step(&model, single, &ctrl).expect("single step");
        }
    }
    for (l, single) in singles.iter().enumerate() {
        assert_eq!(&batch.lane(l), single, "lane {l} differs");
    }
}

#[test]
fn a_spatial_tendon_loads_its_path() {
    let model = model();
    let flexor = &model.tendons()[0];
    let TendonPath::Spatial(points) = flexor.path() else { panic!("flexor is spatial") };
    assert!(matches!(points[1], PathPoint::Wrap { side: Some(_), .. }));
    // Without springlength, the rest length is the length at the reference pose.
    let kin = forward_kinematics(&model, &model.qpos0());
    assert_eq!(flexor.spring_length, [kin.tendons.length[0]; 2]);
}

/// A two-link arm with sites and a wrapping sphere and box, with `path` as its tendon.
fn arm(path: &str) -> String {
    format!(
        r#"<mujoco>
  <worldbody>
    <site name="top" pos="0 0 1"/>
    <body name="link" pos="0 0 0.5">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom name="ball" type="sphere" size="0.05"/>
      <geom name="brick" type="box" size="0.05 0.05 0.05" pos="0 0 -0.2"/>
      <site name="low" pos="0 0 -0.3"/>
      <site name="side" pos="0.1 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="string">
      {path}
    </spatial>
  </tendon>
</mujoco>"#
    )
}

#[test]
fn paths_mujoco_refuses_are_errors_naming_the_tendon() {
    let cases = [
        (r#"<site site="top"/>"#, "at least two"),
        (r#"<site site="top"/><geom geom="ball"/>"#, "not between two sites"),
        (r#"<site site="top"/><geom geom="brick"/><site site="low"/>"#, "spheres and cylinders"),
        (r#"<site site="top"/><site site="low"/><pulley divisor="2"/>"#, "pulley"),
        (r#"<site site="top"/><site site="top"/>"#, "repeated"),
        (r#"<site site="top"/><site site="nowhere"/>"#, "<site>: no site named `nowhere`"),
        (r#"<site site="top"/><geom geom="ball" sidesite="nowhere"/><site site="low"/>"#, "<geom>: no site named"),
        (r#"<site site="top"/><geom geom="nothing"/><site site="low"/>"#, "<geom>: no geom named"),
        (r#"<site site="top"/><pulley/><site site="low"/><site site="top"/>"#, "missing attribute `divisor`"),
        (r#"<site site="top"/><joint joint="hinge"/>"#, "unexpected <joint>"),
        (r#"<site site="top"/><site site="low"/><pulley divisor="0"/><site site="top"/><site site="low"/>"#, "divisor"),
    ];
    for (path, expected) in cases {
        let error = mjcf::parse(&arm(path), "arm.xml").expect_err(path).to_string();
        assert!(error.contains(expected), "{path}: {error}");
        assert!(error.contains("arm.xml:"), "{path}: the error names the file and line: {error}");
    }
    let fine =
        mjcf::parse(&arm(r#"<site site="top"/><geom geom="ball" sidesite="side"/><site site="low"/>"#), "arm.xml");
    assert!(fine.is_ok(), "{fine:?}");
}

/// Without `springlength`, a spatial tendon rests at its length where the joints are at their
/// spring references (MuJoCo's `qpos_spring`), also where that is not the reference pose: here
/// `top` to `low` with the hinge at its `springref` of 0.3° (degrees, the compiler's default).
#[test]
fn a_spring_rests_at_its_length_at_the_spring_references() {
    let xml = arm(r#"<site site="top"/><site site="low"/>"#).replace(
        r#"<joint name="hinge" type="hinge" axis="0 1 0"/>"#,
        r#"<joint name="hinge" type="hinge" axis="0 1 0" springref="0.3"/>"#,
    );
    let model = mjcf::parse(&xml.replace(r#"name="string""#, r#"name="string" stiffness="1""#), "arm.xml")
        .expect("rest length at springref");
    let theta = 0.3f64.to_radians();
    // `low` is 0.3 below the hinge, which is 0.5 below `top`.
    let expected = ((0.3 * theta.sin()).powi(2) + (0.5 + 0.3 * theta.cos()).powi(2)).sqrt();
    let [lo, hi] = model.tendons()[0].spring_length;
    assert!((lo - expected).abs() < 1e-14 && lo == hi, "{lo} {hi} vs {expected}");
    let given = xml.replace(r#"name="string""#, r#"name="string" stiffness="1" springlength="0.6""#);
    assert_eq!(mjcf::parse(&given, "arm.xml").expect("given").tendons()[0].spring_length, [0.6, 0.6]);
}

#[test]
fn tendon_spring_forces_are_the_gradient_of_their_energy() {
    use phyz::dynamics::energy::potential_energy;
    use phyz::dynamics::passive_forces;
    let mut model = model();
    // Springs alone: no gravity; at rest, dampers add nothing.
    model.enabled.gravity = false;
    let mut rng = Rng::new(5);
    let nv = model.nv();
    let h = 1e-6;
    for _ in 0..20 {
        let q = random_qpos(&model, &mut rng);
        let flips = (0..nv).any(|i| {
            let e = DVector::from_fn(nv, |k, _| if k == i { 1.0 } else { 0.0 });
            wrapping(&model, &integrate_position(&model, &q, &e, h))
                != wrapping(&model, &integrate_position(&model, &q, &e, -h))
        });
        if flips {
            continue;
        }
        let kin = forward_kinematics(&model, &q);
        let force = passive_forces(&model, &kin, &q, &DVector::zeros(nv));
        for i in 0..nv {
            let e = DVector::from_fn(nv, |k, _| if k == i { 1.0 } else { 0.0 });
            let energy = |dq: f64| {
                let moved = integrate_position(&model, &q, &e, dq);
                potential_energy(&model, &forward_kinematics(&model, &moved), &moved)
            };
            let gradient = (energy(h) - energy(-h)) / (2.0 * h);
            assert!(
                (force[i] + gradient).abs() < FD_TOL * force.amax().max(1.0),
                "dof {i}: {} against {}",
                force[i],
                -gradient
            );
        }
    }
}

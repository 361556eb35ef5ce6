//! Step vector-Jacobian products (reverse mode, on a tape) against forward-mode tangents
//! (`DualSVec64`) of the same step: two independent code paths through the engine. In every
//! contact regime, with limits, friction loss and equality constraints, on every gymnasium model;
//! and `⟨ȳ, J·ẋ⟩ = ⟨Jᵀȳ, ẋ⟩` on random directions through all of a model's parameters. The
//! whole Jacobians formed by rows (reverse mode) against those formed by columns.
//! Figures: `cargo test --test reverse_mode -- --nocapture`.
//!
//! The two paths are not evaluated at bit-identical points: the tape reproduces the `f64` step
//! bit for bit, while num-dual's arithmetic rounds some operations differently (its division
//! multiplies by the reciprocal), so dual steps sit ~1e-13 away — and on a stiff contact state
//! the Jacobian itself moves by ~1e-10 of its largest entry under a 1e-14 change of the state.
//! Errors are therefore relative to the size of the sums compared (`|J|ᵀ|ȳ|`).

mod common;

use common::{Rng, gymnasium_cases, random_vector};
use nalgebra::DVector;
use phyz::contact::SolverConfig;
use phyz::dual::{
    Seed, StateTangent, differentiable_parameters, jvp_with, step_jacobians_lanes, step_jacobians_reverse, vjp,
};
use phyz::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

/// Stated by the issue: relative to the size of the products compared.
const TOL: f64 = 1e-10;
/// How far apart the two paths' next states may be: rounding, which a stiff contact's solve
/// amplifies (see the module's notes). Measured: at most 1.6e-13 (walker2d's contact state,
/// 8.8e-14 before the line search's rays changed its rounding), every other case below 4e-15.
const SAME_STEP: f64 = 1e-12;

/// A random cotangent of a state of `model`.
fn random_tangent(model: &Model<f64>, rng: &mut Rng) -> StateTangent {
    StateTangent {
        qpos: random_vector(model.nv(), rng, 1.0),
        qvel: random_vector(model.nv(), rng, 1.0),
        act: random_vector(model.na(), rng, 1.0),
    }
}

fn stacked(t: &StateTangent) -> DVector<f64> {
    DVector::from_iterator(
        t.qpos.len() + t.qvel.len() + t.act.len(),
        t.qpos.iter().chain(t.qvel.iter()).chain(t.act.iter()).copied(),
    )
}

/// Up to eight of the model's differentiable parameters, spread over its list.
fn sampled_parameters(model: &Model<f64>) -> Vec<usize> {
    let all = differentiable_parameters(model);
    let stride = all.len().div_ceil(8).max(1);
    all.into_iter().step_by(stride).collect()
}

/// The worst relative difference between the step's VJP and the transposed forward-mode
/// Jacobians (state, controls, sampled parameters), and of the dot-product identity on a random
/// direction through every differentiable parameter.
fn check(name: &str, model: &Model<f64>, state: &State<f64>, ctrl: &[f64], config: SolverConfig) -> f64 {
    let mut rng = Rng::new(name.len() as u64 * 7919 + 13);
    let params = sampled_parameters(model);
    let exact =
        step_jacobians_lanes::<8>(model, state, ctrl, &params, &mut ContactState::new(config)).expect("Jacobians");
    let bar = random_tangent(model, &mut rng);
    let y = stacked(&bar);
    let reverse = vjp(model, state, ctrl, &params, &bar, &mut ContactState::new(config)).expect("VJP");
    // Not bit for bit: the two paths' scalars round differently (see the module's notes).
    let reached = common::relative_error(&reverse.next, &exact.next);
    assert!(reached < SAME_STEP, "{name}: the two paths reach states {reached:e} apart");
    let pairs = [
        (stacked(&reverse.state), exact.a.tr_mul(&y), exact.a.abs().tr_mul(&y.abs())),
        (reverse.ctrl.clone(), exact.b.tr_mul(&y), exact.b.abs().tr_mul(&y.abs())),
        (reverse.params.clone(), exact.p.tr_mul(&y), exact.p.abs().tr_mul(&y.abs())),
    ];
    // Relative to the size of the sums, `|J|ᵀ|ȳ|`: what an error in the Jacobian's entries
    // can move `Jᵀȳ` by, whatever cancels in it.
    let scale = pairs.iter().map(|(_, _, size)| size.amax()).fold(f64::MIN_POSITIVE, f64::max);
    let transposed = pairs.iter().map(|(got, want, _)| (got - want).amax()).fold(0.0, f64::max) / scale;

    // The whole Jacobians from reverse-mode rows, entry by entry, relative to their largest.
    let rows = step_jacobians_reverse(model, state, ctrl, &params, &mut ContactState::new(config)).expect("rows");
    let entries = [(&rows.a, &exact.a), (&rows.b, &exact.b), (&rows.p, &exact.p)];
    let largest = entries.iter().map(|(_, want)| want.amax()).fold(f64::MIN_POSITIVE, f64::max);
    let by_rows = entries.iter().map(|(got, want)| (*got - *want).amax()).fold(0.0, f64::max) / largest;

    // ⟨ȳ, J·ẋ⟩ = ⟨Jᵀȳ, ẋ⟩ with ẋ random in the state, the controls and every parameter.
    let all = differentiable_parameters(model);
    let mut seed = Seed::zeros(model);
    seed.qpos = random_vector(model.nv(), &mut rng, 1.0);
    seed.qvel = random_vector(model.nv(), &mut rng, 1.0);
    seed.act = random_vector(model.na(), &mut rng, 1.0);
    seed.ctrl = random_vector(model.nu(), &mut rng, 1.0);
    let mut direction = vec![0.0; model.parameters().len()];
    for &i in &all {
        direction[i] = rng.uniform(-1.0, 1.0);
    }
    seed.params = Some(direction.clone());
    let (_, tangent) = jvp_with(model, state, ctrl, &seed, &mut ContactState::new(config)).expect("JVP");
    let reverse = vjp(model, state, ctrl, &all, &bar, &mut ContactState::new(config)).expect("VJP");
    let forward_terms: Vec<f64> = y.iter().zip(stacked(&tangent).iter()).map(|(a, b)| a * b).collect();
    let along: Vec<f64> = all.iter().map(|&i| direction[i]).collect();
    let reverse_terms: Vec<f64> = stacked(&reverse.state)
        .iter()
        .zip(stacked(&StateTangent { qpos: seed.qpos.clone(), qvel: seed.qvel.clone(), act: seed.act.clone() }).iter())
        .map(|(a, b)| a * b)
        .chain(reverse.ctrl.iter().zip(seed.ctrl.iter()).map(|(a, b)| a * b))
        .chain(reverse.params.iter().zip(&along).map(|(a, b)| a * b))
        .collect();
    let (lhs, rhs) = (forward_terms.iter().sum::<f64>(), reverse_terms.iter().sum::<f64>());
    let size = forward_terms.iter().chain(&reverse_terms).map(|x| x.abs()).sum::<f64>().max(f64::MIN_POSITIVE);
    let dot = (lhs - rhs).abs() / size;
    eprintln!(
        "{name:>40}: {} contacts, {} limits; VJP vs Jᵀȳ {transposed:.1e}, rows {by_rows:.1e}, ⟨ȳ,Jẋ⟩ vs ⟨Jᵀȳ,ẋ⟩ {dot:.1e} ({} parameters)",
        exact.info.contacts,
        exact.info.limits,
        all.len()
    );
    transposed.max(dot).max(by_rows)
}

fn scene(body: &str) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='0.002'/><worldbody><geom type='plane' size='5 5 0.1'/>\
         <body pos='0 0 0.1'><freejoint/>{body}</body></worldbody></mujoco>"
    );
    mjcf::parse(&xml, "scene.xml").expect("valid")
}

/// The scenes of the contact regimes, each with its state.
fn regimes() -> Vec<(&'static str, Model<f64>, State<f64>)> {
    let sphere = scene("<geom type='sphere' size='0.1'/>");
    let at = |model: &Model<f64>, z: f64, qvel: &[(usize, f64)]| {
        let mut state = model.default_state();
        state.qpos[2] = z;
        for &(i, v) in qvel {
            state.qvel[i] = v;
        }
        state
    };
    let incline = mjcf::parse(
        "<mujoco><option timestep='0.002'/><worldbody>\
         <geom type='plane' size='5 5 0.1' euler='0 15 0' friction='1 0.005 0.0001'/>\
         <body pos='0 0 0.1' euler='0 15 0'><freejoint/><geom type='box' size='0.1 0.1 0.1'/></body>\
         </worldbody></mujoco>",
        "incline.xml",
    )
    .expect("valid");
    let mut settled = incline.default_state();
    let mut contact = ContactState::default();
    for _ in 0..300 {
        settled = step_with(&incline, &settled, &[], &mut contact).expect("step").0;
    }
    let spinning = scene("<geom type='sphere' size='0.1' condim='6' friction='0.9 0.02 0.01'/>");
    let joints = mjcf::parse(
        "<mujoco><compiler angle='radian'/><option timestep='0.002'/><worldbody>\
         <geom name='floor' type='plane' size='5 5 0.1'/>\
         <body pos='0 0 0.05'><freejoint/><geom type='box' size='0.1 0.08 0.05' euler='0.005 0.0035 0'/></body>\
         <body name='arm' pos='1 0 1'><joint type='hinge' axis='0 1 0' limited='true' range='-0.5 0.5' \
           frictionloss='0.05'/>\
           <geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.02' contype='0' conaffinity='0'/></body>\
         <body name='rail' pos='2 0 1'><joint name='slide' type='slide' axis='1 0 0' frictionloss='0.2'/>\
           <geom type='box' size='0.05 0.05 0.05' contype='0' conaffinity='0'/></body>\
         </worldbody><equality><joint joint1='slide' polycoef='0.05 0 0 0 0' solref='0.05 0.8'/></equality>\
         </mujoco>",
        "joints.xml",
    )
    .expect("valid");
    let mut pressed = at(&joints, 0.05 - 3e-4, &[(0, 1.0), (6, 0.2), (7, 0.3)]);
    pressed.qpos[7] = 0.52;
    let ties = mjcf::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/contact/ties.xml")).expect("loads");
    let mut tied = ties.default_state();
    for (i, v) in tied.qvel.iter_mut().enumerate() {
        *v = 0.3 * ((i as f64) * 0.7).sin();
    }
    vec![
        ("sphere within the margin, separated", at(&sphere, 0.1 + 0.0005, &[(2, -0.01)]), sphere.clone()),
        ("resting sphere", at(&sphere, 0.1 - 3.6e-4, &[]), sphere.clone()),
        ("sliding sphere", at(&sphere, 0.1 - 3.6e-4, &[(0, 1.0)]), sphere.clone()),
        ("sphere at impact", at(&sphere, 0.1 - 1e-3, &[(2, -2.0)]), sphere.clone()),
        ("box sticking on an incline", settled, incline),
        ("spinning, rolling sphere", at(&spinning, 0.1 - 3.6e-4, &[(0, 0.5), (4, 5.0), (5, 8.0)]), spinning),
        ("limit, friction loss, equality, sliding box", pressed, joints),
        ("connects and welds", tied, ties),
    ]
    .into_iter()
    .map(|(name, state, model)| (name, model, state))
    .collect()
}

#[test]
fn step_vjps_match_forward_tangents_in_every_contact_regime() {
    let mut failures = Vec::new();
    for (name, model, state) in regimes() {
        for (label, config) in
            // gpu_equivalent: the sweeps' fixed-point rule, its adjoint against its tangent.
            [
                ("simulation", SolverConfig::simulation()),
                ("mujoco_compat", SolverConfig::mujoco_compat()),
                ("gpu_equivalent", SolverConfig::gpu_equivalent()),
            ]
        {
            // The Gauss-Seidel pass solves condim 1 and 3 only.
            if label == "gpu_equivalent" && name.starts_with("spinning") {
                continue;
            }
            let name = format!("{name} ({label})");
            let worst = check(&name, &model, &state, &[], config);
            if worst > TOL {
                failures.push(format!("{name}: {worst:.2e}"));
            }
        }
    }
    assert!(failures.is_empty(), "VJPs off by more than {TOL:e}: {failures:#?}");
}

#[test]
fn step_vjps_match_forward_tangents_on_every_gymnasium_model() {
    let mut failures = Vec::new();
    for case in gymnasium_cases(&mut Rng::new(5), 40) {
        let label = format!("{} ({})", case.name, if case.constrained { "constraints" } else { "smooth" });
        let worst = check(&label, &case.model, &case.state, &case.ctrl, SolverConfig::default());
        if worst > TOL {
            failures.push(format!("{label}: {worst:.2e}"));
        }
    }
    assert!(failures.is_empty(), "VJPs off by more than {TOL:e}: {failures:#?}");
}

/// One `ReverseJacobians` evaluated at many states of a model (contact, limits, parameters)
/// gives the forward-mode Jacobians at each, and a request inside a recording is an error.
#[test]
fn reverse_jacobians_reused_across_states_match_forward_mode() {
    let case = gymnasium_cases(&mut Rng::new(9), 30)
        .into_iter()
        .find(|c| c.name == "hopper" && c.constrained)
        .expect("hopper");
    let (model, mut state, ctrl) = (case.model, case.state, case.ctrl);
    let params = sampled_parameters(&model);
    let mut rows = phyz::dual::ReverseJacobians::new(&model, &params).expect("rows");
    let mut contact = ContactState::default();
    for step in 0..5 {
        let got = rows.at(&state, &ctrl, &mut contact.clone()).expect("reverse");
        let want = step_jacobians_lanes::<8>(&model, &state, &ctrl, &params, &mut contact.clone()).expect("forward");
        let largest = want.a.amax().max(want.b.amax()).max(want.p.amax());
        let error = [(&got.a, &want.a), (&got.b, &want.b), (&got.p, &want.p)]
            .iter()
            .map(|(g, w)| (*g - *w).amax())
            .fold(0.0, f64::max)
            / largest;
        assert!(error <= TOL, "step {step}: {error:e}");
        state = step_with(&model, &state, &ctrl, &mut contact).expect("step").0;
    }
    let _outer = phyz::Recording::start();
    let inside = vjp(&model, &state, &ctrl, &[], &random_tangent(&model, &mut Rng::new(1)), &mut contact);
    assert!(matches!(inside, Err(phyz::dual::DualError::AlreadyRecording)), "{:?}", inside.err());
}

/// Steps recorded one after another in one workspace, each recording beginning with the same
/// prefix of parameters: what the model fixes (link constants, inverse weights) was computed
/// with its parameters, in the prefix, so every step's recording reads valid nodes; the
/// gradient equals a fresh VJP's.
#[test]
fn recordings_on_one_prefix_read_the_models_constants() {
    use phyz::sim::{Workspace, step_in};
    use phyz::{Recording, Var};
    let case = gymnasium_cases(&mut Rng::new(4), 20)
        .into_iter()
        .find(|c| c.name == "hopper" && c.constrained)
        .expect("hopper");
    let (model, state, ctrl) = (&case.model, &case.state, &case.ctrl);
    let mass = phyz::dual::Parameter::BodyMass("torso".into()).index(model).expect("torso");
    let prefix = Recording::start();
    let mut values: Vec<Var> = model.parameters().into_iter().map(Var::constant).collect();
    values[mass] = prefix.input(values[mass].value());
    let taped = model.with_parameters(&values).expect("same structure");
    let prefix = prefix.freeze();
    let mut workspace = Workspace::<Var>::default();
    let bar = random_tangent(model, &mut Rng::new(2));
    for step in 0..3 {
        let tape = Recording::try_start_with(&prefix).expect("not recording");
        let qvel: Vec<Var> = state.qvel.iter().map(|&v| tape.input(v)).collect();
        let start = State { qvel: nalgebra::DVector::from_vec(qvel), ..state.cast() };
        let controls: Vec<Var> = ctrl.iter().map(|&u| Var::constant(u)).collect();
        step_in(&taped, &start, &controls, &mut ContactState::default(), &mut workspace).expect("step");
        tape.backward(workspace.next.qvel.iter().zip(bar.qvel.iter()).map(|(&v, &b)| (v, b)));
        let got = tape.adjoint(values[mass]);
        drop(tape);
        let mut cotangent = bar.clone();
        cotangent.qpos.fill(0.0);
        cotangent.act.fill(0.0);
        let want = vjp(model, state, ctrl, &[mass], &cotangent, &mut ContactState::default()).expect("VJP").params[0];
        assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "step {step}: {got} vs {want}");
    }
}

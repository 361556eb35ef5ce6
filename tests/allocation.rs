//! A steady-state `f64` step allocates nothing: once a simulator's workspace has seen a step,
//! repeating it refills storage instead of allocating. Counted by a global allocator that tallies
//! the allocations of the thread that makes them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

use phyz::contact::SolverConfig;
use phyz::mjcf;
use phyz::model::Integrator;
use phyz::sim::{ContactState, Simulator};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Steps `steps` times from where `sim` stands, then again from the same state and cache: the
/// second pass repeats steps the workspace has seen, and is counted.
fn repeated_allocations(sim: &mut Simulator<f64>, steps: usize) -> usize {
    let (state, contact) = (sim.state.clone(), sim.contact.clone());
    let ctrl: Vec<Vec<f64>> =
        (0..steps).map(|t| (0..sim.model.nu()).map(|i| ((t * 7 + i * 3) as f64 * 0.37).sin()).collect()).collect();
    let which = format!("{:?}, {} dofs", sim.model.integrator, sim.model.nv());
    for u in &ctrl {
        sim.step(u).unwrap_or_else(|e| panic!("{which}: {e}"));
    }
    sim.state = state;
    sim.contact.clone_from(&contact);
    let before = allocations();
    for u in &ctrl {
        sim.step(u).unwrap_or_else(|e| panic!("{which}: {e}"));
    }
    allocations() - before
}

/// The models the counts are taken on: the walkers and a box stack (which touch their floors),
/// the spatial tendons (whose rope is taut, a friction loss and an equality on) and ball-joint
/// limits, under every integrator, and with `smooth_only` the models with activations and site transmissions too
/// (which have no constraints), gravity compensation and tendon force ranges, under their own.
fn models(smooth_only: bool) -> Vec<phyz::Model<f64>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let gymnasium = |name: &str| root.join("../shared/models/gymnasium").join(format!("{name}.xml"));
    let paths = [
        gymnasium("hopper"),
        gymnasium("ant"),
        gymnasium("humanoid"),
        root.join("benches/models/box_stack.xml"),
        root.join("tests/models/spatial_tendons.xml"),
        // Ball-joint limits and actuators.
        root.join("tests/corpus/phyz/ball_limits.xml"),
    ];
    let mut models = Vec::new();
    for path in &paths {
        for integrator in [Integrator::Euler, Integrator::Rk4, Integrator::Implicit, Integrator::ImplicitFast] {
            let mut model = mjcf::load(path).expect("loads");
            model.integrator = integrator;
            models.push(model);
        }
    }
    if smooth_only {
        // (The fluid models: drag whose derivative the implicit integrators take.)
        let smooth = ["activations", "activations_rk4", "site_transmissions", "gravcomp", "tendon_force_range"];
        for name in smooth.into_iter().chain(["fluid_implicit", "fluid_implicitfast"]) {
            models.push(mjcf::load(root.join(format!("tests/models/{name}.xml"))).expect("loads"));
        }
    }
    models
}

/// With constraints off (the smooth dynamics: kinematics, passive and actuator forces,
/// articulated-body algorithm, integrator), from the first step on.
#[test]
fn a_steady_state_smooth_step_allocates_nothing() {
    let mut failures = Vec::new();
    for mut model in models(true) {
        model.enabled.constraint = false;
        let integrator = model.integrator;
        let mut sim = Simulator::new(model);
        let count = repeated_allocations(&mut sim, 20);
        if count > 0 {
            failures.push(format!("{integrator:?}, {} dofs: {count} allocations in 20 steps", sim.model.nv()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// With contact, limits, friction losses and equalities, under each Newton preset: a step that
/// repeats one the workspace has seen (the same constraints) allocates nothing.
#[test]
fn a_steady_state_constrained_step_allocates_nothing() {
    let presets = [("simulation", SolverConfig::simulation()), ("mujoco_compat", SolverConfig::mujoco_compat())];
    let mut failures = Vec::new();
    for model in models(false) {
        for (name, config) in presets {
            let integrator = model.integrator;
            let mut sim = Simulator::new(model.clone());
            sim.contact = ContactState::new(config);
            // Into contact first: 100 steps, or up to 400 until a constraint acts (the hanging
            // ball-joint arm reaches its limit after about 0.3 s).
            for t in 0..400 {
                sim.step(&vec![0.0; sim.model.nu()]).expect("step");
                if t >= 99 && !sim.info.impulses.is_empty() {
                    break;
                }
            }
            assert!(!sim.info.impulses.is_empty(), "{integrator:?} {name}: constrained");
            let count = repeated_allocations(&mut sim, 20);
            if count > 0 {
                let nv = sim.model.nv();
                failures.push(format!("{integrator:?} {name}, {nv} dofs: {count} allocations in 20 steps"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

//! The broad phase (sweep and prune over bounding boxes) finds exactly the touching pairs an all-pairs
//! test finds.

mod common;

use std::collections::BTreeSet;

use common::Rng;
use phyz::collision::detect;
use phyz::dynamics::forward_kinematics;
use phyz::mjcf;

#[test]
fn the_bvh_finds_every_touching_pair() {
    let mut rng = Rng::new(3);
    let n = 80;
    let spheres: Vec<_> = (0..n).map(|_| (rng.vector(0.6), rng.uniform(0.03, 0.12))).collect();
    let bodies: String = spheres
        .iter()
        .map(|(c, r)| {
            format!("<body pos='{} {} {}'><freejoint/><geom type='sphere' size='{r}'/></body>", c.x, c.y, c.z)
        })
        .collect();
    let model =
        mjcf::parse(&format!("<mujoco><worldbody>{bodies}</worldbody></mujoco>"), "spheres.xml").expect("valid");
    let state = model.default_state();
    let kin = forward_kinematics(&model, &state.qpos);
    let poses: Vec<_> = (0..model.bodies().len()).map(|b| kin.body_pose(&model, b)).collect();
    let found: BTreeSet<[usize; 2]> = detect(&model, &poses).expect("spheres").iter().map(|c| c.geoms).collect();
    let mut expected = BTreeSet::new();
    for i in 0..n {
        for j in i + 1..n {
            let ((ci, ri), (cj, rj)) = (spheres[i], spheres[j]);
            if (ci - cj).norm() < ri + rj {
                expected.insert([i, j]);
            }
        }
    }
    eprintln!("{} touching pairs among {n} spheres", expected.len());
    assert!(expected.len() > 20, "the scene should be crowded enough to test anything");
    assert_eq!(found, expected);
}

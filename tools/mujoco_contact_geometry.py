#!/usr/bin/env python3
"""MuJoCo's contacts (count, distance, point, normal) and one constrained step at each keyframe
of a model, as reference data for phyz's narrow phase.

For each named model (default: tests/models/ellipsoid_pairs.xml), at each keyframe (its qpos
and qvel; time 0), writes to tests/reference/<model>/:

  contacts.csv            key,geom1,geom2,dist,pos_x,pos_y,pos_z,normal_x,normal_y,normal_z: every
                          contact of mj_forward (geoms by name, the normal the first row of
                          d.contact.frame, from geom1 to geom2)
  constrained_out.csv     the state one mj_step later (tools/mujoco_reference.py's state row),
                          MuJoCo's Newton solver run to convergence (tolerance 1e-15, 1000
                          iterations: mujoco_constraint_reference.converged_solver)
  contacts_tight.csv      the same with the convex narrow phase's tolerance tightened
  constrained_out_tight.csv  (opt.ccd_tolerance TIGHT, opt.ccd_iterations 1000): MuJoCo's EPA
                          then stops near the exact penetration instead of within 1e-6 of it

The keyframes' states themselves are tools/mujoco_reference.py's keys.csv. All floats are
written with repr(); nothing is random.

Usage:  python3 tools/mujoco_contact_geometry.py [MODEL.xml ...]
"""

import argparse
import os
import sys

import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mujoco_constraint_reference import converged_solver  # noqa: E402
from mujoco_reference import REPO, check_stable, route_warnings, state_header, state_row, write_csv  # noqa: E402

TIGHT = 1e-14
HEADER = ["key", "geom1", "geom2", "dist", "pos_x", "pos_y", "pos_z", "normal_x", "normal_y", "normal_z"]


def contacts_and_steps(m):
    """Per keyframe: the contact rows at the keyframe, and the state one step later."""
    d = mujoco.MjData(m)
    contacts, steps = [], []
    for k in range(m.nkey):
        mujoco.mj_resetDataKeyframe(m, d, k)
        d.time = 0.0
        mujoco.mj_forward(m, d)
        for c in d.contact[:d.ncon]:
            names = [m.geom(g).name for g in c.geom]
            contacts.append([m.key(k).name] + names + [c.dist] + list(c.pos) + list(c.frame[:3]))
        mujoco.mj_step(m, d)
        check_stable(m, d)
        steps.append(state_row(d))
    return contacts, steps


def generate(path):
    name = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(REPO, "tests", "reference", name)
    os.makedirs(out, exist_ok=True)
    for suffix, tight in [("", False), ("_tight", True)]:
        m = converged_solver(mujoco.MjModel.from_xml_path(path))
        if tight:
            m.opt.ccd_tolerance = TIGHT
            m.opt.ccd_iterations = 1000
        contacts, steps = contacts_and_steps(m)
        write_csv(os.path.join(out, f"contacts{suffix}.csv"), HEADER, contacts)
        write_csv(os.path.join(out, f"constrained_out{suffix}.csv"), state_header(m), steps)
        print(f"{name}{suffix}: {m.nkey} keyframes, {len(contacts)} contacts")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=[os.path.join(REPO, "tests", "models", "ellipsoid_pairs.xml")])
    args = ap.parse_args()
    route_warnings()
    print(f"MuJoCo {mujoco.__version__}")
    for path in args.models:
        generate(path)


if __name__ == "__main__":
    main()

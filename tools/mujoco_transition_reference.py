#!/usr/bin/env python3
"""MuJoCo's finite-difference step Jacobians (mjd_transitionFD, centred) as reference data, and
the step-Jacobian benchmark against phyz.

mjd_transitionFD does not support RK4, so models that ask for it are stepped with Euler here,
and the phyz side does the same (tests/mujoco_transition.rs, `phyz jacobian --euler`).

Reference data (default): for every gymnasium model, and every other model of
tools/mujoco_reference.py with activations, mocap bodies, sensors or an implicit integrator, with
constraints disabled (the smooth dynamics, as tools/mujoco_reference.py), at the first state
(activations and mocap poses included) and control of that model's
tests/reference/<name>/onestep_in.csv and onestep_ctrl.csv, writes

  tests/reference/<name>/transition_A.csv   n = 2nv + na rows of n numbers (state (q, v, act))
  tests/reference/<name>/transition_B.csv   n rows of nu numbers
  tests/reference/<name>/transition_C.csv   models with sensors: nsensordata rows of n numbers
  tests/reference/<name>/transition_D.csv   nsensordata rows of nu numbers

from mjd_transitionFD(eps=1e-6, centred). tests/mujoco_transition.rs compares phyz's exact
Jacobians with them.

Benchmark (--bench, needs `cargo build --release` first): for each named model, the time of one
mjd_transitionFD (centred) against one `phyz jacobian` evaluation measured inside phyz (the
command's own timing line), and the agreement of the two. With --constraints, contacts and limits
are on in both, MuJoCo's cone elliptic as phyz's default preset's. With --settle N (which needs
--constraints) the state is instead the one reached from the model's reference pose at rest
after N steps (RK4 models in Euler) under seeded random controls (0.1 times a standard normal,
seed 1), so that feet and bodies touch the ground: the benchmark with contact.

Usage:  python3 tools/mujoco_transition_reference.py [--gym-dir DIR] [MODEL ...]  (only these)
        python3 tools/mujoco_transition_reference.py --bench [--constraints] [--settle N] [--reps N] [--mode M]
            hopper walker2d ant humanoid
"""

import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import mujoco
import numpy as np

from mujoco_reference import DEFAULT_GYM_DIR, REPO, fmt, load, named_models, route_warnings, set_state, split_state

EPS = 1e-6


def first_row(path, header):
    with open(path) as f:
        rows = [r for r in csv.reader(f)]
    rows = rows[1:] if header else rows
    return [float(x) for x in rows[0] if x.strip()] if rows else []


def euler(m):
    """The model stepped with semi-implicit Euler (mjd_transitionFD refuses RK4)."""
    if m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4:
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    return m


def transition(m, d):
    """mjd_transitionFD's A and B (centred): the state (q, v, act), 2nv + na entries."""
    return transition_all(m, d)[:2]


def transition_all(m, d):
    """mjd_transitionFD's A, B, C and D (centred): C and D are the sensors' (nsensordata
    rows)."""
    n, nu, ns = 2 * m.nv + m.na, m.nu, m.nsensordata
    a, b = np.zeros((n, n)), np.zeros((n, nu))
    c, dd = np.zeros((ns, n)), np.zeros((ns, nu))
    mujoco.mjd_transitionFD(m, d, EPS, True, a, b, c if ns else None, dd if ns else None)
    return a, b, c, dd


def state_of(name, m, d):
    """The first state and control of the model's one-step data (activations and mocap poses
    included)."""
    ref = os.path.join(REPO, "tests", "reference", name)
    row = first_row(os.path.join(ref, "onestep_in.csv"), True)
    qpos, qvel, extras = split_state(m, row[1:])
    ctrl = first_row(os.path.join(ref, "onestep_ctrl.csv"), False)[: m.nu] if m.nu else []
    set_state(m, d, qpos, qvel, ctrl, extras)
    d.time = row[0]


def write(path, matrix):
    with open(path, "w") as f:
        for row in matrix:
            f.write(",".join(fmt(x) for x in row) + "\n")


def reference(gym_dir, only):
    gym = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(gym_dir, "*.xml"))}
    for name, path in named_models(gym_dir):
        # The gymnasium set, and the other models with activations, mocap bodies or an implicit
        # integrator (the rest add no kind of state or step); or the models named.
        if only and name not in only:
            continue
        m = euler(load(path))
        special = m.na or m.nmocap or m.nsensordata or m.opt.integrator in (
            mujoco.mjtIntegrator.mjINT_IMPLICIT, mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
        if name not in gym and not special and not only:
            continue
        d = mujoco.MjData(m)
        state_of(name, m, d)
        a, b, c, dd = transition_all(m, d)
        out = os.path.join(REPO, "tests", "reference", name)
        write(os.path.join(out, "transition_A.csv"), a)
        write(os.path.join(out, "transition_B.csv"), b)
        if m.nsensordata:
            write(os.path.join(out, "transition_C.csv"), c)
            write(os.path.join(out, "transition_D.csv"), dd)
        print(f"{name}: A {a.shape}, B {b.shape}")


def settle(m, d, steps):
    """The state reached from the reference pose at rest after `steps` steps under seeded random
    controls."""
    mujoco.mj_resetData(m, d)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        d.ctrl[:] = 0.1 * rng.standard_normal(m.nu)
        mujoco.mj_step(m, d)


def bench(gym_dir, names, reps, constraints, mode, settled):
    phyz = os.path.join(REPO, "target", "release", "phyz")
    print(f"MuJoCo {mujoco.__version__} mjd_transitionFD (centred, eps {EPS}) vs phyz exact step Jacobians; "
          f"constraints {'on' if constraints else 'off'}, phyz's {mode} route, median of {reps}")
    print()
    print("| model | nv | nu | contacts and limits | MuJoCo FD µs | phyz exact µs | ratio phyz/MuJoCo | phyz steps | max abs difference |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        path = name if name.endswith(".xml") else os.path.join(gym_dir, name + ".xml")
        name = os.path.splitext(os.path.basename(path))[0]
        m = euler(mujoco.MjModel.from_xml_path(path) if constraints else load(path))
        if constraints:
            m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        d = mujoco.MjData(m)
        if settled:
            settle(m, d, settled)
        else:
            state_of(name, m, d)
        mujoco.mj_forward(m, d)
        active = d.nefc and (d.ncon + int(np.sum(d.efc_type == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT)))
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            a, b = transition(m, d)
            times.append(time.perf_counter() - start)
        mj_us = 1e6 * float(np.median(times))
        with tempfile.TemporaryDirectory() as tmp:
            qpos, qvel, ctrl, out = (os.path.join(tmp, f) for f in ("q.csv", "v.csv", "u.csv", "j.json"))
            for f, values in ((qpos, d.qpos), (qvel, d.qvel), (ctrl, d.ctrl)):
                with open(f, "w") as fh:
                    fh.write(",".join(fmt(x) for x in values) + "\n")
            args = [phyz, "jacobian", path, "--qpos", qpos, "--qvel", qvel, "--out", out, "--euler", "--reps", str(reps),
                    "--mode", mode]
            if not constraints:
                args.append("--no-constraints")
            if m.nu:
                args += ["--ctrl", ctrl]
            text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
            us = float(text.split("median ")[1].split(" µs")[0])
            steps = float(text.split("µs, ")[-1].split(" steps")[0])
            jac = json.load(open(out))
        diff = max(np.abs(np.array(jac["A"]) - a).max(), np.abs(np.array(jac["B"]) - b).max() if m.nu else 0.0)
        print(f"| {name} | {m.nv} | {m.nu} | {active} | {mj_us:.1f} | {us:.1f} | {us / mj_us:.2f} | {steps:.1f} | {diff:.1e} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gym-dir", default=DEFAULT_GYM_DIR)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--constraints", action="store_true", help="benchmark with contacts and limits on")
    parser.add_argument("--settle", type=int, default=0,
                        help="benchmark at the state reached after this many steps from rest under random controls")
    parser.add_argument("--mode", default="reverse", choices=["reverse", "forward", "stages"],
                        help="how phyz computes its Jacobians (`phyz jacobian --mode`)")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    if args.settle and not (args.bench and args.constraints):
        parser.error("--settle needs --bench and --constraints (without constraints nothing rests on the ground)")
    route_warnings()
    if args.bench:
        models = args.models or ["hopper", "walker2d", "ant", "humanoid"]
        bench(args.gym_dir, models, args.reps, args.constraints, args.mode, args.settle)
    else:
        reference(args.gym_dir, set(args.models))


if __name__ == "__main__":
    sys.exit(main())

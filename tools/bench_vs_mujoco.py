#!/usr/bin/env python3
"""Time MuJoCo's mj_step against phyz on the same models, constraints off in both (or, with
--constraints, contacts and limits on in both, from the model's reference pose at rest).

For every gymnasium model and every tests/models/*.xml:
  * MuJoCo: constraints disabled (mjDSBL_CONSTRAINT), state = the initial row of
    tests/reference/<name>/traj.csv (or the same seeded random state when that file is
    missing), ctrl = 0; a warm-up run, then the median over --reps repetitions of
    --steps steps, each repetition restarting from that state. The stepping loop runs
    inside MuJoCo (mj_step with nstep), so Python overhead is not counted.
  * phyz: runs `target/release/phyz bench MODEL.xml --steps N --runs 1 --no-constraints` and
    reads the line `step_us <number>` (microseconds per step) from its output.
  * Interleaved: each of the --reps repetitions times MuJoCo once and then phyz once, so that a
    slow spell of the machine falls on both; medians over the repetitions are compared.

Prints a Markdown table (model | mujoco µs/step | phyz µs/step | ratio phyz/mujoco)
on stdout; progress and warnings go to stderr.

Also prints each engine's solver iterations per step, from an untimed run: MuJoCo's
`solver_niter` summed over islands, which an RK4 step leaves at its last stage's solve; phyz's
`StepInfo::iterations`, the most over all of a step's solves. With RK4 (every gymnasium model)
the two count different things; docs/results.md compares the engines per solve. Extra MJCF
files can be named by path (e.g. benches/models/box_stack.xml).

Usage:  python3 tools/bench_vs_mujoco.py [--constraints] [--steps 2000] [--reps 7] [--phyz PATH]
                                        [MODEL_NAME | PATH.xml ...]
"""

import argparse
import csv
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import mujoco
import numpy as np

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mujoco_reference as ref  # noqa: E402  (shared loading, seeds and model list)

STEP_US = re.compile(r"^\s*step_us\s+([-+0-9.eE]+|nan|inf)\s*$", re.MULTILINE)


def initial_state(m, name):
    if CONSTRAINTS:
        # With contact both start where `phyz bench` does: the reference pose, at rest.
        return m.qpos0.copy(), np.zeros(m.nv)
    path = os.path.join(ref.REPO, "tests", "reference", name, "traj.csv")
    if os.path.exists(path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        x = np.array([float(v) for v in rows[1]])
        if len(x) == 1 + m.nq + m.nv:
            return x[1:1 + m.nq], x[1 + m.nq:]
        print(f"warning: {path} does not match the model's sizes; using a fresh random state",
              file=sys.stderr)
    qpos, qvel, _ = ref.random_state(m, ref.rng_for(name, ref.SEED_TRAJ))
    return qpos, qvel


CONSTRAINTS = False  # set by --constraints: contacts and limits on in both (elliptic cone)


class MujocoBench:
    """One model in MuJoCo, ready to time a repetition at a time (so that its repetitions can be
    interleaved with phyz's)."""

    def __init__(self, path, name, steps, warmup):
        if CONSTRAINTS:
            self.m = mujoco.MjModel.from_xml_path(path)
            self.m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        else:
            self.m = ref.load(path)
        self.d = mujoco.MjData(self.m)
        self.qpos, self.qvel = initial_state(self.m, name)
        self.steps = steps
        self.unstable = False
        self.reset()
        mujoco.mj_step(self.m, self.d, nstep=warmup)

    def reset(self):
        mujoco.mj_resetData(self.m, self.d)
        self.d.qpos[:] = self.qpos
        self.d.qvel[:] = self.qvel
        self.d.ctrl[:] = 0.0

    def rep(self):
        """Microseconds per step of one timed repetition."""
        self.reset()
        t0 = time.perf_counter()
        mujoco.mj_step(self.m, self.d, nstep=self.steps)
        elapsed = time.perf_counter() - t0
        self.unstable |= self.d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0
        return elapsed / self.steps * 1e6

    def iterations(self):
        """Solver iterations per step, from an untimed run of single steps."""
        self.reset()
        total = 0
        for _ in range(self.steps):
            mujoco.mj_step(self.m, self.d)
            total += int(self.d.solver_niter[:max(self.d.nisland, 1)].sum())
        return total / self.steps


SOLVER_ITERATIONS = re.compile(r"^\s*solver_iterations_per_step\s+([-+0-9.eE]+|nan|inf)\s*$", re.MULTILINE)


def bench_phyz(binary, path, steps, timeout, runs):
    """Returns (µs/step or None, solver iterations per step or None, note)."""
    cmd = [binary, "bench", path, "--steps", str(steps), "--runs", str(runs)]
    cmd += [] if CONSTRAINTS else ["--no-constraints"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout} s"
    except OSError as e:
        return None, None, f"could not run: {e}"
    if p.returncode != 0:
        lines = [l.strip() for l in (p.stderr + "\n" + p.stdout).splitlines() if l.strip()]
        errs = [l for l in lines if "error" in l.lower()]
        msg = errs[0] if errs else (lines[-1] if lines else "")
        if "subcommand" in msg and "bench" in msg:
            msg += " (this phyz build has no `bench` subcommand yet)"
        return None, None, f"exit {p.returncode}: {msg}"
    hits = STEP_US.findall(p.stdout)
    if not hits:
        return None, None, "no `step_us <number>` line in its output"
    iterations = SOLVER_ITERATIONS.findall(p.stdout)
    return float(hits[-1]), (float(iterations[-1]) if iterations else None), ""


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*",
                    help="only these model names, or paths to other MJCF files (default: all)")
    ap.add_argument("--steps", type=int, default=2000, help="steps per timed run (default 2000)")
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions, median taken (default 7)")
    ap.add_argument("--warmup", type=int, default=500, help="MuJoCo warm-up steps (default 500)")
    ap.add_argument("--phyz", default=os.path.join(ref.REPO, "target", "release", "phyz"),
                    help="phyz binary (default target/release/phyz)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed per phyz run")
    ap.add_argument("--gym-dir", default=ref.DEFAULT_GYM_DIR, help="directory of gymnasium MJCF files")
    ap.add_argument("--constraints", action="store_true",
                    help="contacts and limits on in both (MuJoCo with the elliptic cone)")
    args = ap.parse_args()
    global CONSTRAINTS
    CONSTRAINTS = args.constraints
    ref.route_warnings()

    gym, local = ref.model_paths(args.gym_dir)
    paths = gym + local
    files = [m for m in args.models if m.endswith(".xml")]
    names = [m for m in args.models if not m.endswith(".xml")]
    if files and not names:
        paths = []
    if names or files:
        want = set(names)
        paths = [p for p in paths if os.path.splitext(os.path.basename(p))[0] in want]
        missing = want - {os.path.splitext(os.path.basename(p))[0] for p in paths}
        if missing:
            sys.exit(f"error: unknown model(s): {', '.join(sorted(missing))}")
        paths += [os.path.abspath(f) for f in files]

    have_phyz = os.path.isfile(args.phyz) and os.access(args.phyz, os.X_OK)
    if not have_phyz:
        print(f"NOTE: phyz binary not found at {args.phyz}: build it with `cargo build --release`. "
              "Only the MuJoCo column is measured.", file=sys.stderr)

    rows, notes = [], []
    for p in paths:
        name = os.path.splitext(os.path.basename(p))[0]
        print(f"{name} ...", file=sys.stderr, flush=True)
        # Interleaved: each repetition times MuJoCo, then one phyz run (after its own warm-up),
        # so that both see the same machine; the medians are compared.
        mj = MujocoBench(p, name, args.steps, args.warmup)
        mj_times, phyz_times, phyz_iters, note = [], [], None, "not built"
        phyz_ok = have_phyz
        for _ in range(args.reps):
            mj_times.append(mj.rep())
            if phyz_ok:
                us, phyz_iters, note = bench_phyz(args.phyz, p, args.steps, args.timeout, 1)
                phyz_ok = us is not None
                if phyz_ok:
                    phyz_times.append(us)
        mj_us, mj_iters = statistics.median(mj_times), mj.iterations()
        phyz_us = statistics.median(phyz_times) if phyz_times and not note else None
        if mj.unstable:
            notes.append(f"{name}: MuJoCo went unstable (auto-reset) during the timed run")
        if note and have_phyz:
            notes.append(f"{name}: phyz {note}")
        rows.append((name, mj_us, phyz_us, note, mj_iters, phyz_iters))

    setting = "contacts and limits on (MuJoCo: elliptic cone)" if CONSTRAINTS else "constraints disabled in both"
    print(f"MuJoCo {mujoco.__version__} vs phyz, {setting}, {args.steps} steps, "
          f"median of {args.reps}; CPU: {cpu_name()}")
    print("(solver iterations: MuJoCo's last solve of a step, phyz's most over a step's solves)")
    print()
    print("| model | mujoco µs/step | phyz µs/step | ratio phyz/mujoco | solver iterations/step mujoco / phyz |")
    print("|---|---:|---:|---:|---:|")
    for name, mj_us, phyz_us, note, mj_iters, phyz_iters in rows:
        if phyz_us is None:
            pz, ratio = ("n/a (not built)" if note == "not built" else "error"), "n/a"
        else:
            pz, ratio = f"{phyz_us:.3f}", f"{phyz_us / mj_us:.2f}"
        pi = "n/a" if phyz_iters is None else f"{phyz_iters:.1f}"
        print(f"| {name} | {mj_us:.3f} | {pz} | {ratio} | {mj_iters:.1f} / {pi} |")
    if not have_phyz:
        print()
        print(f"phyz binary not found at {args.phyz} (build it with `cargo build --release`).")
    if notes:
        print()
        for n in notes:
            print(f"- {n}")


if __name__ == "__main__":
    main()

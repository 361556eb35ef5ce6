#!/usr/bin/env python3
"""Gymnasium's v5 locomotion tasks as reference data for phyz-burn's `learn::task`.

For each task (Hopper-v5, HalfCheetah-v5, Ant-v5, on gymnasium's own models, the same files as
../shared/models/gymnasium/), one episode of seeded uniform random actions is run, and every
STRIDE-th decision is written as one row of

  tests/reference/gymnasium_v5/<task>.csv

with the columns: the state before the decision (qpos, qvel), the action, and what gymnasium's
`step` returned for it: the observation, the reward and whether the episode terminated; last,
body 1's x in MuJoCo's data before the decision (`xpos`, of the previous decision's last RK4
stage: ant's forward reward starts from it). (An episode that terminates starts again from a
fresh reset.) phyz-burn's tests/gymnasium_tasks.rs
takes the same decision from the same state and compares.

Usage:  python3 tools/gymnasium_v5_reference.py
(needs `pip install gymnasium mujoco imageio`: gymnasium's MuJoCo environments import imageio)
"""
import csv
import os

import gymnasium as gym
import numpy as np

TASKS = {"Hopper-v5": "hopper", "HalfCheetah-v5": "half_cheetah", "Ant-v5": "ant"}
DECISIONS, STRIDE, SEED = 240, 20, 3


def main():
    out = os.path.join(os.path.dirname(__file__), "..", "tests", "reference", "gymnasium_v5")
    os.makedirs(out, exist_ok=True)
    for task, name in TASKS.items():
        env = gym.make(task)
        env.reset(seed=SEED)
        data = env.unwrapped.data
        rng = np.random.default_rng(SEED)
        rows = []
        for t in range(DECISIONS):
            before = np.concatenate([data.qpos, data.qvel])
            body_x = data.xpos[1][0]
            action = rng.uniform(-1.0, 1.0, env.action_space.shape[0])
            obs, reward, terminated, truncated, _ = env.step(action)
            if t % STRIDE == STRIDE - 1 or terminated:
                rows.append([*before, *action, *obs, reward, float(terminated), body_x])
            if terminated or truncated:
                env.reset()
        with open(os.path.join(out, f"{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            m = env.unwrapped.model
            w.writerow([f"# {task}: nq {m.nq} nv {m.nv} nu {m.nu} observations {obs.size}"])
            for row in rows:
                w.writerow([repr(float(x)) for x in row])
        print(f"{name}: {len(rows)} rows")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# phyz-gpu on whatever GPU this machine has: the device step's stages (with constraints, under
# mujoco_compat) against the CPU engine; parity with the CPU engine under both presets (the
# stages under mujoco_compat, the traced route under gpu_equivalent), and env-steps/s forward and with
# backward through phyz-burn's Simulation (the stages' against the host route's) with the peak device memory
# (the memory pools' high-water marks), on the gymnasium
# ant and humanoid at batch 1,024 ... 32,768 (compare docs/gpu.md:
# MJX on an H200, 0.29 M ant, 0.10 M humanoid at 32,768).
# One script, finished within 8 minutes: every run gets what is left of the budget, and a run
# cut off says so. Usage: tools/gpu_check.sh [DEVICE] (wgpu, the default, or opengl).
set -u
cd "$(dirname "$0")/.."
device=${1:-wgpu}
budget=${PHYZ_GPU_CHECK_SECONDS:-470}
# The gymnasium models: PHYZ_MODELS, or shared/ beside or inside the checkout (a device
# machine gets only the working tree: copy the models into it, or carry them).
models=${PHYZ_MODELS:-../shared/models/gymnasium}
[ -f "$models/ant.xml" ] || models=shared/models/gymnasium
[ -f "$models/ant.xml" ] || { echo "no gymnasium models at $models (set PHYZ_MODELS)" >&2; exit 2; }
start=$SECONDS

left() { echo $((budget - (SECONDS - start))); }

run() {
    local seconds
    seconds=$(left)
    if [ "$seconds" -le 5 ]; then
        echo "skipped (budget spent): $*"
        return
    fi
    echo "== $* (up to ${seconds} s)"
    timeout -k 5 "$seconds" "$@" || { echo "ended with status $? (124: out of time)"; return 1; }
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
# Prebuilt binaries where they were carried (a release build of burn's wgpu stack takes
# minutes even on many cores), else a build; no runs without them.
bin=${CARGO_TARGET_DIR:-target}/release/examples
if [ ! -x "$bin/parity" ] || [ ! -x "$bin/device_throughput" ] || [ ! -x "$bin/stages" ]; then
    run cargo build --release -q -p phyz-gpu --example parity --example device_throughput --example stages || exit 1
fi
# The step's stages as kernels (phyz_gpu::stages, with constraints under mujoco_compat):
# env-steps/s against the CPU engine, and each stage's time a launch.
for batch in 32768 4096; do
    for model in ant humanoid; do
        run "$bin/stages" "$models/$model.xml" --batch "$batch" --steps 10 --device "$device"
    done
done
for model in ant humanoid; do
    for preset in mujoco_compat gpu_equivalent; do
        run "$bin/parity" "$models/$model.xml" --batch 1024 --steps 20 --device "$device" --preset "$preset"
    done
done
# Through phyz-burn's Simulation: the stages (mujoco_compat, the models' own RK4, forward and
# backward) and the traced route (gpu_equivalent). The largest batches first: batch 32,768 is
# the comparison with MJX.
for batch in 32768 16384 4096 1024; do
    for model in ant humanoid; do
        run "$bin/device_throughput" "$models/$model.xml" --batch "$batch" --warmup 3 --steps 10 --device "$device" \
            --preset mujoco_compat
    done
done
for batch in 32768 4096; do
    for model in ant humanoid; do
        run "$bin/device_throughput" "$models/$model.xml" --batch "$batch" --warmup 3 --steps 10 --device "$device"
    done
done
echo "total $((SECONDS - start)) s"

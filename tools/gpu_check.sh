#!/usr/bin/env bash
# phyz-gpu on whatever GPU this machine has: parity with the CPU gpu_equivalent engine, and
# env-steps/s forward and with backward, on the gymnasium ant and humanoid at batch
# 1,024 ... 32,768 (compare docs/gpu.md: MJX on an H200, 0.29 M ant, 0.10 M humanoid at 32,768).
# One script, finished within 8 minutes: every run gets what is left of the budget, and a run
# cut off says so. Usage: tools/gpu_check.sh [DEVICE] (wgpu, the default, or opengl).
set -u
cd "$(dirname "$0")/.."
device=${1:-wgpu}
budget=${PHYZ_GPU_CHECK_SECONDS:-470}
models=../shared/models/gymnasium
[ -d "$models" ] || models=shared/models/gymnasium
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
    timeout "$seconds" "$@" || echo "ended with status $? (124: out of time)"
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
run cargo build --release -q -p phyz-gpu --example parity --example throughput
bin=target/release/examples
for model in ant humanoid; do
    run "$bin/parity" "$models/$model.xml" --batch 1024 --steps 50 --device "$device"
done
for batch in 1024 4096 16384 32768; do
    for model in ant humanoid; do
        run "$bin/throughput" "$models/$model.xml" --batch "$batch" --steps 10 --device "$device"
    done
done
echo "total $((SECONDS - start)) s"
